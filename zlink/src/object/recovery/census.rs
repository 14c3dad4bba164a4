//! Reading who is where: the mesh's node descriptors, and the lease health of the owners
//! a page of records names (each owner read once).

use std::collections::HashMap;

use super::report::{LeaseHealth, NodeRecord};
use crate::object::authority_store::Versioned;
use crate::store::{
    DescriptorKind, DescriptorScope, LocationStore, MeshDescriptor, StoreResult, MAX_SCAN_PAGE,
};
use crate::Result;

/// The lease health of each (owner, claim) already read.
#[derive(Default)]
pub(super) struct LeaseCache {
    known: HashMap<(String, u64), LeaseHealth>,
}

impl LeaseCache {
    pub(super) async fn health(
        &mut self,
        store: &dyn LocationStore,
        current: &Versioned,
    ) -> StoreResult<LeaseHealth> {
        let fence = &current.record.fence;
        let claim = (fence.owner.clone(), fence.lease_generation);
        if let Some(known) = self.known.get(&claim) {
            return Ok(*known);
        }
        let health = super::reclaim::lease_health(store, current).await?;
        self.known.insert(claim, health);
        Ok(health)
    }
}

/// Every MeshNode descriptor of `mesh_name`, by RID.
pub(super) async fn nodes(store: &dyn LocationStore, mesh_name: &str) -> Result<Vec<NodeRecord>> {
    let scope = DescriptorScope {
        kind: DescriptorKind::MeshNode,
        scope: mesh_name.to_string(),
    };
    let mut nodes = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = store
            .scan_descriptors(&scope, after.as_deref(), MAX_SCAN_PAGE)
            .await?;
        for entry in page.entries {
            let Ok(descriptor) = MeshDescriptor::decode(&entry.body) else {
                tracing::warn!(rid = %entry.id, "an undecodable descriptor; skipped");
                continue;
            };
            nodes.push(NodeRecord {
                rid: entry.id,
                generation: descriptor.generation,
                endpoint: descriptor.endpoint,
                lease_live: entry.owner_alive,
                draining: descriptor.draining,
                spot_types: descriptor.spot_types,
                actor_types: descriptor.actor_types,
            });
        }
        match page.next {
            Some(next) => after = Some(next),
            None => return Ok(nodes),
        }
    }
}
