//! [`DiscoveryHandle`]: what a node knows from the Location Store.

use super::Handle;

/// The Location Store side of a handle, from [`Handle::discovery`].
#[derive(Clone, Copy)]
pub struct DiscoveryHandle<'a> {
    handle: &'a Handle,
}

impl<'a> DiscoveryHandle<'a> {
    pub(crate) fn new(handle: &'a Handle) -> Self {
        DiscoveryHandle { handle }
    }

    /// The owner lease, when a Location Store is registered: its token and the local
    /// admission deadline past which the node publishes nothing and admits no new object
    /// work.
    pub fn owner_lease(self) -> Option<crate::store::OwnerLeaseStatus> {
        let node = self.handle.node();
        node.services().lease().map(|lease| lease.status())
    }

    /// What this node knows from the Location Store, when one is registered.
    pub fn status(self) -> Option<crate::mesh::DiscoveryStatus> {
        self.handle.node().discovery().map(|d| d.status())
    }
}
