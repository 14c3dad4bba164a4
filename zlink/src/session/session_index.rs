//! Sessions bound to Actors, on the session owner (seed 000 §3.1–3.2): each session keeps
//! the route its binds returned, one per Actor, and relays over it; the node's
//! [`SessionIndex`] finds the session an Actor's push (command 36) is for and writes it
//! only if every generation the push carries is the binding's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;

use super::answer_order::OrderedReply;
use super::packet::{encode_packet, StreamCodec, WireKind, WirePacket};
use super::peer::{ReplyToken, SessionPeer};
use super::session_bindings::HeldRelay;
use super::CloseReason;
use crate::mesh::{InboundCall, InboundRoute};
use crate::object::binding::{
    BindingRoute, LocalSessions, PushRecord, RelocationRecord, ReplacedRecord,
    MAX_PUSH_PAYLOAD_BYTES, MAX_RELOCATION_RECORD_BYTES, MAX_REPLACED_RECORD_BYTES,
};
use crate::object::binding::{BoundRelay, Relayed};
use crate::object::ObjectServer;
use crate::sync::LockUnpoisoned;
use crate::wire::cbor_decode_bounded;
use crate::wire::Command;
use crate::{Error, ErrorKind, Result};

/// Every open session of the node, by number.
#[derive(Default)]
pub(crate) struct SessionIndex {
    sessions: Mutex<HashMap<u64, Weak<SessionPeer>>>,
}

impl SessionIndex {
    pub(crate) fn insert(&self, peer: &Arc<SessionPeer>) {
        self.sessions
            .lock_unpoisoned()
            .insert(peer.id.get(), Arc::downgrade(peer));
    }

    pub(crate) fn remove(&self, peer: &SessionPeer) {
        self.sessions.lock_unpoisoned().remove(&peer.id.get());
    }

    fn get(&self, session: u64) -> Option<Arc<SessionPeer>> {
        self.sessions.lock_unpoisoned().get(&session)?.upgrade()
    }

    /// Writes `push` to its session if its binding is current there; `from` is the node it
    /// came from (`None`: this node), which must be the binding's Actor owner.
    fn deliver(&self, push: PushRecord, from: Option<&str>) -> Result<()> {
        let stale = |why: &str| {
            tracing::debug!(actor = %push.actor, session = push.tail.session, why, "push ignored");
            Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "the push of {} is not for a current binding: {why}",
                    push.actor
                ),
            )
        };
        let peer = self
            .get(push.tail.session)
            .ok_or_else(|| stale("the session ended"))?;
        let Some(route) = peer.binding(&push.actor) else {
            return Err(stale("the session is not bound to it"));
        };
        let same_binding = route.binding_generation == push.tail.binding_generation
            && route.fence.object_generation == push.fence.object_generation;
        let from_owner = route.fence.owner_generation == push.fence.owner_generation
            && route.fence.lease_generation == push.fence.lease_generation
            && route.owner.node_generation == push.tail.actor_node_generation
            && from.is_none_or(|rid| rid == route.owner.rid);
        // While the Actor moves, its target dispatches (and pushes) before its route
        // change (44) has arrived here: the binding and incarnation are the proof then.
        let moving = peer.bindings.is_sealed(&push.actor);
        let current = same_binding && (from_owner || moving);
        if !current {
            return Err(stale("an older binding, owner or incarnation"));
        }
        let codec = match push.tail.codec {
            0 => StreamCodec::Raw,
            1 => StreamCodec::Json,
            other => return Err(stale(&format!("codec {other}"))),
        };
        let packet = WirePacket::new(WireKind::Send, codec, &push.packet, push.payload);
        let bytes = encode_packet(&packet).map_err(Error::InvalidArgument)?;
        if peer.outbound.try_push(bytes.clone()).is_ok() {
            return Ok(());
        }
        // A full queue: wait for room within the send timeout, as any send to a client
        // does (a client that does not read is closed), off the inbound path.
        let timeout = peer.send_timeout;
        tokio::spawn(async move {
            let _ = peer.outbound.push(bytes, timeout).await;
        });
        Ok(())
    }
}

impl SessionIndex {
    /// The binding `replaced` names moved to another session: if it is still this
    /// session's, from the binding's owner (`from`; `None`: this node), the session lets
    /// it go and closes (seed 000 §3.1, reference §6.4).
    fn replace(&self, replaced: ReplacedRecord, from: Option<&str>) {
        let Some(peer) = self.get(replaced.session.session) else {
            return;
        };
        let Some(route) = peer.binding(&replaced.actor) else {
            return;
        };
        let exact = route.binding_generation == replaced.binding_generation
            && route.fence.object_generation == replaced.object_generation
            && from.is_none_or(|rid| rid == route.owner.rid);
        if !exact {
            tracing::debug!(actor = %replaced.actor, session = %peer.id, "a stale binding-replaced notice ignored");
            return;
        }
        if !peer.bindings.remove(&route) {
            return;
        }
        if replaced.owner_stopped {
            peer.close(
                CloseReason::ServerDrain,
                &format!("the node of Actor {} stopped", replaced.actor),
            );
        } else {
            peer.binding_replaced(route.actor);
        }
    }
}

impl LocalSessions for SessionIndex {
    fn push(&self, push: PushRecord) -> Result<()> {
        self.deliver(push, None)
    }

    fn replaced(&self, replaced: ReplacedRecord) {
        self.replace(replaced, None);
    }

    fn seal(&self, seal: RelocationRecord) -> Result<()> {
        self.seal_binding(seal, None)
    }

    fn route(&self, route: RelocationRecord) {
        self.reroute(route, None);
    }
}

impl SessionIndex {
    /// 42: seals the binding for its Actor's move; the session holds what it relays
    /// until 44 says where it goes, or ends after the seal timeout.
    fn seal_binding(&self, seal: RelocationRecord, from: Option<&str>) -> Result<()> {
        let peer = self
            .get(seal.session.session)
            .ok_or_else(|| Error::new(ErrorKind::NotFound, "the bound session ended"))?;
        if !peer.bindings.seal(&seal, from) {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("the session holds no such binding of {}", seal.actor),
            ));
        }
        let (actor, relocation_id) = (seal.actor, seal.relocation_id);
        let waiting = Arc::downgrade(&peer);
        let timeout = peer.seal_timeout;
        tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            let Some(peer) = waiting.upgrade() else {
                return;
            };
            if peer.bindings.sealed_by(&actor, &relocation_id) {
                tracing::warn!(session = %peer.id, %actor, %relocation_id, "a moved Actor's route never arrived: the session ends");
                peer.close(
                    super::CloseReason::ServerDrain,
                    "a bound Actor moved and its new route never arrived",
                );
            }
        });
        Ok(())
    }

    /// 44: the sealed binding's route moves on (commit) or stays (abort); then what the
    /// session held goes out on it, in order, and the seal lifts.
    fn reroute(&self, record: RelocationRecord, from: Option<&str>) {
        let Some(peer) = self.get(record.session.session) else {
            return;
        };
        if !peer.bindings.reroute(&record, from) {
            tracing::debug!(session = %peer.id, actor = %record.actor, "a route change for no seal here ignored");
            return;
        }
        let Some(objects) = peer.objects.as_ref().and_then(Weak::upgrade) else {
            return;
        };
        tokio::spawn(async move {
            while let Some((route, relay)) = peer
                .bindings
                .next_held(&record.actor, &record.relocation_id)
            {
                if let Err(e) = submit(&objects, &route, relay).await {
                    tracing::debug!(session = %peer.id, actor = %record.actor, error = %e, "a held relay failed");
                }
            }
        });
    }
}

/// The inbound route of commands 36 (push) and 51 (binding replaced).
pub(crate) struct SessionRoute(pub(crate) Weak<SessionIndex>);

impl InboundRoute for SessionRoute {
    fn deliver(&self, call: InboundCall) {
        let Some(index) = self.0.upgrade() else {
            return;
        };
        let message = call.message();
        let from = call.from().rid();
        let limit = match message.command {
            Command::BoundSessionReplaced => MAX_REPLACED_RECORD_BYTES,
            Command::SessionRelocationSeal | Command::SessionRelocationRoute => {
                MAX_RELOCATION_RECORD_BYTES
            }
            _ => MAX_PUSH_PAYLOAD_BYTES,
        };
        if message.payload.len() > limit {
            tracing::debug!(%from, command = ?message.command, "session record too large: dropped");
            if call.is_request() {
                call.answer(Err(Error::new(
                    ErrorKind::ProtocolError,
                    "record too large",
                )));
            }
            return;
        }
        if message.command == Command::SessionRelocationSeal {
            let sealed = cbor_decode_bounded::<RelocationRecord>(&message.payload)
                .map_err(|e| Error::new(ErrorKind::ProtocolError, format!("seal record: {e}")))
                .and_then(|seal| index.seal_binding(seal, Some(from)));
            return call.answer(sealed.map(|()| Bytes::new()));
        }
        let decoded = match message.command {
            Command::BoundSessionReplaced => {
                cbor_decode_bounded::<ReplacedRecord>(&message.payload)
                    .map(|replaced| index.replace(replaced, Some(from)))
            }
            Command::SessionRelocationRoute => {
                cbor_decode_bounded::<RelocationRecord>(&message.payload)
                    .map(|route| index.reroute(route, Some(from)))
            }
            _ => push_of(message)
                .map(|push| {
                    let _ = index.deliver(push, Some(from));
                })
                .map_err(|e| e.to_string()),
        };
        if let Err(e) = decoded {
            tracing::debug!(%from, error = %e, "malformed session record dropped");
        }
    }
}

/// A push (command 36) as its call head and payload carry it: the Actor and its fence,
/// the push tail, the packet, and the payload frame as it came.
fn push_of(message: &crate::wire::CallMessage) -> Result<PushRecord> {
    let head = &message.head;
    let missing = |what: &str| {
        Error::new(
            ErrorKind::ProtocolError,
            format!("a push without its {what}"),
        )
    };
    Ok(PushRecord {
        actor: head.target.as_str().to_string(),
        fence: head.fence.ok_or_else(|| missing("route fence"))?,
        tail: head.push.ok_or_else(|| missing("push tail"))?,
        packet: head.packet.as_str().to_string(),
        payload: message.payload.clone(),
    })
}

/// Sends `relay` over `route`, in order: returns once the Actor's owner took it; a
/// request is answered to the client when its reply comes, apart from the caller.
pub(crate) async fn submit(
    objects: &ObjectServer,
    route: &BindingRoute,
    relay: HeldRelay<OrderedReply<ReplyToken>>,
) -> Result<()> {
    let HeldRelay {
        packet,
        kind,
        payload,
        metadata,
        session_seq,
        codec,
        token,
        timeout,
    } = relay;
    let relayed = objects
        .bound_call(
            route,
            BoundRelay {
                packet: &packet,
                kind,
                payload,
                metadata,
                session_seq,
                timeout,
            },
        )
        .await;
    let Some(token) = token else {
        return relayed.map(|_| ());
    };
    match relayed {
        Ok(Relayed::Done(reply)) => token.answer_in_turn(codec, Ok(reply)).await,
        Ok(Relayed::Submitted(submitted)) => {
            tokio::spawn(async move { token.answer(codec, submitted.reply().await).await });
        }
        Err(e) => token.answer_in_turn(codec, Err(e)).await,
    }
    Ok(())
}
