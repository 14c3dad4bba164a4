//! [`FaultyLocationStore`]: wraps any Location Store and injects the failures a real store
//! produces at inconvenient moments: slowness, refusals, and changes whose result is lost.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use zlink::store::{
    ApplyOutcome, Batch, ClaimOutcome, DescriptorEntry, DescriptorKey, DescriptorPage,
    DescriptorScope, LeaseGrant, LeaseOutcome, LeaseToken, LocationStore, OwnerId, PublishOutcome,
    ReadOutcome, RecordKey, RecordKeyPage, StoreError, StoreResult,
};

#[derive(Default)]
struct Faults {
    delay: Duration,
    down: bool,
    fail_next: usize,
    lose_next: usize,
    drop_next: usize,
    /// Record batches only (`apply`): object authority changes, not leases or descriptors.
    applies_down: bool,
    lose_next_apply: usize,
    /// Record reads fail while set.
    reads_down: bool,
    /// The next lost `apply` also sets `reads_down`: the change landed, and nothing can
    /// read back whether it did.
    refuse_reads_after_lost_apply: bool,
    calls: usize,
    /// The batches whose result was lost (applied, reported `OutcomeUnknown`), oldest first.
    lost_batches: Vec<Batch>,
}

/// What happens to one call.
enum Fault {
    None,
    /// Refused before anything happened.
    Fail,
    /// Applied, but the caller hears `OutcomeUnknown`.
    LoseResult,
    /// Not applied, and the caller hears `OutcomeUnknown`.
    DropUnanswered,
}

/// A fault-injecting [`LocationStore`] around another one.
pub struct FaultyLocationStore {
    inner: Arc<dyn LocationStore>,
    faults: Mutex<Faults>,
}

impl FaultyLocationStore {
    /// Wraps `inner`; no faults until told.
    pub fn new(inner: Arc<dyn LocationStore>) -> Self {
        FaultyLocationStore {
            inner,
            faults: Mutex::new(Faults::default()),
        }
    }

    fn faults(&self) -> std::sync::MutexGuard<'_, Faults> {
        self.faults.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every call first waits this long.
    pub fn set_delay(&self, delay: Duration) {
        self.faults().delay = delay;
    }

    /// While down, every call fails `Unavailable` without reaching the inner store.
    pub fn set_down(&self, down: bool) {
        self.faults().down = down;
    }

    /// The next `n` calls fail `Unavailable` without reaching the inner store.
    pub fn fail_next(&self, n: usize) {
        self.faults().fail_next = n;
    }

    /// The next `n` changing calls are applied, but report `OutcomeUnknown`.
    pub fn lose_result_of_next(&self, n: usize) {
        self.faults().lose_next = n;
    }

    /// The next `n` changing calls are not applied, and report `OutcomeUnknown`.
    pub fn drop_next(&self, n: usize) {
        self.faults().drop_next = n;
    }

    /// While set, every `apply` (a record batch: an object's authority change) fails
    /// `Unavailable`; leases and descriptors go on.
    pub fn set_applies_down(&self, down: bool) {
        self.faults().applies_down = down;
    }

    /// The next `n` `apply` batches are applied, but report `OutcomeUnknown`.
    pub fn lose_result_of_next_apply(&self, n: usize) {
        self.faults().lose_next_apply = n;
    }

    /// While set, every record `read` fails `Unavailable` (leases and descriptors go on).
    pub fn set_reads_down(&self, down: bool) {
        self.faults().reads_down = down;
    }

    /// The next `apply` is applied but reports `OutcomeUnknown`, and from then on record
    /// reads fail until [`set_reads_down(false)`](Self::set_reads_down): the caller
    /// cannot learn the outcome until the test lets it.
    pub fn lose_next_apply_and_hold_its_reread(&self) {
        let mut f = self.faults();
        f.lose_next_apply = 1;
        f.refuse_reads_after_lost_apply = true;
    }

    /// How many calls reached this wrapper.
    pub fn calls(&self) -> usize {
        self.faults().calls
    }

    /// The batches whose result this wrapper lost since the last call, oldest first: a
    /// test proves which write a fault hit.
    pub fn take_lost_batches(&self) -> Vec<Batch> {
        std::mem::take(&mut self.faults().lost_batches)
    }

    fn take(&self, changes: bool) -> (Fault, Duration) {
        let mut f = self.faults();
        f.calls += 1;
        let fault = if f.down {
            Fault::Fail
        } else if f.fail_next > 0 {
            f.fail_next -= 1;
            Fault::Fail
        } else if changes && f.lose_next > 0 {
            f.lose_next -= 1;
            Fault::LoseResult
        } else if changes && f.drop_next > 0 {
            f.drop_next -= 1;
            Fault::DropUnanswered
        } else {
            Fault::None
        };
        (fault, f.delay)
    }

    async fn call<T>(
        &self,
        changes: bool,
        call: impl Future<Output = StoreResult<T>>,
    ) -> StoreResult<T> {
        let (fault, delay) = self.take(changes);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        match fault {
            Fault::None => call.await,
            Fault::Fail => Err(StoreError::Unavailable("injected failure".into())),
            Fault::LoseResult => {
                let _ = call.await;
                Err(StoreError::OutcomeUnknown("injected: result lost".into()))
            }
            Fault::DropUnanswered => {
                Err(StoreError::OutcomeUnknown("injected: request lost".into()))
            }
        }
    }
}

#[async_trait]
impl LocationStore for FaultyLocationStore {
    async fn claim_lease(&self, owner: &OwnerId, ttl: Duration) -> StoreResult<ClaimOutcome> {
        self.call(true, self.inner.claim_lease(owner, ttl)).await
    }

    async fn renew_lease(&self, token: &LeaseToken, ttl: Duration) -> StoreResult<LeaseOutcome> {
        self.call(true, self.inner.renew_lease(token, ttl)).await
    }

    async fn release_lease(&self, token: &LeaseToken) -> StoreResult<LeaseOutcome> {
        self.call(true, self.inner.release_lease(token)).await
    }

    async fn read_lease(&self, owner: &OwnerId) -> StoreResult<Option<LeaseGrant>> {
        self.call(false, self.inner.read_lease(owner)).await
    }

    async fn publish_descriptor(
        &self,
        token: &LeaseToken,
        key: &DescriptorKey,
        body: &[u8],
    ) -> StoreResult<PublishOutcome> {
        self.call(true, self.inner.publish_descriptor(token, key, body))
            .await
    }

    async fn withdraw_descriptor(
        &self,
        token: &LeaseToken,
        key: &DescriptorKey,
    ) -> StoreResult<bool> {
        self.call(true, self.inner.withdraw_descriptor(token, key))
            .await
    }

    async fn read_descriptor(&self, key: &DescriptorKey) -> StoreResult<Option<DescriptorEntry>> {
        self.call(false, self.inner.read_descriptor(key)).await
    }

    async fn scan_descriptors(
        &self,
        scope: &DescriptorScope,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<DescriptorPage> {
        self.call(false, self.inner.scan_descriptors(scope, after, limit))
            .await
    }

    async fn scan_record_keys(
        &self,
        name: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> StoreResult<RecordKeyPage> {
        if self.faults().reads_down {
            self.faults().calls += 1;
            return Err(StoreError::Unavailable("injected: reads refused".into()));
        }
        self.call(false, self.inner.scan_record_keys(name, cursor, limit))
            .await
    }

    async fn read(&self, key: &RecordKey) -> StoreResult<ReadOutcome> {
        if self.faults().reads_down {
            self.faults().calls += 1;
            return Err(StoreError::Unavailable("injected: reads refused".into()));
        }
        self.call(false, self.inner.read(key)).await
    }

    async fn apply(&self, batch: &Batch) -> StoreResult<ApplyOutcome> {
        let batch_fault = {
            let mut f = self.faults();
            if f.applies_down {
                Some(Fault::Fail)
            } else if f.lose_next_apply > 0 {
                f.lose_next_apply -= 1;
                f.lost_batches.push(batch.clone());
                if std::mem::take(&mut f.refuse_reads_after_lost_apply) {
                    f.reads_down = true;
                }
                Some(Fault::LoseResult)
            } else {
                None
            }
        };
        match batch_fault {
            Some(Fault::Fail) => Err(StoreError::Unavailable("injected: batches refused".into())),
            Some(_) => {
                let _ = self.inner.apply(batch).await;
                Err(StoreError::OutcomeUnknown(
                    "injected: batch result lost".into(),
                ))
            }
            None => self.call(true, self.inner.apply(batch)).await,
        }
    }

    async fn next_generation(&self, counter: &RecordKey) -> StoreResult<u64> {
        self.call(true, self.inner.next_generation(counter)).await
    }
}
