//! The records of commands 38 (bind, and its reply) and 36 (push), in CBOR.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::object::actor_binding::SessionKey;
use crate::wire::{PushTail, RouteFence};

/// A bind, session owner to Actor owner (command 38).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct BindRecord {
    /// The incarnation the session's ActorRef names.
    pub(crate) actor_generation: u64,
    /// The owner's lifecycle generation the session owner sees (0: unknown).
    pub(crate) node_generation: u64,
    pub(crate) session: SessionKey,
    /// Set instead for the session's disconnect: the binding generation it ends.
    #[serde(default)]
    pub(crate) disconnect: Option<u64>,
}

/// The bind's reply: the binding and the owner fence relays carry.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct BindReply {
    pub(crate) binding_generation: u64,
    pub(crate) object_generation: u64,
    pub(crate) owner_generation: u64,
    pub(crate) lease_generation: u64,
    pub(crate) mesh_name: String,
    pub(crate) rid: String,
    pub(crate) node_generation: u64,
}

/// An Actor's push to its session (command 36), as the session owner checks it against
/// the binding it stored: the Actor, the fence it runs under, the session and binding its
/// push tail names (`wire::PushTail`), the packet and its payload, which is never copied
/// on the way.
#[derive(Debug, Clone)]
pub(crate) struct PushRecord {
    pub(crate) actor: String,
    pub(crate) fence: RouteFence,
    pub(crate) tail: PushTail,
    pub(crate) packet: String,
    pub(crate) payload: Bytes,
}

/// The binding an Actor's new bind retired, or that ended because the Actor's node
/// stopped and released it, to its session's owner (command 51).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ReplacedRecord {
    pub(crate) session: SessionKey,
    pub(crate) actor: String,
    pub(crate) object_generation: u64,
    pub(crate) binding_generation: u64,
    /// The Actor's node stopped: the binding ended with it (the session closes), rather
    /// than moved to another session.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) owner_stopped: bool,
}

/// A bound Actor's session ended, to the node the Actor's Spot runs on when that is not
/// the Actor's (command 52): the Actor, as the Spot's `on_disconnect_actor` names it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct MemberDisconnectedRecord {
    pub(crate) actor: String,
    pub(crate) object_generation: u64,
    pub(crate) mesh_name: String,
    pub(crate) rid: String,
}

/// A move's seal or route change of one binding (commands 42 and 44).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RelocationRecord {
    pub(crate) relocation_id: String,
    pub(crate) session: SessionKey,
    pub(crate) actor: String,
    pub(crate) object_generation: u64,
    pub(crate) binding_generation: u64,
    /// 44 only: the route on the target (commit); `None` on a seal or an abort.
    pub(crate) target: Option<TargetRoute>,
}

/// Where a moved Actor runs now, as a binding route names it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct TargetRoute {
    pub(crate) mesh_name: String,
    pub(crate) rid: String,
    pub(crate) node_generation: u64,
    pub(crate) owner_generation: u64,
    pub(crate) lease_generation: u64,
}

/// What a sealed Actor's binding carries to its target.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CarriedBinding {
    pub(crate) generation: u64,
    pub(crate) session: SessionKey,
    pub(crate) issued: u64,
}

/// Largest 42/44 record decoded.
pub(crate) const MAX_RELOCATION_RECORD_BYTES: usize = 2048;

/// Largest 51 record decoded.
pub(crate) const MAX_REPLACED_RECORD_BYTES: usize = 1024;

/// Largest 38 record decoded.
pub(crate) const MAX_BIND_RECORD_BYTES: usize = 1024;
/// The largest member-disconnected record (command 52).
pub(crate) const MAX_MEMBER_DISCONNECTED_BYTES: usize = 1024;
/// Largest payload a push (36) carries: a STREAM message's.
pub(crate) const MAX_PUSH_PAYLOAD_BYTES: usize = 64 * 1024 + 1024;
