//! NodeServices: what every subsystem of a node may use, whether or not discovery runs:
//! the Location Store, the owner lease and the clock.

use std::sync::Arc;

use tokio::time::Instant;

use crate::store::{LocationStore, OwnerLease};

/// The services of one node.
#[derive(Clone)]
pub(crate) struct NodeServices {
    store: Option<Arc<dyn LocationStore>>,
    lease: Option<Arc<OwnerLease>>,
    clock: Clock,
}

impl NodeServices {
    pub(crate) fn new(
        store: Option<Arc<dyn LocationStore>>,
        lease: Option<Arc<OwnerLease>>,
        clock: Clock,
    ) -> Self {
        NodeServices {
            store,
            lease,
            clock,
        }
    }

    /// The Location Store, when one is registered.
    pub(crate) fn store(&self) -> Option<&Arc<dyn LocationStore>> {
        self.store.as_ref()
    }

    /// The process's owner lease, when a store is registered.
    pub(crate) fn lease(&self) -> Option<&Arc<OwnerLease>> {
        self.lease.as_ref()
    }

    /// The clock deadlines are measured on.
    pub(crate) fn clock(&self) -> Clock {
        self.clock
    }
}

/// The node's clock: tokio's, so tests with a paused runtime control it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock;

impl Clock {
    pub(crate) fn now(self) -> Instant {
        Instant::now()
    }
}
