//! What a Spot's handler can see about itself and the message it is handling.

use std::sync::Arc;

use tokio::time::Instant;

use super::id::SpotId;
use crate::host::Runtime;
use crate::mesh::MeshNode;

/// The context of one Spot turn.
pub struct SpotContext {
    pub(crate) node: Arc<MeshNode>,
    pub(crate) id: SpotId,
    pub(crate) generation: u64,
    pub(crate) packet: Option<Arc<str>>,
    pub(crate) deadline: Option<Instant>,
}

impl SpotContext {
    /// The Spot's global ID.
    pub fn id(&self) -> &SpotId {
        &self.id
    }

    /// Its ObjectGeneration: which incarnation of the ID this is.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The runtime of the node it runs on, for calls from the handler (an awaited call
    /// keeps the turn).
    pub fn runtime(&self) -> Runtime {
        Runtime::from_node(self.node.clone())
    }

    /// The packet name of the message being handled (`None` in lifecycle hooks).
    pub fn packet(&self) -> Option<&str> {
        self.packet.as_deref()
    }

    /// When the caller stops waiting (requests only).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
}
