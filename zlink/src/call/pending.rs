//! The pending-request table: each outstanding request ends exactly once.
//!
//! Slots are reused; a correlation id is the slot index (low 32 bits) tagged with the
//! slot's generation (high 32 bits), so a late reply for a reused slot is told apart from
//! the current request and discarded. One sweeper task per node ends requests whose
//! deadline passed: no request arms a timer of its own, and the sweeper finds the expired
//! ones in a deadline heap rather than by reading every slot.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;

use crate::link::ConnId;
use crate::sync::LockUnpoisoned;
use crate::{Error, ErrorKind, Refusal, Result};

type Completion = oneshot::Sender<Result<Bytes>>;

struct Entry {
    conn: ConnId,
    /// The request's operation: a reply must echo it.
    operation: u64,
    deadline: Instant,
    timeout: Duration,
    done: Completion,
}

#[derive(Default)]
struct Slot {
    generation: u32,
    entry: Option<Entry>,
}

#[derive(Default)]
struct Slots {
    slots: Vec<Slot>,
    free: Vec<u32>,
    live: usize,
    /// Every registered request's deadline and correlation, earliest first. A request that
    /// ended before its deadline stays until it comes up (or the heap is rebuilt), and is
    /// skipped then: its correlation no longer names a live entry.
    deadlines: BinaryHeap<Reverse<(Instant, u64)>>,
    /// When the sweeper next wakes (it is woken earlier by a request due before that).
    next_sweep: Option<Instant>,
    closed: bool,
}

impl Slots {
    fn take(&mut self, correlation: u64) -> Option<Entry> {
        let index = (correlation & u64::from(u32::MAX)).checked_sub(1)? as usize;
        let generation = (correlation >> 32) as u32;
        let slot = self.slots.get_mut(index)?;
        if slot.generation != generation {
            return None;
        }
        let entry = slot.entry.take()?;
        self.release(index);
        Some(entry)
    }

    /// Keeps the deadline heap within twice the live requests (plus a little), so
    /// requests that end early do not pile up in it.
    fn prune_deadlines(&mut self) {
        if self.deadlines.len() <= 2 * self.live + 64 {
            return;
        }
        let live = self.slots.iter().enumerate().filter_map(|(index, slot)| {
            let entry = slot.entry.as_ref()?;
            let correlation = (u64::from(slot.generation) << 32) | (index as u64 + 1);
            Some(Reverse((entry.deadline, correlation)))
        });
        self.deadlines = live.collect();
    }

    fn release(&mut self, index: usize) {
        self.slots[index].generation = self.slots[index].generation.wrapping_add(1);
        self.free.push(index as u32);
        self.live -= 1;
    }
}

/// What a request hears when its connection was lost before its reply: whether the
/// target ran it is unknown.
pub(crate) const CONNECTION_LOST: &str = "connection to the target was lost before the reply";

/// Outstanding requests by correlation id. A reply completes its entry only when it arrives
/// on the connection the request went out on; anything without an entry is late and dropped.
#[derive(Default)]
pub(crate) struct PendingTable {
    slots: Mutex<Slots>,
    sweep_now: Notify,
}

impl PendingTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock_unpoisoned()
    }

    /// Registers a request about to be sent on `conn`, due by `deadline` (its whole
    /// `timeout` from the caller's view). Dropping the guard (cancellation) removes the
    /// entry, so a later reply is discarded. `None` once the table is closed (shutdown).
    pub(crate) fn register(
        self: &Arc<Self>,
        conn: ConnId,
        operation: u64,
        deadline: Instant,
        timeout: Duration,
    ) -> Option<(PendingGuard, oneshot::Receiver<Result<Bytes>>)> {
        let (tx, rx) = oneshot::channel();
        let entry = Entry {
            conn,
            operation,
            deadline,
            timeout,
            done: tx,
        };
        let (correlation, wake) = {
            let mut slots = self.lock();
            if slots.closed {
                return None;
            }
            let index = match slots.free.pop() {
                Some(index) => index as usize,
                None => {
                    slots.slots.push(Slot::default());
                    slots.slots.len() - 1
                }
            };
            slots.live += 1;
            let slot = &mut slots.slots[index];
            slot.entry = Some(entry);
            let correlation = (u64::from(slot.generation) << 32) | (index as u64 + 1);
            slots.deadlines.push(Reverse((deadline, correlation)));
            slots.prune_deadlines();
            let wake = slots.next_sweep.is_none_or(|at| deadline < at);
            if wake {
                slots.next_sweep = Some(deadline);
            }
            (correlation, wake)
        };
        if wake {
            self.sweep_now.notify_one();
        }
        Some((
            PendingGuard {
                table: self.clone(),
                correlation,
            },
            rx,
        ))
    }

    /// Completes a request with what arrived on `conn` for `(correlation, operation)`.
    /// Returns false for a late or foreign reply (another connection, or an operation that
    /// is not the request's).
    pub(crate) fn complete(
        &self,
        (correlation, operation): (u64, u64),
        conn: ConnId,
        result: Result<Bytes>,
    ) -> bool {
        let entry = {
            let mut slots = self.lock();
            let index = (correlation & u64::from(u32::MAX)).wrapping_sub(1) as usize;
            let matches = slots.slots.get(index).is_some_and(|s| {
                s.generation == (correlation >> 32) as u32
                    && s.entry
                        .as_ref()
                        .is_some_and(|e| e.conn == conn && e.operation == operation)
            });
            if !matches {
                return false;
            }
            slots.take(correlation)
        };
        entry.is_some_and(|e| e.done.send(result).is_ok())
    }

    /// Fails every request sent on `conn` (the connection was lost).
    pub(crate) fn fail_connection(&self, conn: ConnId) {
        self.fail_where(
            |e| e.conn == conn,
            |_| {
                Error::refused(
                    ErrorKind::Unavailable,
                    Refusal::ConnectionLost,
                    CONNECTION_LOST,
                )
            },
        );
    }

    /// Fails every outstanding request with `ShuttingDown` and refuses new ones.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.fail_where(
            |_| true,
            |_| Error::new(ErrorKind::ShuttingDown, "the runtime is shutting down"),
        );
        self.sweep_now.notify_one();
    }

    fn fail_where(&self, which: impl Fn(&Entry) -> bool, error: impl Fn(&Entry) -> Error) {
        let failed: Vec<Entry> = {
            let mut slots = self.lock();
            let mut out = Vec::new();
            for index in 0..slots.slots.len() {
                if slots.slots[index].entry.as_ref().is_some_and(&which) {
                    if let Some(entry) = slots.slots[index].entry.take() {
                        slots.release(index);
                        out.push(entry);
                    }
                }
            }
            out
        };
        for e in failed {
            let err = error(&e);
            let _ = e.done.send(Err(err));
        }
    }

    /// Ends every request whose deadline has passed with `DeadlineExceeded`; returns the
    /// earliest deadline still outstanding.
    fn sweep(&self, now: Instant) -> Option<Instant> {
        let mut expired = Vec::new();
        let next = {
            let mut slots = self.lock();
            while let Some(Reverse((deadline, correlation))) = slots.deadlines.peek().copied() {
                if deadline > now {
                    break;
                }
                slots.deadlines.pop();
                // A request that already ended has no entry under its correlation.
                if let Some(entry) = slots.take(correlation) {
                    expired.push(entry);
                }
            }
            let next = slots
                .deadlines
                .peek()
                .map(|Reverse((deadline, _))| *deadline);
            slots.next_sweep = next;
            next
        };
        for e in expired {
            let _ = e.done.send(Err(Error::new(
                ErrorKind::DeadlineExceeded,
                format!("no reply within {:?}", e.timeout),
            )));
        }
        next
    }

    /// The node's one deadline sweeper; returns once the table is closed.
    pub(crate) async fn run_sweeper(self: Arc<Self>) {
        loop {
            let woken = self.sweep_now.notified();
            if self.lock().closed {
                return;
            }
            match self.sweep(Instant::now()) {
                Some(at) => {
                    tokio::select! {
                        _ = woken => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
                None => woken.await,
            }
        }
    }

    /// Number of outstanding requests.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().live
    }
}

/// Removes its entry when dropped.
pub(crate) struct PendingGuard {
    table: Arc<PendingTable>,
    pub(crate) correlation: u64,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.table.lock().take(self.correlation);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn register(
        table: &Arc<PendingTable>,
        conn: ConnId,
        timeout: Duration,
    ) -> (PendingGuard, oneshot::Receiver<Result<Bytes>>) {
        table
            .register(conn, OP, Instant::now() + timeout, timeout)
            .expect("the table is open")
    }

    const LONG: Duration = Duration::from_secs(30);
    /// The operation every test request carries.
    const OP: u64 = 9;

    #[tokio::test]
    async fn late_reply_after_drop_is_discarded() {
        let table = Arc::new(PendingTable::default());
        let (guard, _rx) = register(&table, 1, LONG);
        let id = guard.correlation;
        drop(guard);
        assert!(!table.complete((id, OP), 1, Ok(Bytes::new())));
        assert_eq!(table.len(), 0);
    }

    #[tokio::test]
    async fn a_reused_slot_does_not_take_the_reply_of_its_previous_request() {
        let table = Arc::new(PendingTable::default());
        let (first, _rx) = register(&table, 1, LONG);
        let stale = first.correlation;
        drop(first);
        let (second, mut rx) = register(&table, 1, LONG);
        assert_eq!(
            stale & 0xFFFF_FFFF,
            second.correlation & 0xFFFF_FFFF,
            "same slot"
        );
        assert_ne!(stale, second.correlation, "new generation");
        assert!(!table.complete((stale, OP), 1, Ok(Bytes::new())));
        assert!(rx.try_recv().is_err(), "the current request is still open");
        assert!(table.complete((second.correlation, OP), 1, Ok(Bytes::new())));
    }

    #[tokio::test]
    async fn reply_from_another_connection_is_ignored() {
        let table = Arc::new(PendingTable::default());
        let (guard, rx) = register(&table, 1, LONG);
        assert!(!table.complete((guard.correlation, OP), 2, Ok(Bytes::new())));
        assert!(table.complete((guard.correlation, OP), 1, Ok(Bytes::from_static(b"x"))));
        assert_eq!(
            rx.await
                .expect("the waiter gets a result")
                .expect("the waiter gets a result"),
            Bytes::from_static(b"x")
        );
    }

    #[tokio::test]
    async fn a_reply_that_does_not_echo_the_requests_operation_completes_nothing() {
        let table = Arc::new(PendingTable::default());
        let (guard, mut rx) = register(&table, 1, LONG);
        assert!(!table.complete((guard.correlation, OP + 1), 1, Ok(Bytes::new())));
        assert!(rx.try_recv().is_err(), "the request is still open");
        assert!(table.complete((guard.correlation, OP), 1, Ok(Bytes::new())));
    }

    #[tokio::test]
    async fn lost_connection_fails_only_its_requests() {
        let table = Arc::new(PendingTable::default());
        let (_g1, rx1) = register(&table, 1, LONG);
        let (_g2, mut rx2) = register(&table, 2, LONG);
        table.fail_connection(1);
        assert!(rx1
            .await
            .expect("the waiter gets a result")
            .unwrap_err()
            .is(ErrorKind::Unavailable));
        assert!(rx2.try_recv().is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn one_sweeper_ends_each_request_at_its_own_deadline() {
        let table = Arc::new(PendingTable::default());
        tokio::spawn(table.clone().run_sweeper());
        let start = Instant::now();
        let (_slow, slow) = register(&table, 1, Duration::from_secs(10));
        let (_fast, fast) = register(&table, 1, Duration::from_millis(200));
        let fast = fast.await.expect("the sweeper ends it");
        assert!(fast.unwrap_err().is(ErrorKind::DeadlineExceeded));
        assert_eq!(start.elapsed(), Duration::from_millis(200));
        let slow = slow.await.expect("the sweeper ends it");
        assert!(slow.unwrap_err().is(ErrorKind::DeadlineExceeded));
        assert_eq!(start.elapsed(), Duration::from_secs(10));
        assert_eq!(table.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn requests_that_end_early_neither_pile_up_in_the_deadline_heap_nor_end_a_later_one() {
        let table = Arc::new(PendingTable::default());
        for _ in 0..10_000 {
            let (guard, _rx) = register(&table, 1, Duration::from_millis(100));
            assert!(table.complete((guard.correlation, OP), 1, Ok(Bytes::new())));
        }
        assert!(
            table.lock().deadlines.len() <= 64 + 2,
            "{}",
            table.lock().deadlines.len()
        );
        // A slot reused by a request due later is not ended at its earlier tenant's deadline.
        let (_live, mut live) = register(&table, 1, Duration::from_secs(5));
        tokio::time::advance(Duration::from_millis(200)).await;
        assert_eq!(
            table.sweep(Instant::now()).map(|at| at > Instant::now()),
            Some(true)
        );
        assert!(live.try_recv().is_err(), "still open");
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(table.sweep(Instant::now()), None);
        assert!(live
            .await
            .expect("ended")
            .unwrap_err()
            .is(ErrorKind::DeadlineExceeded));
    }

    #[test]
    fn a_lost_connection_fails_its_requests_with_a_typed_refusal() {
        let table = Arc::new(PendingTable::default());
        let (_g, mut rx) = register(&table, 3, LONG);
        let (_other, mut other) = register(&table, 4, LONG);
        table.fail_connection(3);
        let lost = rx.try_recv().expect("failed").unwrap_err();
        assert!(lost.is_refusal(Refusal::ConnectionLost), "{lost:?}");
        assert!(
            other.try_recv().is_err(),
            "another connection's request stays"
        );
    }

    #[tokio::test]
    async fn closing_fails_everything_and_refuses_new_requests() {
        let table = Arc::new(PendingTable::default());
        let (_g, rx) = register(&table, 1, LONG);
        table.close();
        assert!(rx
            .await
            .expect("closed")
            .unwrap_err()
            .is(ErrorKind::ShuttingDown));
        assert!(table.register(1, OP, Instant::now() + LONG, LONG).is_none());
    }
}
