//! An Actor's push to the session bound to it (command 36): sent to the session owner
//! under every generation the Actor runs under now; the session owner writes it only if
//! they are the binding's.

use bytes::Bytes;
use tokio::time::Instant;

use super::record::PushRecord;
use crate::address::ObjectKey;
use crate::object::owner_link::{route_fence, ObjectCommand};
use crate::object::server::ObjectServer;
use crate::wire::{cbor_encode, Command};
use crate::{Error, ErrorKind, Result};

impl ObjectServer {
    /// Pushes `payload` (STREAM codec `codec`, packet `packet`) from the Actor `key`,
    /// incarnation `generation`, to its bound session; done once the session owner's
    /// link (or, on this node, the session's queue) took it.
    pub(crate) async fn push_bound(
        &self,
        key: &ObjectKey,
        generation: u64,
        codec: u8,
        packet: &str,
        payload: Bytes,
    ) -> Result<()> {
        let not_bound = || {
            Error::new(
                ErrorKind::InvalidOperation,
                format!("{key} is bound to no session: nothing to push to"),
            )
        };
        let live = self
            .registry
            .get(key)
            .filter(|live| live.generation() == generation)
            .ok_or_else(not_bound)?;
        let binding = live.bindings().current().ok_or_else(not_bound)?;
        let fence = route_fence(&live.authority().record.fence);
        let here = self.env.route();
        let record = PushRecord {
            session: binding.session.clone(),
            actor: key.id.to_string(),
            object_generation: fence.object_generation,
            owner_generation: fence.owner_generation,
            lease_generation: fence.lease_generation,
            node_generation: here.node_generation,
            binding_generation: binding.generation,
            codec,
            packet: packet.to_string(),
            payload: payload.to_vec(),
        };
        if binding.session.rid == here.rid {
            let sessions = self
                .local_sessions()
                .ok_or_else(|| Error::new(ErrorKind::Unavailable, "this node runs no sessions"))?;
            return sessions.push(record);
        }
        let out = self.env.owner_link();
        let node = out.node()?;
        let admit_by = Instant::now() + node.settings().send_timeout;
        let link = out
            .peer(&binding.session.rid, admit_by)
            .await
            .map_err(|e| {
                Error::new(
                    ErrorKind::Unavailable,
                    format!(
                        "the session owner {} is not reachable: {e}",
                        binding.session.rid
                    ),
                )
            })?;
        if node
            .peers()
            .identity(&binding.session.rid)
            .is_some_and(|(_, g)| g != binding.session.node_generation)
        {
            return Err(Error::new(
                ErrorKind::Unavailable,
                "the session owner restarted: its sessions ended with it",
            ));
        }
        let command =
            ObjectCommand::control(Command::BoundSessionSend, &key.id, cbor_encode(&record)?);
        out.send(&link, &command, admit_by).await
    }
}
