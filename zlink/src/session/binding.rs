//! Sessions bound to Actors, on the session owner (seed 000 §3.1–3.2): each session keeps
//! the route its binds returned, one per Actor, and relays over it; the node's
//! [`SessionIndex`] finds the session an Actor's push (command 36) is for and writes it
//! only if every generation the push carries is the binding's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;

use super::packet::{encode_packet, StreamCodec, WireKind, WirePacket};
use super::peer::SessionPeer;
use crate::mesh::{InboundCall, InboundRoute};
use crate::object::binding::{
    BindingRoute, LocalSessions, PushRecord, ReplacedRecord, MAX_PUSH_RECORD_BYTES,
    MAX_REPLACED_RECORD_BYTES,
};
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
            tracing::debug!(actor = %push.actor, session = push.session.session, why, "push ignored");
            Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "the push of {} is not for a current binding: {why}",
                    push.actor
                ),
            )
        };
        let peer = self
            .get(push.session.session)
            .ok_or_else(|| stale("the session ended"))?;
        let Some(route) = peer.binding(&push.actor) else {
            return Err(stale("the session is not bound to it"));
        };
        let current = route.binding_generation == push.binding_generation
            && route.fence.object_generation == push.object_generation
            && route.fence.owner_generation == push.owner_generation
            && route.fence.lease_generation == push.lease_generation
            && route.owner.node_generation == push.node_generation
            && from.is_none_or(|rid| rid == route.owner.rid);
        if !current {
            return Err(stale("an older binding, owner or incarnation"));
        }
        let codec = match push.codec {
            0 => StreamCodec::Raw,
            1 => StreamCodec::Json,
            other => return Err(stale(&format!("codec {other}"))),
        };
        let packet = WirePacket::new(
            WireKind::Send,
            codec,
            &push.packet,
            Bytes::from(push.payload),
        );
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
        if peer.bindings.remove(&route) {
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
            _ => MAX_PUSH_RECORD_BYTES,
        };
        if message.payload.len() > limit {
            tracing::debug!(%from, command = ?message.command, "session record too large: dropped");
            return;
        }
        let decoded = match message.command {
            Command::BoundSessionReplaced => {
                cbor_decode_bounded::<ReplacedRecord>(&message.payload)
                    .map(|replaced| index.replace(replaced, Some(from)))
            }
            _ => cbor_decode_bounded::<PushRecord>(&message.payload).map(|push| {
                let _ = index.deliver(push, Some(from));
            }),
        };
        if let Err(e) = decoded {
            tracing::debug!(%from, error = %e, "malformed session record dropped");
        }
    }
}

/// A session's bindings: one route per Actor ID.
#[derive(Default)]
pub(crate) struct Bindings {
    routes: Mutex<HashMap<Arc<str>, BindingRoute>>,
}

impl Bindings {
    pub(crate) fn get(&self, actor: &str) -> Option<BindingRoute> {
        self.routes.lock_unpoisoned().get(actor).cloned()
    }

    pub(crate) fn set(&self, route: BindingRoute) {
        self.routes
            .lock_unpoisoned()
            .insert(route.key.id.clone(), route);
    }

    /// Removes exactly `route`'s binding; `false` when another one is there now.
    pub(crate) fn remove(&self, route: &BindingRoute) -> bool {
        let mut routes = self.routes.lock_unpoisoned();
        match routes.get(&route.key.id) {
            Some(held) if held.binding_generation == route.binding_generation => {
                routes.remove(&route.key.id);
                true
            }
            _ => false,
        }
    }

    pub(crate) fn all(&self) -> Vec<BindingRoute> {
        self.routes.lock_unpoisoned().values().cloned().collect()
    }
}
