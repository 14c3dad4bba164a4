//! Store metrics: every call a node makes to its Location Store, counted per operation
//! kind, so an operator (or a test) can see what a node reads and writes, and how much of
//! it fails.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use tracing::Instrument;

use super::types::{
    ApplyOutcome, Batch, ClaimOutcome, DescriptorEntry, DescriptorKey, DescriptorPage,
    DescriptorScope, LeaseGrant, LeaseOutcome, LeaseToken, OwnerId, PublishOutcome, ReadOutcome,
    RecordKey, RecordKeyPage,
};
use super::{LocationStore, StoreResult};
use crate::telemetry::{StoreMeter, StoreOp};

/// Calls of one operation kind, and how many of them failed (unavailable, outcome unknown,
/// refused arguments, protocol errors). Normal outcomes such as `Conflict` or `Stale` are
/// not failures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct OperationCount {
    /// Calls made.
    pub calls: u64,
    /// Calls that returned an error.
    pub failures: u64,
}

/// What a node read from its Location Store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StoreReads {
    /// `read_lease`.
    pub lease: OperationCount,
    /// `read_descriptor`.
    pub descriptor: OperationCount,
    /// `scan_descriptors` (one per page).
    pub descriptor_page: OperationCount,
    /// `read` of a record (object authority and other records).
    pub record: OperationCount,
}

/// What a node wrote to its Location Store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StoreWrites {
    /// `claim_lease`.
    pub claim_lease: OperationCount,
    /// `renew_lease`.
    pub renew_lease: OperationCount,
    /// `release_lease`.
    pub release_lease: OperationCount,
    /// `publish_descriptor`.
    pub publish_descriptor: OperationCount,
    /// `withdraw_descriptor`.
    pub withdraw_descriptor: OperationCount,
    /// `apply` (conditional batches of records).
    pub batch: OperationCount,
    /// `next_generation` (counters).
    pub counter: OperationCount,
}

/// Every Location Store call of one node so far, in the runtime's status snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StoreMetrics {
    /// Reads, per kind.
    pub reads: StoreReads,
    /// Writes, per kind.
    pub writes: StoreWrites,
}

#[derive(Default)]
struct Counter {
    calls: AtomicU64,
    failures: AtomicU64,
}

/// One call in flight: it counts as failed unless it returns `Ok`, so a call its caller
/// gave up on (a timeout dropped it) is a failure too.
struct InFlight<'a> {
    counter: &'a Counter,
    meter: &'a StoreMeter,
    op: StoreOp,
    started: Option<std::time::Instant>,
    succeeded: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.succeeded {
            self.counter.failures.fetch_add(1, Ordering::Relaxed);
        }
        self.meter.ended(self.op, self.started, self.succeeded);
    }
}

impl Counter {
    fn start<'a>(&'a self, meter: &'a StoreMeter, op: StoreOp) -> InFlight<'a> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        InFlight {
            counter: self,
            meter,
            op,
            started: meter.start(),
            succeeded: false,
        }
    }

    fn get(&self) -> OperationCount {
        OperationCount {
            calls: self.calls.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
        }
    }
}

#[derive(Default)]
struct Counters {
    read_lease: Counter,
    read_descriptor: Counter,
    scan: Counter,
    read: Counter,
    claim: Counter,
    renew: Counter,
    release: Counter,
    publish: Counter,
    withdraw: Counter,
    apply: Counter,
    next_generation: Counter,
}

/// A [`LocationStore`] that counts every call before passing it on: the store a node
/// actually uses.
pub(crate) struct MeteredStore {
    inner: Arc<dyn LocationStore>,
    counters: Counters,
    meter: StoreMeter,
}

impl MeteredStore {
    /// Counts `inner`'s calls in the status only.
    #[cfg(test)]
    pub(crate) fn new(inner: Arc<dyn LocationStore>) -> Self {
        MeteredStore::metered(inner, StoreMeter::unregistered())
    }

    /// Counts `inner`'s calls in the status and in `meter`'s instruments.
    pub(crate) fn metered(inner: Arc<dyn LocationStore>, meter: StoreMeter) -> Self {
        MeteredStore {
            inner,
            counters: Counters::default(),
            meter,
        }
    }

    /// The counts so far.
    pub(crate) fn metrics(&self) -> StoreMetrics {
        let c = &self.counters;
        StoreMetrics {
            reads: StoreReads {
                lease: c.read_lease.get(),
                descriptor: c.read_descriptor.get(),
                descriptor_page: c.scan.get(),
                record: c.read.get(),
            },
            writes: StoreWrites {
                claim_lease: c.claim.get(),
                renew_lease: c.renew.get(),
                release_lease: c.release.get(),
                publish_descriptor: c.publish.get(),
                withdraw_descriptor: c.withdraw.get(),
                batch: c.apply.get(),
                counter: c.next_generation.get(),
            },
        }
    }
}

impl MeteredStore {
    async fn counted<T>(
        &self,
        op: StoreOp,
        call: impl std::future::Future<Output = StoreResult<T>>,
    ) -> StoreResult<T> {
        let counter = self.counters.of(op);
        let (mesh, rid) = self.meter.node();
        let span = tracing::debug_span!(
            "zlink.store",
            mesh,
            rid,
            op = op.as_str(),
            failed = tracing::field::Empty
        );
        let mut in_flight = counter.start(&self.meter, op);
        let result = call.instrument(span.clone()).await;
        in_flight.succeeded = result.is_ok();
        if result.is_err() {
            span.record("failed", true);
        }
        result
    }
}

impl Counters {
    fn of(&self, op: StoreOp) -> &Counter {
        match op {
            StoreOp::ClaimLease => &self.claim,
            StoreOp::RenewLease => &self.renew,
            StoreOp::ReleaseLease => &self.release,
            StoreOp::ReadLease => &self.read_lease,
            StoreOp::PublishDescriptor => &self.publish,
            StoreOp::WithdrawDescriptor => &self.withdraw,
            StoreOp::ReadDescriptor => &self.read_descriptor,
            StoreOp::ScanDescriptors | StoreOp::ScanRecordKeys => &self.scan,
            StoreOp::Read => &self.read,
            StoreOp::Apply => &self.apply,
            StoreOp::NextGeneration => &self.next_generation,
        }
    }
}

#[async_trait]
impl LocationStore for MeteredStore {
    async fn claim_lease(&self, owner: &OwnerId, ttl: Duration) -> StoreResult<ClaimOutcome> {
        self.counted(StoreOp::ClaimLease, self.inner.claim_lease(owner, ttl))
            .await
    }

    async fn renew_lease(&self, token: &LeaseToken, ttl: Duration) -> StoreResult<LeaseOutcome> {
        self.counted(StoreOp::RenewLease, self.inner.renew_lease(token, ttl))
            .await
    }

    async fn release_lease(&self, token: &LeaseToken) -> StoreResult<LeaseOutcome> {
        self.counted(StoreOp::ReleaseLease, self.inner.release_lease(token))
            .await
    }

    async fn read_lease(&self, owner: &OwnerId) -> StoreResult<Option<LeaseGrant>> {
        self.counted(StoreOp::ReadLease, self.inner.read_lease(owner))
            .await
    }

    async fn publish_descriptor(
        &self,
        token: &LeaseToken,
        key: &DescriptorKey,
        body: &[u8],
    ) -> StoreResult<PublishOutcome> {
        let call = self.inner.publish_descriptor(token, key, body);
        self.counted(StoreOp::PublishDescriptor, call).await
    }

    async fn withdraw_descriptor(
        &self,
        token: &LeaseToken,
        key: &DescriptorKey,
    ) -> StoreResult<bool> {
        let call = self.inner.withdraw_descriptor(token, key);
        self.counted(StoreOp::WithdrawDescriptor, call).await
    }

    async fn read_descriptor(&self, key: &DescriptorKey) -> StoreResult<Option<DescriptorEntry>> {
        let call = self.inner.read_descriptor(key);
        self.counted(StoreOp::ReadDescriptor, call).await
    }

    async fn scan_descriptors(
        &self,
        scope: &DescriptorScope,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<DescriptorPage> {
        let call = self.inner.scan_descriptors(scope, after, limit);
        self.counted(StoreOp::ScanDescriptors, call).await
    }

    async fn scan_record_keys(
        &self,
        name: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> StoreResult<RecordKeyPage> {
        let call = self.inner.scan_record_keys(name, cursor, limit);
        self.counted(StoreOp::ScanRecordKeys, call).await
    }

    async fn read(&self, key: &RecordKey) -> StoreResult<ReadOutcome> {
        self.counted(StoreOp::Read, self.inner.read(key)).await
    }

    async fn apply(&self, batch: &Batch) -> StoreResult<ApplyOutcome> {
        self.counted(StoreOp::Apply, self.inner.apply(batch)).await
    }

    async fn next_generation(&self, counter: &RecordKey) -> StoreResult<u64> {
        let call = self.inner.next_generation(counter);
        self.counted(StoreOp::NextGeneration, call).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{MemoryLocationStore, StoreError};

    #[tokio::test]
    async fn every_call_is_counted_by_kind_and_failures_apart() {
        let store = MeteredStore::new(Arc::new(MemoryLocationStore::new()));
        let key = RecordKey::new("g", "r");
        store.read(&key).await.unwrap();
        store.read(&key).await.unwrap();
        store.next_generation(&key).await.unwrap();
        let refused = store.apply(&Batch::default()).await;
        assert!(matches!(refused, Err(StoreError::InvalidArgument(_))));
        let m = store.metrics();
        assert_eq!(
            m.reads.record,
            OperationCount {
                calls: 2,
                failures: 0
            }
        );
        assert_eq!(
            m.writes.counter,
            OperationCount {
                calls: 1,
                failures: 0
            }
        );
        assert_eq!(
            m.writes.batch,
            OperationCount {
                calls: 1,
                failures: 1
            }
        );
        assert_eq!(m.reads.lease, OperationCount::default());
    }

    #[tokio::test]
    async fn a_call_given_up_on_counts_as_failed() {
        let store = MeteredStore::new(Arc::new(MemoryLocationStore::new()));
        let never = store.counted(StoreOp::Read, std::future::pending::<StoreResult<()>>());
        let given_up = tokio::time::timeout(std::time::Duration::from_millis(5), never).await;
        assert!(given_up.is_err());
        assert_eq!(
            store.metrics().reads.record,
            OperationCount {
                calls: 1,
                failures: 1
            }
        );
        store
            .counted(StoreOp::Read, async { Ok(()) })
            .await
            .unwrap();
        assert_eq!(store.metrics().reads.record.failures, 1);
    }
}
