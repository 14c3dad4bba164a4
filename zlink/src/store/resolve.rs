//! Finding out what happened to a change whose result was lost
//! ([`StoreError::OutcomeUnknown`]): re-read by key and version, never guess.

use bytes::Bytes;

use super::types::{
    ApplyOutcome, Batch, ClaimOutcome, Condition, DescriptorKey, LeaseToken, Mutation, OwnerId,
    PublishOutcome, ReadOutcome, StoreVersion,
};
use super::{LocationStore, StoreError, StoreResult};

/// How many times a change whose result was lost is re-checked and, if it did not apply,
/// sent again.
pub const RESOLVE_ATTEMPTS: usize = 3;

/// What re-reading a batch's keys shows.
enum Found {
    Applied(Vec<StoreVersion>),
    NotApplied,
    Conflict,
}

/// Applies `batch`; when the result is lost, re-reads every key it names: if the batch's
/// effect is there, it is reported applied with the versions read; if every condition
/// still holds, it did not apply and is sent again; otherwise another writer changed the
/// records and the result is a conflict.
pub async fn apply_resolving(
    store: &dyn LocationStore,
    batch: &Batch,
) -> StoreResult<ApplyOutcome> {
    let mut last = None;
    for _ in 0..RESOLVE_ATTEMPTS {
        match store.apply(batch).await {
            Err(StoreError::OutcomeUnknown(detail)) => {
                tracing::warn!(detail, "store result lost; re-reading to find out");
                last = Some(detail);
                match find_out(store, batch).await? {
                    Found::Applied(versions) => return Ok(ApplyOutcome::Applied(versions)),
                    Found::Conflict => return Ok(ApplyOutcome::Conflict),
                    Found::NotApplied => continue,
                }
            }
            other => return other,
        }
    }
    Err(StoreError::OutcomeUnknown(last.unwrap_or_default()))
}

async fn find_out(store: &dyn LocationStore, batch: &Batch) -> StoreResult<Found> {
    let mut put_versions = Vec::new();
    let mut applied = true;
    for mutation in &batch.mutations {
        let now = store.read(mutation.key()).await?;
        match (mutation, now) {
            (
                Mutation::Put { value, .. },
                ReadOutcome::Found {
                    value: v, version, ..
                },
            ) if v == value && !still_expected(batch, mutation, &version) => {
                put_versions.push(version)
            }
            (Mutation::Delete(_), ReadOutcome::Missing) => {}
            _ => applied = false,
        }
    }
    if applied {
        return Ok(Found::Applied(put_versions));
    }
    for condition in &batch.conditions {
        let holds = match (condition, store.read(condition.key()).await?) {
            (Condition::Missing(_), ReadOutcome::Missing) => true,
            (Condition::Version(_, expected), ReadOutcome::Found { version, .. }) => {
                &version == expected
            }
            _ => false,
        };
        if !holds {
            return Ok(Found::Conflict);
        }
    }
    Ok(Found::NotApplied)
}

/// Whether the record still has the version the batch expected (so our Put did not land).
fn still_expected(batch: &Batch, mutation: &Mutation, version: &StoreVersion) -> bool {
    batch.conditions.iter().any(|c| {
        matches!(c, Condition::Version(key, expected) if key == mutation.key() && expected == version)
    })
}

/// Publishes a descriptor; when the result is lost, reads it back: our body under our
/// token means it was published.
pub async fn publish_resolving(
    store: &dyn LocationStore,
    token: &LeaseToken,
    key: &DescriptorKey,
    body: &Bytes,
) -> StoreResult<PublishOutcome> {
    let mut last = None;
    for _ in 0..RESOLVE_ATTEMPTS {
        match store.publish_descriptor(token, key, body).await {
            Err(StoreError::OutcomeUnknown(detail)) => {
                tracing::warn!(detail, "descriptor publish result lost; re-reading");
                last = Some(detail);
                if let Some(entry) = store.read_descriptor(key).await? {
                    if &entry.owner == token && entry.body == body {
                        return Ok(PublishOutcome::Published);
                    }
                }
            }
            other => return other,
        }
    }
    Err(StoreError::OutcomeUnknown(last.unwrap_or_default()))
}

/// Claims a lease; when the result is lost, reads the owner's lease: owner ids are never
/// reused, so a live lease of this owner is the one just claimed.
pub async fn claim_resolving(
    store: &dyn LocationStore,
    owner: &OwnerId,
    ttl: std::time::Duration,
) -> StoreResult<ClaimOutcome> {
    let mut last = None;
    for _ in 0..RESOLVE_ATTEMPTS {
        match store.claim_lease(owner, ttl).await {
            Err(StoreError::OutcomeUnknown(detail)) => {
                tracing::warn!(detail, "lease claim result lost; re-reading");
                last = Some(detail);
                if let Some(grant) = store.read_lease(owner).await? {
                    return Ok(ClaimOutcome::Claimed(grant));
                }
            }
            other => return other,
        }
    }
    Err(StoreError::OutcomeUnknown(last.unwrap_or_default()))
}
