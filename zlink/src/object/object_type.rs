//! What every registered object type has, whatever its kind: its stable type name, its
//! packets, its relocation policy, its queue bounds, its per-node limit and its factory.

use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock};

use super::actor::Actor;
use super::context::{ActorContext, SpotContext};
use super::lifecycle::Relocation;
use super::mailbox::{LaneLimits, APPLICATION_LANE, JOB_OVERHEAD_BYTES};
use super::membership::Execution;
use super::spot::Spot;
use crate::address::{ActorKind, Kind, SpotKind};
use crate::address::{ObjectKind, StableType};
use crate::call::PacketKind;
use crate::sync::LockUnpoisoned;
use crate::{Error, Result};

/// Makes a Spot from its context.
pub(crate) type SpotFactory = dyn Fn(&SpotContext) -> Box<dyn Spot> + Send + Sync;

/// Makes an Actor from its context.
pub(crate) type ActorFactory = dyn Fn(&ActorContext) -> Box<dyn Actor> + Send + Sync;

/// Makes one instance of a registered type.
#[derive(Clone)]
pub(crate) enum Factory {
    Spot(Arc<SpotFactory>),
    Actor(Arc<ActorFactory>),
    /// The framework's Entry Spot: never made by a creation.
    Entry,
}

impl Factory {
    /// The namespace the type's objects live in.
    pub(crate) fn kind(&self) -> ObjectKind {
        match self {
            Factory::Spot(_) | Factory::Entry => ObjectKind::Spot,
            Factory::Actor(_) => ObjectKind::Actor,
        }
    }
}

/// `name`, kept for the process's life: a type's packet names are its fixed vocabulary, so
/// each distinct name is kept once however many runtimes register the type. A turn then
/// carries a plain `&'static str`, where a shared `Arc<str>` would make every message to
/// any object of the type write one reference count that all workers share.
pub(crate) fn interned(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES.get_or_init(Default::default).lock_unpoisoned();
    if let Some(known) = names.get(name) {
        return known;
    }
    let kept: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(kept);
    kept
}

/// A registered type of Spot or Actor.
#[derive(Clone)]
pub(crate) struct TypeDef {
    pub(crate) stable_type: StableType,
    pub(crate) packets: Arc<[(String, PacketKind)]>,
    /// The packet names again, interned, for the handler turns that carry them.
    packet_names: Arc<[&'static str]>,
    pub(crate) relocation: Relocation,
    pub(crate) factory: Factory,
    pub(crate) queue: LaneLimits,
    /// The most objects of this type one node runs (0: no limit of its own).
    pub(crate) max_per_node: u32,
    /// A Spot type's member Actor type, when it takes Actors.
    pub(crate) members: Option<StableType>,
    /// How a Spot type runs its member Actors.
    pub(crate) execution: Execution,
    /// An Instance Spot type: its Spots are activated by their first message.
    pub(crate) instance: bool,
    /// A caller that finds an object of this type with a dead owner lease reclaims it
    /// (`on_owner_lost = reclaim`), instead of ending `Unavailable`.
    pub(crate) reclaim_on_owner_lost: bool,
    /// The Logical Multicast topics its Spots take, each with the handler it runs.
    pub(crate) subscriptions: Vec<super::subscription::Subscription>,
}

impl std::fmt::Debug for TypeDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypeDef")
            .field("kind", &self.factory.kind())
            .field("stable_type", &self.stable_type)
            .field("packets", &self.packets)
            .field("relocation", &self.relocation)
            .field("queue", &self.queue)
            .field("max_per_node", &self.max_per_node)
            .field("members", &self.members)
            .field("execution", &self.execution)
            .field("instance", &self.instance)
            .field("subscriptions", &self.subscriptions)
            .finish_non_exhaustive()
    }
}

impl TypeDef {
    /// Checks the name and the packet list (a name listed twice is an error).
    pub(crate) fn new(
        stable_type: &str,
        packets: Vec<(String, PacketKind)>,
        relocation: Relocation,
        factory: Factory,
    ) -> Result<Self> {
        let stable_type =
            StableType::new(stable_type).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        let mut seen = std::collections::HashSet::new();
        for (name, _) in &packets {
            if name.is_empty() || name.len() > 255 {
                return Err(Error::InvalidArgument(format!(
                    "packet name {name:?} must be 1..=255 bytes"
                )));
            }
            if name.starts_with("zlink.") {
                return Err(Error::InvalidArgument(format!(
                    "packet name {name:?}: names beginning with \"zlink.\" are the framework's"
                )));
            }
            if !seen.insert(name.as_str()) {
                return Err(Error::InvalidArgument(format!(
                    "type {stable_type} lists packet {name:?} twice"
                )));
            }
        }
        Ok(TypeDef {
            stable_type,
            packet_names: packets.iter().map(|(name, _)| interned(name)).collect(),
            packets: packets.into(),
            relocation,
            factory,
            queue: APPLICATION_LANE,
            max_per_node: 0,
            members: None,
            execution: Execution::SpotWide,
            instance: false,
            reclaim_on_owner_lost: false,
            subscriptions: Vec::new(),
        })
    }

    /// Spot or Actor.
    pub(crate) fn kind(&self) -> ObjectKind {
        self.factory.kind()
    }

    /// Bounds each object's message queue.
    pub(crate) fn set_queue(&mut self, messages: usize, bytes: usize) -> Result<()> {
        if messages == 0 || bytes <= JOB_OVERHEAD_BYTES {
            return Err(Error::InvalidArgument(format!(
                "a queue needs room for at least one message: {messages} messages, {bytes} bytes"
            )));
        }
        self.queue = LaneLimits {
            jobs: messages,
            bytes,
        };
        Ok(())
    }

    /// The packet name of the handler at `position`.
    pub(crate) fn packet_name(&self, position: usize) -> Option<&'static str> {
        self.packet_names.get(position).copied()
    }

    pub(crate) fn handler(&self, packet: &str, kind: PacketKind) -> Option<usize> {
        self.packets
            .iter()
            .position(|(name, k)| name == packet && *k == kind)
    }
}

/// A Spot or Actor type a node serves: its stable type name, its packets, its relocation
/// policy, its queue bounds and the factory that makes an instance. Made by
/// [`SpotType::new`] / [`ActorType::new`] (or the macros' `Room::spot_type(factory)`);
/// register it with [`RuntimeBuilder::spot_type`](crate::RuntimeBuilder::spot_type) or
/// [`RuntimeBuilder::actor_type`](crate::RuntimeBuilder::actor_type).
pub struct ObjectType<K: Kind> {
    pub(crate) def: TypeDef,
    kind: PhantomData<K>,
}

/// A Spot type.
pub type SpotType = ObjectType<SpotKind>;

/// An Actor type.
pub type ActorType = ObjectType<ActorKind>;

impl<K: Kind> Clone for ObjectType<K> {
    fn clone(&self) -> Self {
        ObjectType::of(self.def.clone())
    }
}

impl<K: Kind> std::fmt::Debug for ObjectType<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.def.fmt(f)
    }
}

impl<K: Kind> ObjectType<K> {
    pub(crate) fn of(def: TypeDef) -> Self {
        ObjectType {
            def,
            kind: PhantomData,
        }
    }

    /// Bounds each object's message queue (default 4096 messages and 64 MiB, counting
    /// each message's payload and metadata plus a fixed 64 bytes). A request to a full
    /// queue is refused at once; a send waits up to the send timeout.
    pub fn queue_limits(mut self, messages: usize, bytes: usize) -> Result<Self> {
        self.def.set_queue(messages, bytes)?;
        Ok(self)
    }

    /// The most objects of this type one node runs (default 0: no limit of its own; for
    /// Spots the node's [`max_spots`](crate::RuntimeBuilder::max_spots) still holds). A
    /// node at its limit takes no new one: placement tries another, and when every node
    /// is full the creation is `CapacityExceeded`.
    pub fn max_per_node(mut self, limit: u32) -> Self {
        self.def.max_per_node = limit;
        self
    }

    /// The failover policy `on_owner_lost = reclaim` (the `#[spot]` and `#[actor]` macro
    /// key calls this). The default is the seed's: an object whose owner died stays
    /// `Unavailable`, and nothing happens behind an operator's back. With this, a caller
    /// that finds the owner's lease claim dead (a `get_or_create`, or an Instance intent
    /// call) reclaims the authority under the same fence `Objects::reclaim` uses and
    /// creates a new incarnation, whose factory starts it afresh. Racing callers make one.
    pub fn reclaim_on_owner_lost(mut self) -> Self {
        self.def.reclaim_on_owner_lost = true;
        self
    }

    /// The stable type name.
    pub fn stable_type(&self) -> &StableType {
        &self.def.stable_type
    }

    /// Its relocation policy.
    pub fn relocation(&self) -> Relocation {
        self.def.relocation
    }

    /// Whether it is an Instance Spot type.
    pub(crate) fn is_instance(&self) -> bool {
        self.def.instance
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_name_is_kept_once_however_often_a_type_is_registered() {
        let first = interned("Echo.interning-test");
        let again = interned(&String::from("Echo.interning-test"));
        assert!(std::ptr::eq(first, again), "one copy per distinct name");
        let other = interned("Other.interning-test");
        assert_eq!(
            (first, other),
            ("Echo.interning-test", "Other.interning-test")
        );
        assert!(!std::ptr::eq(first, other));
    }
}
