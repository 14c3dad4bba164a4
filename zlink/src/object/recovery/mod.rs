//! Explicit recovery after a crash: the failover contract seed 002 §4.4 leaves to a
//! separate document, built as [`Objects`].
//!
//! - **When:** an authority is released only once the owner lease claim its record names
//!   is dead in the Location Store (expired or released). While it lives, the reclaim is
//!   refused and says so.
//! - **Fence:** a compare-and-delete on the exact record read (ObjectGeneration, owner
//!   generation, owner lease claim): of racing reclaims one releases, the others are told
//!   the record changed. An old owner cut off from the store stopped admitting a fencing
//!   margin before its lease expired, and admits nothing under that claim ever again.
//! - **What is recovered:** nothing implicit. The ID reads Missing; its next create (or
//!   Instance intent call) makes a new incarnation with a higher ObjectGeneration, whose
//!   factory decides what state it starts from. Sessions bound to a reclaimed Actor bind
//!   again.
//!
//! Nothing here runs by itself, except for types declared `on_owner_lost = reclaim`,
//! whose callers reclaim under the same fence when they find the owner's claim dead.

mod census;
pub(crate) mod reclaim;
mod report;

use std::sync::Arc;

use futures::StreamExt;

use self::reclaim::{reclaim_one, release_unless_live, Reclaim};
pub use self::report::{
    LeaseHealth, NodeRecord, ObjectRecord, OwnedPage, ReclaimRefusal, ReclaimReport, RecordState,
    Refused,
};
use super::authority_store::{AuthorityStore, Versioned};
use crate::address::{ActorId, ObjectKey, SpotId};
use crate::store::{LocationStore, StoreError};
use crate::telemetry::{EventHub, Happened, ObjectMeter};
use crate::{Error, Result};

/// Reclaims one node runs at once.
const RECLAIM_CONCURRENCY: usize = 32;
/// Authority keys read per scan page.
const SCAN_PAGE: usize = 500;

/// The recovery operations over one Location Store: where objects are, what a node owns,
/// and the fenced reclaim of a dead owner's objects. From a running node:
/// [`Runtime::objects`](crate::Runtime::objects); without one (an operator's tool):
/// [`Objects::over`] with the store the nodes use.
#[derive(Clone)]
pub struct Objects {
    store: Arc<dyn LocationStore>,
    authority: AuthorityStore,
    /// The status stream and the instruments of the node these operations run on, if
    /// they run on one.
    observed: Option<(Arc<EventHub>, Arc<ObjectMeter>)>,
}

impl Objects {
    /// The recovery operations over `store` (the same store, key prefix included, that
    /// the mesh's nodes use).
    pub fn over(store: Arc<dyn LocationStore>) -> Self {
        Objects {
            authority: AuthorityStore::new(store.clone()),
            store,
            observed: None,
        }
    }

    /// These operations, telling the status stream `events` and the instruments `meter`
    /// what they reclaimed.
    pub(crate) fn observed_by(mut self, events: Arc<EventHub>, meter: Arc<ObjectMeter>) -> Self {
        self.observed = Some((events, meter));
        self
    }

    /// Tells the status stream, if any, that a reclaim released and refused what
    /// `report` lists.
    fn tell(&self, owner: Option<&str>, report: &ReclaimReport) {
        if let Some((events, meter)) = &self.observed {
            meter.reclaimed(report.released.len(), report.refused.len());
            events.emit(|| Happened::ObjectsReclaimed {
                owner: owner.map(str::to_string),
                released: report.released.len(),
                refused: report.refused.len(),
            });
        }
    }

    /// Reclaims the Spot and the Actor with ID `id` (the two namespaces are apart; most
    /// IDs have one or neither), each only if its owner lease claim is dead. The one of
    /// the two that does not exist is reported `AlreadyMissing` only when neither does.
    pub async fn reclaim(&self, id: &str) -> Result<ReclaimReport> {
        let mut report = ReclaimReport::default();
        for key in both_keys(id)? {
            self.reclaim_key(&key, None, &mut report).await?;
        }
        let found = report.released.len()
            + report
                .refused
                .iter()
                .filter(|r| r.reason != ReclaimRefusal::AlreadyMissing)
                .count();
        if found > 0 {
            report
                .refused
                .retain(|r| r.reason != ReclaimRefusal::AlreadyMissing);
        }
        self.tell(None, &report);
        Ok(report)
    }

    /// Reclaims Spot `id` if its owner lease claim is dead.
    pub async fn reclaim_spot(&self, id: &str) -> Result<ReclaimReport> {
        let key = ObjectKey::from(&SpotId::new(id).map_err(invalid)?);
        let mut report = ReclaimReport::default();
        self.reclaim_key(&key, None, &mut report).await?;
        self.tell(None, &report);
        Ok(report)
    }

    /// Reclaims Actor `id` if its owner lease claim is dead.
    pub async fn reclaim_actor(&self, id: &str) -> Result<ReclaimReport> {
        let key = ObjectKey::from(&ActorId::new(id).map_err(invalid)?);
        let mut report = ReclaimReport::default();
        self.reclaim_key(&key, None, &mut report).await?;
        self.tell(None, &report);
        Ok(report)
    }

    /// Reclaims every object whose record names node `rid` (any of its lifecycles), each
    /// only if the lease claim it names is dead: after a crash, once the lease expired,
    /// this frees everything the dead node owned. It walks every authority in the store.
    pub async fn reclaim_node(&self, rid: &str) -> Result<ReclaimReport> {
        let mut report = ReclaimReport::default();
        let mut cursor: Option<String> = None;
        loop {
            let (owned, next) = self.owned_records(rid, cursor.as_deref()).await?;
            // One lease read per owner claim on the page, not per record.
            let mut leases = census::LeaseCache::default();
            let mut checked = Vec::with_capacity(owned.len());
            for (key, current) in owned {
                let lease = leases.health(self.store.as_ref(), &current).await?;
                checked.push((key, current, lease));
            }
            let outcomes =
                futures::stream::iter(checked.into_iter().map(|(key, current, lease)| {
                    let authority = self.authority.clone();
                    async move {
                        let outcome = release_unless_live(&authority, &key, current, lease).await;
                        (key, outcome)
                    }
                }))
                .buffer_unordered(RECLAIM_CONCURRENCY)
                .collect::<Vec<_>>()
                .await;
            for (key, outcome) in outcomes {
                let outcome = outcome.unwrap_or_else(|e| {
                    Reclaim::Refused(ReclaimRefusal::Failed {
                        detail: e.to_string(),
                    })
                });
                add(&mut report, &key, outcome);
            }
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        tracing::info!(
            rid,
            released = report.released.len(),
            refused = report.refused.len(),
            "reclaimed a node's objects"
        );
        self.tell(Some(rid), &report);
        Ok(report)
    }

    /// The authority records of the Spot and the Actor with ID `id`, if any.
    pub async fn locate(&self, id: &str) -> Result<Vec<ObjectRecord>> {
        let mut found = Vec::new();
        for key in both_keys(id)? {
            if let Some(current) = self.authority.read(&key).await? {
                let lease = reclaim::lease_health(self.store.as_ref(), &current).await?;
                found.push(reclaim::record_of(&key, &current, lease));
            }
        }
        Ok(found)
    }

    /// One page of the objects whose records name node `rid`, from `cursor` (`None` for
    /// the first page, then each page's `next`). A page may hold none while more follow.
    pub async fn owned_by(&self, rid: &str, cursor: Option<&str>) -> Result<OwnedPage> {
        let (owned, next) = self.owned_records(rid, cursor).await?;
        let mut objects = Vec::with_capacity(owned.len());
        let mut leases = census::LeaseCache::default();
        for (key, current) in owned {
            let lease = leases.health(self.store.as_ref(), &current).await?;
            objects.push(reclaim::record_of(&key, &current, lease));
        }
        Ok(OwnedPage { objects, next })
    }

    /// The nodes of mesh `mesh_name` with a descriptor in the store, by RID.
    pub async fn nodes(&self, mesh_name: &str) -> Result<Vec<NodeRecord>> {
        census::nodes(self.store.as_ref(), mesh_name).await
    }

    async fn reclaim_key(
        &self,
        key: &ObjectKey,
        current: Option<Versioned>,
        report: &mut ReclaimReport,
    ) -> Result<()> {
        let outcome = reclaim_one(self.store.as_ref(), &self.authority, key, current).await?;
        add(report, key, outcome);
        Ok(())
    }

    /// One scan page of authorities, with the records that name `rid`.
    async fn owned_records(
        &self,
        rid: &str,
        cursor: Option<&str>,
    ) -> Result<(Vec<(ObjectKey, Versioned)>, Option<String>)> {
        let page = self
            .store
            .scan_record_keys("authority", cursor, SCAN_PAGE)
            .await?;
        // Collected first: a lazy iterator held across the awaits below would make this
        // future not `Send` for every lifetime (what a spawned HTTP handler needs).
        let keys: Vec<ObjectKey> = page
            .keys
            .iter()
            .filter_map(|record| ObjectKey::from_authority_group(&record.group))
            .collect();
        let read = futures::stream::iter(keys.into_iter().map(|key| {
            let authority = self.authority.clone();
            async move { authority.read(&key).await.map(|found| (key, found)) }
        }))
        .buffer_unordered(RECLAIM_CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
        let mut owned = Vec::new();
        for found in read {
            let (key, current) = match found {
                Ok((key, Some(current))) => (key, current),
                Ok((_, None)) => continue,
                // A record no provider wrote (it does not decode) names no node: say so
                // and go on with the others.
                Err(StoreError::Protocol(e)) => {
                    tracing::warn!(error = %e, "an unreadable authority record skipped");
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            if current.record.route.rid == rid {
                owned.push((key, current));
            }
        }
        owned.sort_by(|a, b| a.0.id.cmp(&b.0.id));
        owned.dedup_by(|a, b| a.0 == b.0);
        Ok((owned, page.next))
    }
}

fn add(report: &mut ReclaimReport, key: &ObjectKey, outcome: Reclaim) {
    match outcome {
        Reclaim::Released(record) => report.released.push(record),
        Reclaim::Refused(reason) => report.refused.push(Refused {
            id: key.id.to_string(),
            is_spot: key.kind == crate::address::ObjectKind::Spot,
            reason,
        }),
    }
}

fn invalid(e: crate::address::IdError) -> Error {
    Error::InvalidArgument(e.to_string())
}

/// The Spot key and the Actor key of `id`.
fn both_keys(id: &str) -> Result<[ObjectKey; 2]> {
    Ok([
        ObjectKey::from(&SpotId::new(id).map_err(invalid)?),
        ObjectKey::from(&ActorId::new(id).map_err(invalid)?),
    ])
}
