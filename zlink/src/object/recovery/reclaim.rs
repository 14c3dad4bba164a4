//! The fenced reclaim of one authority whose owner is gone: a compare-and-delete on the
//! exact record read (its ObjectGeneration, owner generation and owner lease claim), only
//! once that claim is dead in the store.
//!
//! Why this never makes two live incarnations: the record names one lease claim; a claim
//! that the store expired or released never lives again (a new claim gets a new
//! generation), and its owner stopped admitting work a fencing margin before the store
//! expired it. Every message, timer and push on the old owner is admitted only under the
//! claim its object's record names, so once the claim is dead nothing of the old
//! incarnation runs again, even if its process is alive and reaches the store later.

use super::report::{LeaseHealth, ObjectRecord, ReclaimRefusal, RecordState};
use crate::address::{ObjectKey, ObjectKind};
use crate::object::authority::AuthorityState;
use crate::object::authority_store::{AuthorityStore, Fenced, Versioned};
use crate::store::{LocationStore, OwnerId, StoreResult};

/// What one reclaim did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reclaim {
    /// The record is gone: the ID reads Missing.
    Released(ObjectRecord),
    /// The record stays, for this reason.
    Refused(ReclaimRefusal),
}

/// Whether the lease claim `current` names is live, and for how long yet.
pub(crate) async fn lease_health(
    store: &dyn LocationStore,
    current: &Versioned,
) -> StoreResult<LeaseHealth> {
    let fence = &current.record.fence;
    Ok(
        match store.read_lease(&OwnerId(fence.owner.clone())).await? {
            Some(grant) if grant.token.generation == fence.lease_generation => LeaseHealth::Live {
                remaining_ms: u64::try_from(grant.remaining.as_millis()).unwrap_or(u64::MAX),
            },
            _ => LeaseHealth::Expired,
        },
    )
}

/// The operator's view of `current`.
pub(crate) fn record_of(key: &ObjectKey, current: &Versioned, lease: LeaseHealth) -> ObjectRecord {
    let record = &current.record;
    ObjectRecord {
        id: key.id.to_string(),
        is_spot: key.kind == ObjectKind::Spot,
        stable_type: record.stable_type.clone(),
        state: match record.state {
            AuthorityState::Creating => RecordState::Creating,
            AuthorityState::Ready => RecordState::Ready,
            AuthorityState::Closing => RecordState::Closing,
        },
        generation: record.fence.object_generation,
        owner_generation: record.fence.owner_generation,
        rid: record.route.rid.clone(),
        node_generation: record.route.node_generation,
        membership: record.membership.clone(),
        owner_lease: lease,
        reclaims_on_owner_lost: record.reclaim_on_owner_lost,
    }
}

/// Releases `key`'s authority (`current`, or what the store holds now) if its owner
/// lease claim is dead, by a delete at exactly the version read.
pub(crate) async fn reclaim_one(
    store: &dyn LocationStore,
    authority: &AuthorityStore,
    key: &ObjectKey,
    current: Option<Versioned>,
) -> StoreResult<Reclaim> {
    let current = match current {
        Some(current) => current,
        None => match authority.read(key).await? {
            Some(current) => current,
            None => return Ok(Reclaim::Refused(ReclaimRefusal::AlreadyMissing)),
        },
    };
    let lease = lease_health(store, &current).await?;
    release_unless_live(authority, key, current, lease).await
}

/// Deletes `current` at exactly its version unless `lease` (its owner claim's health, as
/// read) is live. A dead claim never lives again, so its health may be read once for
/// many records.
pub(crate) async fn release_unless_live(
    authority: &AuthorityStore,
    key: &ObjectKey,
    current: Versioned,
    lease: LeaseHealth,
) -> StoreResult<Reclaim> {
    if let LeaseHealth::Live { remaining_ms } = lease {
        return Ok(Reclaim::Refused(ReclaimRefusal::LeaseLive { remaining_ms }));
    }
    Ok(match authority.delete(key, &current).await? {
        Fenced::Done(()) => {
            let record = record_of(key, &current, lease);
            tracing::info!(
                object = %key,
                generation = record.generation,
                owner_rid = %record.rid,
                "reclaimed an authority whose owner lease had expired"
            );
            Reclaim::Released(record)
        }
        Fenced::Moved => Reclaim::Refused(ReclaimRefusal::Changed),
    })
}

/// A caller met `current`, Ready or Closing: when its type reclaims on owner loss and the
/// owner's claim is dead, releases it. `true` when the caller should read the authority
/// again (released, or changed meanwhile).
pub(crate) async fn reclaim_if_owner_lost(
    store: &dyn LocationStore,
    authority: &AuthorityStore,
    key: &ObjectKey,
    current: &Versioned,
) -> StoreResult<bool> {
    if !current.record.reclaim_on_owner_lost || current.record.state == AuthorityState::Creating {
        return Ok(false);
    }
    Ok(
        match reclaim_one(store, authority, key, Some(current.clone())).await? {
            Reclaim::Released(_) | Reclaim::Refused(ReclaimRefusal::Changed) => true,
            Reclaim::Refused(_) => false,
        },
    )
}
