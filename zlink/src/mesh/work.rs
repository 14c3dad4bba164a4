//! Where inbound handler work runs: one task tracker per node (drained on shutdown up to
//! the grace) and one cancellation.

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The handler work of one node.
pub(crate) struct HandlerWork {
    tracker: TaskTracker,
    cancel: CancellationToken,
}

impl HandlerWork {
    pub(crate) fn new(cancel: CancellationToken) -> Self {
        HandlerWork {
            tracker: TaskTracker::new(),
            cancel,
        }
    }

    pub(crate) fn tracker(&self) -> &TaskTracker {
        &self.tracker
    }

    pub(crate) fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }
}
