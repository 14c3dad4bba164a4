//! The [`LocationStore`] trait: what every provider (Redis, in-memory) implements.

use std::time::Duration;

use async_trait::async_trait;

use super::types::{
    ApplyOutcome, Batch, ClaimOutcome, DescriptorEntry, DescriptorKey, DescriptorPage,
    DescriptorScope, LeaseGrant, LeaseOutcome, LeaseToken, OwnerId, PublishOutcome, ReadOutcome,
    RecordKey, RecordKeyPage,
};
use super::{MemoryLocationStore, StoreResult};

/// The Location Store: where nodes publish their addresses under an owner lease, and where
/// object records are changed by compare-and-set.
///
/// Every method is one atomic step in the store. Times are durations relative to the
/// store's own clock ("remaining"), so callers anchor them on their monotonic clock taken
/// before the call. A call whose result was lost returns
/// [`StoreError::OutcomeUnknown`](super::StoreError::OutcomeUnknown); callers find out what
/// happened by reading, never by guessing.
///
/// Providers must pass the conformance suite in `zlink-testkit`.
#[async_trait]
pub trait LocationStore: Send + Sync + 'static {
    /// Claims the owner lease of `owner` for `ttl` with a new lease generation. A live lease
    /// of the same owner is a [`ClaimOutcome::Conflict`].
    async fn claim_lease(&self, owner: &OwnerId, ttl: Duration) -> StoreResult<ClaimOutcome>;

    /// Extends the lease to `ttl` from now if `token` is the owner's live lease.
    async fn renew_lease(&self, token: &LeaseToken, ttl: Duration) -> StoreResult<LeaseOutcome>;

    /// Ends the lease if `token` is the owner's live lease.
    async fn release_lease(&self, token: &LeaseToken) -> StoreResult<LeaseOutcome>;

    /// The owner's live lease, if any.
    async fn read_lease(&self, owner: &OwnerId) -> StoreResult<Option<LeaseGrant>>;

    /// Writes a descriptor under a live lease. The key stays with its owner while that
    /// owner's lease lives; bumps the scope's change stamp.
    async fn publish_descriptor(
        &self,
        token: &LeaseToken,
        key: &DescriptorKey,
        body: &[u8],
    ) -> StoreResult<PublishOutcome>;

    /// Removes a descriptor if `token` published it; returns whether it did.
    async fn withdraw_descriptor(
        &self,
        token: &LeaseToken,
        key: &DescriptorKey,
    ) -> StoreResult<bool>;

    /// Reads one descriptor, with whether its owner's lease is live.
    async fn read_descriptor(&self, key: &DescriptorKey) -> StoreResult<Option<DescriptorEntry>>;

    /// Reads up to `limit` (1..=1000) descriptors of a scope with ids after `after`, each with
    /// whether its owner's lease is live, plus the scope's change stamp.
    async fn scan_descriptors(
        &self,
        scope: &DescriptorScope,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<DescriptorPage>;

    /// Reads one record.
    async fn read(&self, key: &RecordKey) -> StoreResult<ReadOutcome>;

    /// Applies a batch atomically: every condition holds and every mutation commits, or
    /// nothing changes.
    async fn apply(&self, batch: &Batch) -> StoreResult<ApplyOutcome>;

    /// Lists the keys of the records named `name` in every group: at most about `limit`
    /// (1..=1000) keys a page, from `cursor` (`None` for the first page, then each page's
    /// `next`); a page may hold fewer, or none, and still have a `next`. Every record that
    /// exists for the whole scan is listed at least once, or the scan fails (a cluster
    /// whose masters changed between pages): it never ends having skipped one. A key may
    /// be listed twice, and a record written or deleted during the scan may or may not be.
    /// It walks the whole store: for operators (what a dead node owned), never for a
    /// message's path.
    async fn scan_record_keys(
        &self,
        name: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> StoreResult<RecordKeyPage>;

    /// The next value (from 1) of a durable counter; fails
    /// [`StoreError::GenerationExhausted`](super::StoreError::GenerationExhausted) at 2^63-1
    /// without changing it.
    async fn next_generation(&self, counter: &RecordKey) -> StoreResult<u64>;
}

impl dyn LocationStore {
    /// A fresh in-memory store: the embedded default for a single process. Register the
    /// same instance on every runtime of the process. See [`MemoryLocationStore`].
    pub fn in_memory() -> std::sync::Arc<dyn LocationStore> {
        std::sync::Arc::new(MemoryLocationStore::new())
    }
}
