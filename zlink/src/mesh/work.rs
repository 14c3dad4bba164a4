//! Where inbound handler work runs: one task tracker per node (drained on shutdown up to
//! the grace), one cancellation, and the node handlers see as their runtime.

use std::sync::{Arc, OnceLock, Weak};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::MeshNode;

/// The handler work of one node.
pub(crate) struct HandlerWork {
    tracker: TaskTracker,
    cancel: CancellationToken,
    /// The process's RouteMesh node: what `HandlerContext::runtime` returns.
    runtime: OnceLock<Weak<MeshNode>>,
}

impl HandlerWork {
    pub(crate) fn new(cancel: CancellationToken) -> Self {
        HandlerWork {
            tracker: TaskTracker::new(),
            cancel,
            runtime: OnceLock::new(),
        }
    }

    pub(crate) fn tracker(&self) -> &TaskTracker {
        &self.tracker
    }

    pub(crate) fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Names the node handlers reach as their runtime (set once, at construction).
    pub(crate) fn set_runtime(&self, node: Weak<MeshNode>) {
        let _ = self.runtime.set(node);
    }

    pub(crate) fn runtime(&self) -> Option<Arc<MeshNode>> {
        self.runtime.get()?.upgrade()
    }
}
