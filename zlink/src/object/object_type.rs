//! What every registered object type has, whatever its kind: its stable type name, its
//! packets, its relocation policy, its queue bounds, its per-node limit and its factory.

use std::sync::Arc;

use super::actor::Actor;
use super::context::{ActorContext, SpotContext};
use super::id::{ObjectKind, StableType};
use super::mailbox::{LaneLimits, APPLICATION_LANE, JOB_OVERHEAD_BYTES};
use super::membership::Execution;
use super::spot::{Relocation, Spot};
use crate::handler::PacketKind;
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

/// A registered type of Spot or Actor.
#[derive(Clone)]
pub(crate) struct ObjectType {
    pub(crate) stable_type: StableType,
    pub(crate) packets: Arc<[(String, PacketKind)]>,
    /// The packet names again, shared, for the handler turns that carry them.
    packet_names: Arc<[Arc<str>]>,
    pub(crate) relocation: Relocation,
    pub(crate) factory: Factory,
    pub(crate) queue: LaneLimits,
    /// The most objects of this type one node runs (0: no limit of its own).
    pub(crate) max_per_node: u32,
    /// A Spot type's member Actor type, when it takes Actors.
    pub(crate) members: Option<StableType>,
    /// How a Spot type runs its member Actors.
    pub(crate) execution: Execution,
}

impl std::fmt::Debug for ObjectType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectType")
            .field("kind", &self.factory.kind())
            .field("stable_type", &self.stable_type)
            .field("packets", &self.packets)
            .field("relocation", &self.relocation)
            .field("queue", &self.queue)
            .field("max_per_node", &self.max_per_node)
            .field("members", &self.members)
            .field("execution", &self.execution)
            .finish_non_exhaustive()
    }
}

impl ObjectType {
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
            if !seen.insert(name.as_str()) {
                return Err(Error::InvalidArgument(format!(
                    "type {stable_type} lists packet {name:?} twice"
                )));
            }
        }
        Ok(ObjectType {
            stable_type,
            packet_names: packets
                .iter()
                .map(|(name, _)| Arc::from(name.as_str()))
                .collect(),
            packets: packets.into(),
            relocation,
            factory,
            queue: APPLICATION_LANE,
            max_per_node: 0,
            members: None,
            execution: Execution::SpotWide,
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

    /// The handler position of `packet` sent as `kind`, if the type handles it.
    /// The packet name of the handler at `position`.
    pub(crate) fn packet_name(&self, position: usize) -> Option<Arc<str>> {
        self.packet_names.get(position).cloned()
    }

    pub(crate) fn handler(&self, packet: &str, kind: PacketKind) -> Option<usize> {
        self.packets
            .iter()
            .position(|(name, k)| name == packet && *k == kind)
    }
}
