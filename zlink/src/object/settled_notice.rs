//! Waiting for another node's creation (command 53): a caller that lost an Instance Spot's
//! activation race to another node asks that node to answer once its creation ended, and
//! reads the authority again then, instead of polling the store. The node answers at
//! once, `false`, when no creation of that generation runs there (it restarted, or the
//! creation ended already): then the caller polls as before.

use std::sync::Weak;
use std::time::Duration;

use tokio::time::Instant;

use super::authority_store::Versioned;
use super::core::ObjectCore;
use super::owner_link::{node_stopping, ObjectCommand};
use super::remote::{decode_generation, encode_generation};
use crate::address::{ObjectKey, SpotId};
use crate::mesh::{InboundCall, InboundRoute};
use crate::wire::{cbor_decode, cbor_encode};
use crate::{Error, ErrorKind};

/// The longest one wait lasts on the creating node (the caller asks again after it).
const LONGEST_WAIT: Duration = Duration::from_secs(2);

/// On the caller's node: waits, until `until` at most, for the creation `current` names on
/// its owner to end. `true` when it ended (read the authority again now); `false` when
/// the owner ran no such creation or could not be asked (poll).
pub(super) async fn creation_settled_on_owner(
    server: &ObjectCore,
    key: &ObjectKey,
    current: &Versioned,
    until: Instant,
) -> bool {
    let until = until.min(Instant::now() + LONGEST_WAIT);
    let out = server.env.owner_link();
    let Ok(node) = out.node() else { return false };
    let admit_by = until.min(Instant::now() + node.settings().send_timeout);
    let route = &current.record.route;
    let owner = || format!("the node creating {key}");
    let Ok(link) = out
        .reach(&route.rid, route.node_generation, admit_by, owner)
        .await
    else {
        return false;
    };
    let generation = encode_generation(current.record.fence.object_generation);
    let command = ObjectCommand::creation_settled(key, generation);
    match out.request(&link, &command, until, admit_by).await {
        Ok(answer) => cbor_decode::<bool>(&answer).unwrap_or(false),
        Err(e) => {
            tracing::debug!(object = %key, owner = %route.rid, error = %e, "no creation-settled answer; polling");
            false
        }
    }
}

/// The inbound route of command 53: answered once this node's creation of the Spot (at
/// the generation asked about) ended, or at once with `false` when none runs here.
pub(crate) struct SettledRoute(pub(crate) Weak<ObjectCore>);

impl InboundRoute for SettledRoute {
    fn deliver(&self, call: InboundCall) {
        let Some(server) = self.0.upgrade() else {
            return call.answer(Err(node_stopping()));
        };
        let asked = (|| {
            let message = call.message();
            let id = SpotId::new(message.head.target.as_str())
                .map_err(|e| Error::new(ErrorKind::ProtocolError, e.to_string()))?;
            Ok::<_, Error>((ObjectKey::from(&id), decode_generation(&message.payload)?))
        })();
        let (key, generation) = match asked {
            Ok(asked) => asked,
            Err(e) => return call.answer(Err(e)),
        };
        if !server.registry.is_creating(&key, generation) {
            return call.answer(cbor_encode(&false));
        }
        let until = call
            .deadline()
            .unwrap_or(Instant::now() + LONGEST_WAIT)
            .min(Instant::now() + LONGEST_WAIT);
        call.run(move |_message| {
            Box::pin(async move {
                server.registry.creation_settled(&key, until).await;
                cbor_encode(&true)
            })
        });
    }
}
