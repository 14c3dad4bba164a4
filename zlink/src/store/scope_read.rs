//! Reading every descriptor of one scope as one consistent snapshot: the change-stamp rule
//! that RouteMesh discovery, ClientServer discovery and fanout discovery all use.

use std::time::Duration;

use super::{DescriptorEntry, DescriptorScope, LocationStore, StoreError, StoreResult};

/// Descriptors asked for per page.
const PAGE: usize = 256;
/// Full reads tried before a round gives up because the list kept changing.
const READ_ATTEMPTS: usize = 3;

/// Reads every descriptor of `scope`, page after page, each page within `bound`. The pages
/// count as one snapshot only when they all show the same change stamp; otherwise the read
/// starts over (a few times, then the read fails `Unavailable`).
pub(crate) async fn read_scope(
    store: &dyn LocationStore,
    scope: &DescriptorScope,
    bound: Duration,
) -> StoreResult<Vec<DescriptorEntry>> {
    for _ in 0..READ_ATTEMPTS {
        let mut entries = Vec::new();
        let mut after: Option<String> = None;
        let mut stamp = None;
        let consistent = loop {
            let page =
                tokio::time::timeout(bound, store.scan_descriptors(scope, after.as_deref(), PAGE))
                    .await
                    .map_err(|_| {
                        StoreError::Unavailable(format!("descriptor scan took over {bound:?}"))
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
        "the descriptor list kept changing while it was read".into(),
    ))
}
