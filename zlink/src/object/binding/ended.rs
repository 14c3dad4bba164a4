//! A node that stops cleanly ends its Actors' session bindings (reference §7.5): each
//! session owner hears, by command 51's stopped form, that the binding ended with the
//! Actor's node, and closes that session with a reason. (Sessions on the stopping node
//! itself closed already: they stop before the objects.)

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;

use super::record::ReplacedRecord;
use super::LocalSessions;
use crate::object::actor_binding::CurrentBinding;
use crate::object::owner_link::{Awaiting, ObjectCommand, OwnerLink};
use crate::wire::{cbor_encode, Command};
use crate::Result;

/// Notices one node sends at once.
const NOTICE_CONCURRENCY: usize = 32;

/// One bound Actor of a stopping node: its ID, incarnation and current binding.
pub(crate) struct EndedBinding {
    pub(crate) actor: String,
    pub(crate) object_generation: u64,
    pub(crate) binding: CurrentBinding,
}

/// Tells each binding's session owner that it ended, within `limit` in all; a session
/// owner that cannot be reached is logged and left (its relays fail `Unavailable`).
pub(crate) async fn tell_bindings_ended(
    out: &OwnerLink,
    here: &str,
    local: Option<&Arc<dyn LocalSessions>>,
    ended: Vec<EndedBinding>,
    limit: Duration,
) {
    let deadline = Instant::now() + limit;
    let notices = futures::stream::iter(ended.into_iter().map(|ended| {
        let record = ReplacedRecord {
            session: ended.binding.session,
            actor: ended.actor,
            object_generation: ended.object_generation,
            binding_generation: ended.binding.generation,
            owner_stopped: true,
        };
        async move {
            if record.session.rid == here {
                if let Some(sessions) = local {
                    sessions.replaced(record);
                }
                return;
            }
            if let Err(e) = tell(out, &record, deadline).await {
                tracing::debug!(actor = %record.actor, session_owner = %record.session.rid, error = %e, "a bound session was not told its Actor's node stopped");
            }
        }
    }))
    .buffer_unordered(NOTICE_CONCURRENCY)
    .collect::<Vec<()>>();
    if tokio::time::timeout_at(deadline, notices).await.is_err() {
        tracing::warn!(
            rid = here,
            "some bound sessions were not told in time that their Actor's node stopped"
        );
    }
}

async fn tell(out: &OwnerLink, record: &ReplacedRecord, deadline: Instant) -> Result<()> {
    let command = ObjectCommand::control(
        Command::BoundSessionReplaced,
        &record.actor,
        cbor_encode(record)?,
    );
    let to = record.session.owner();
    out.deliver(to, &command, Awaiting::Nothing, deadline)
        .await
        .map(|_| ())
}
