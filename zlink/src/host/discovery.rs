//! [`DiscoveryHandle`]: what a runtime knows from the Location Store.

use super::Runtime;

/// The Location Store side of a runtime, from [`Runtime::discovery`].
#[derive(Clone, Copy)]
pub struct DiscoveryHandle<'a> {
    runtime: &'a Runtime,
}

impl<'a> DiscoveryHandle<'a> {
    pub(crate) fn new(runtime: &'a Runtime) -> Self {
        DiscoveryHandle { runtime }
    }

    /// The owner lease, when a Location Store is registered: its token and the local
    /// admission deadline past which the node publishes nothing and admits no new object
    /// work.
    pub fn owner_lease(&self) -> Option<crate::store::OwnerLeaseStatus> {
        self.runtime
            .node
            .services()
            .lease()
            .map(|lease| lease.status())
    }

    /// What this node knows from the Location Store, when one is registered.
    pub fn status(&self) -> Option<crate::mesh::DiscoveryStatus> {
        self.runtime.node.discovery().map(|d| d.status())
    }
}
