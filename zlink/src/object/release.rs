//! What a node still owns when it stops cleanly goes back to the Location Store: each
//! authority record is deleted, fenced on this node lifecycle's own ownership, so the ID
//! reads Missing and its next create or Instance intent call starts a new incarnation
//! (reference §7.5 step 5, rule 80). A crash releases nothing: see
//! [`reclaim`](super::reclaim).

use std::time::Duration;

use futures::StreamExt;

use super::authority::OwnerRoute;
use super::authority_store::{AuthorityStore, Fenced, Versioned};
use crate::address::ObjectKey;
use crate::store::OwnerId;

/// Releases one node runs at once.
const RELEASE_CONCURRENCY: usize = 32;

/// How often one release reads again after the record changed under it.
const RELEASE_ATTEMPTS: usize = 3;

/// What a shutdown gave back.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Released {
    /// Records deleted: these IDs read Missing now.
    pub(crate) released: usize,
    /// Records another owner (or lifecycle) holds now: left alone.
    pub(crate) not_ours: usize,
    /// Records that could not be released, each with its ID and why.
    pub(crate) failed: Vec<String>,
}

/// This node lifecycle as an owner: the route its records name and its owner id.
pub(crate) struct Releaser<'a> {
    pub(crate) authority: &'a AuthorityStore,
    pub(crate) route: &'a OwnerRoute,
    pub(crate) owner: &'a OwnerId,
}

impl Releaser<'_> {
    /// Deletes every record of `owned` this lifecycle still holds, within `limit`.
    pub(crate) async fn release_all(
        &self,
        owned: Vec<(ObjectKey, Versioned)>,
        limit: Duration,
    ) -> Released {
        let total = owned.len();
        let outcomes = futures::stream::iter(owned.into_iter().map(|(key, known)| async move {
            let outcome = self.release(&key, known).await;
            (key, outcome)
        }))
        .buffer_unordered(RELEASE_CONCURRENCY)
        .take_until(tokio::time::sleep(limit))
        .collect::<Vec<_>>()
        .await;
        let mut released = Released::default();
        let answered = outcomes.len();
        for (key, outcome) in outcomes {
            match outcome {
                Ok(true) => released.released += 1,
                Ok(false) => released.not_ours += 1,
                Err(why) => released.failed.push(format!("{key}: {why}")),
            }
        }
        if answered < total {
            released.failed.push(format!(
                "{} releases did not end within {limit:?}",
                total - answered
            ));
        }
        released
    }

    /// Deletes `key`'s record if this lifecycle holds it: first at the version it knows,
    /// then (when something rewrote the record since) at the version read now. `false`
    /// when another owner holds it or it is gone.
    async fn release(&self, key: &ObjectKey, known: Versioned) -> Result<bool, String> {
        let mut current = Some(known);
        for _ in 0..RELEASE_ATTEMPTS {
            let Some(record) = current.take().filter(|v| self.holds(v)) else {
                return Ok(false);
            };
            match self.authority.delete(key, &record).await {
                Ok(Fenced::Done(())) => return Ok(true),
                Ok(Fenced::Moved) => {}
                Err(e) => return Err(e.to_string()),
            }
            current = self.authority.read(key).await.map_err(|e| e.to_string())?;
        }
        Err(format!(
            "the record kept changing during {RELEASE_ATTEMPTS} attempts"
        ))
    }

    /// Whether the record names this lifecycle as its owner.
    fn holds(&self, current: &Versioned) -> bool {
        current.record.route == *self.route && current.record.fence.owner == self.owner.0
    }
}
