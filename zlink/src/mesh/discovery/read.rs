//! Reading the whole member list as one consistent snapshot.

use crate::mesh::node::MeshNode;
use crate::store::{DescriptorEntry, StoreError, StoreResult};

/// Descriptors asked for per page.
const PAGE: usize = 256;
/// Full reads tried before a round gives up because the list kept changing.
const READ_ATTEMPTS: usize = 3;

impl MeshNode {
    /// Reads every descriptor of this mesh. The pages count as one snapshot only when they
    /// all show the same change stamp; otherwise the read starts over.
    pub(super) async fn read_members(&self) -> StoreResult<Vec<DescriptorEntry>> {
        let Some(discovery) = self.discovery() else {
            return Ok(Vec::new());
        };
        let store = discovery.settings.store.as_ref();
        let bound = discovery.settings.lease.renew_timeout;
        let scope = self.descriptor_scope();
        for _ in 0..READ_ATTEMPTS {
            let mut entries = Vec::new();
            let mut after: Option<String> = None;
            let mut stamp = None;
            let consistent = loop {
                let page = tokio::time::timeout(
                    bound,
                    store.scan_descriptors(&scope, after.as_deref(), PAGE),
                )
                .await
                .map_err(|_| {
                    StoreError::Unavailable(format!("member scan took over {bound:?}"))
                })??;
                if *stamp.get_or_insert(page.stamp) != page.stamp {
                    break false;
                }
                entries.extend(page.entries);
                match page.next {
                    Some(next) => after = Some(next),
                    None => break true,
                }
            };
            if consistent {
                return Ok(entries);
            }
        }
        Err(StoreError::Unavailable(
            "the member list kept changing while it was read".into(),
        ))
    }
}
