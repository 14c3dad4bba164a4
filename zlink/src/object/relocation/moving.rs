//! [`Moving`]: what every step of a move works on — the object layer's
//! [`ObjectCore`] (environment, registry, routing, departures) and this node's
//! [`Relocations`] — held strongly while a move runs, weakly by the routes and tasks
//! that outlive a call.

use std::sync::{Arc, Weak};

use super::Relocations;
use crate::object::core::ObjectCore;
use crate::Result;

/// The core and the moves of one node, as a move works on them.
#[derive(Clone)]
pub(crate) struct Moving {
    pub(crate) core: Arc<ObjectCore>,
    pub(crate) relocations: Arc<Relocations>,
}

/// [`Moving`] held weakly: what a route or a background task keeps.
#[derive(Clone)]
pub(crate) struct WeakMoving {
    core: Weak<ObjectCore>,
    relocations: Weak<Relocations>,
}

impl Moving {
    /// Held weakly.
    pub(crate) fn downgrade(&self) -> WeakMoving {
        WeakMoving {
            core: Arc::downgrade(&self.core),
            relocations: Arc::downgrade(&self.relocations),
        }
    }

    /// Runs `work` (a move this node drives) unless the node is killed first: then it
    /// ends where it was, as a move ends with its process, `ShuttingDown` to its caller.
    pub(crate) async fn unless_killed<T>(
        &self,
        work: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        tokio::select! {
            biased;
            _ = self.core.env.killed().cancelled() => Err(crate::Error::new(
                crate::ErrorKind::ShuttingDown,
                "the node stopped during the move",
            )),
            done = work => done,
        }
    }
}

impl WeakMoving {
    /// The core and the moves, while the node runs.
    pub(crate) fn upgrade(&self) -> Option<Moving> {
        Some(Moving {
            core: self.core.upgrade()?,
            relocations: self.relocations.upgrade()?,
        })
    }
}

impl std::ops::Deref for Moving {
    type Target = ObjectCore;

    fn deref(&self) -> &ObjectCore {
        &self.core
    }
}
