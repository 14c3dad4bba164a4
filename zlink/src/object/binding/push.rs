//! An Actor's push to the session bound to it (command 36): sent to the session owner
//! under every generation the Actor runs under now, in the binary push tail of the call
//! head with the payload as its own frame; the session owner writes it only if they are
//! the binding's.

use bytes::Bytes;
use tokio::time::Instant;

use super::record::PushRecord;
use super::Bindings;
use crate::address::ObjectKey;
use crate::object::owner_link::{route_fence, Awaiting, ObjectCommand};
use crate::wire::PushTail;
use crate::{Error, ErrorKind, Result};

/// Pushes `payload` (STREAM codec `codec`, packet `packet`) from the Actor `key`,
/// incarnation `generation`, to its bound session; done once the session owner's
/// link (or, on this node, the session's queue) took it.
pub(crate) async fn push_bound(
    bindings: &Bindings,
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
    let live = bindings
        .core
        .registry
        .get(key)
        .filter(|live| live.generation() == generation)
        .ok_or_else(not_bound)?;
    let binding = live.bindings().current().ok_or_else(not_bound)?;
    let fence = route_fence(&live.authority().record.fence);
    // The Actor's end of the route holds as long as this node owns the Actor under a
    // lease that still admits work (seed 000 §3.2).
    if !bindings
        .core
        .env
        .lease()
        .admits_at(Instant::now(), |owner, generation| {
            live.admits_under(&fence, owner, generation)
        })
    {
        return Err(Error::new(
            ErrorKind::Unavailable,
            format!("this node's owner lease no longer admits {key}'s push: nothing was sent"),
        ));
    }
    let here = bindings.core.env.route();
    let tail = PushTail {
        session: binding.session.session,
        session_node_generation: binding.session.node_generation,
        actor_node_generation: here.node_generation,
        binding_generation: binding.generation,
        codec,
    };
    if binding.session.rid == here.rid {
        let sessions = bindings
            .sessions()
            .ok_or_else(|| Error::new(ErrorKind::Unavailable, "this node runs no sessions"))?;
        return sessions.push(PushRecord {
            actor: key.id.to_string(),
            fence,
            tail,
            packet: packet.to_string(),
            payload,
        });
    }
    let out = bindings.core.env.owner_link();
    let admit_by = Instant::now() + out.node()?.settings().send_timeout;
    let command = ObjectCommand::push(key, packet, fence, tail, payload);
    let to = binding.session.owner();
    out.deliver(to, &command, Awaiting::Nothing, admit_by)
        .await
        .map(|_| ())
}
