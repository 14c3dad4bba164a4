//! Follow notices (command 50): telling a sender that an object moved, and what a notice
//! received does to this node's route cache.

use tokio::time::Instant;

use super::FollowNotice;
use crate::address::ObjectKey;
use crate::address::{ActorId, SpotId};
use crate::mesh::InboundCall;
use crate::object::owner_link::{ObjectCommand, OwnerLink};
use crate::object::relocation_faults::RelocationFaults;
use crate::object::resolver::Resolver;
use crate::wire::Command;

/// Tells `sender` the object moved (command 50, one way). A lost notice is harmless: the
/// sender's cached route expires anyway.
pub(super) async fn send_notice(
    owner_link: &OwnerLink,
    sender: &str,
    notice: &FollowNotice,
) -> bool {
    let (Ok(payload), Ok(node)) = (notice.encode(), owner_link.node()) else {
        return false;
    };
    let by = Instant::now() + node.settings().send_timeout;
    let Ok(link) = owner_link.peer(sender, by).await else {
        return false;
    };
    let call = ObjectCommand::control(Command::MessageFollow, &notice.id, payload);
    owner_link.send(&link, &call, by).await.is_ok()
}

/// A notice drops this node's cached route only if it is exactly the notice's source route,
/// and only from the node that owned it: a peer cannot invalidate another's routes.
pub(crate) fn followed(resolver: &Resolver, faults: RelocationFaults, call: InboundCall) {
    if faults.drops_follow_notices() {
        return;
    }
    let notice = match FollowNotice::decode(&call.message().payload) {
        Ok(notice) => notice,
        Err(e) => {
            tracing::warn!(peer = %call.from().rid(), error = %e, "a malformed follow notice");
            return;
        }
    };
    if notice.source_route.rid.as_str() != &**call.from().rid() {
        tracing::warn!(peer = %call.from().rid(), "a follow notice for a route the peer does not own");
        return;
    }
    let key = match notice.kind {
        's' => SpotId::new(&notice.id).map(|id| ObjectKey::from(&id)).ok(),
        _ => ActorId::new(&notice.id).map(|id| ObjectKey::from(&id)).ok(),
    };
    if let Some(key) = key {
        let dropped = resolver.moved(&key, &notice.source_fence, &notice.source_route);
        tracing::debug!(object = %key, dropped, "follow notice");
    }
}
