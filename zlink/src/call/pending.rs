//! The pending-request table: each outstanding request ends exactly once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::oneshot;

use crate::link::ConnId;
use crate::{Error, ErrorKind, Result};

type Completion = oneshot::Sender<Result<Bytes>>;

struct Entry {
    conn: ConnId,
    done: Completion,
}

/// Outstanding requests by correlation id. A reply completes its entry only when it arrives
/// on the connection the request went out on; anything without an entry is late and dropped.
#[derive(Default)]
pub(crate) struct PendingTable {
    next: AtomicU64,
    entries: Mutex<HashMap<u64, Entry>>,
}

impl PendingTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a request about to be sent on `conn`. Dropping the guard (cancellation,
    /// timeout) removes the entry, so a later reply is discarded.
    pub(crate) fn register(
        self: &Arc<Self>,
        conn: ConnId,
    ) -> (PendingGuard, oneshot::Receiver<Result<Bytes>>) {
        let correlation = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = oneshot::channel();
        self.lock().insert(correlation, Entry { conn, done: tx });
        (
            PendingGuard {
                table: self.clone(),
                correlation,
            },
            rx,
        )
    }

    /// Completes a request with what arrived on `conn`. Returns false for a late or foreign
    /// reply.
    pub(crate) fn complete(&self, correlation: u64, conn: ConnId, result: Result<Bytes>) -> bool {
        let mut entries = self.lock();
        match entries.get(&correlation) {
            Some(e) if e.conn == conn => {
                let entry = entries.remove(&correlation);
                drop(entries);
                entry.is_some_and(|e| e.done.send(result).is_ok())
            }
            _ => false,
        }
    }

    /// Fails every request sent on `conn` (the connection was lost).
    pub(crate) fn fail_connection(&self, conn: ConnId) {
        let failed: Vec<Entry> = {
            let mut entries = self.lock();
            let ids: Vec<u64> = entries
                .iter()
                .filter(|(_, e)| e.conn == conn)
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| entries.remove(id)).collect()
        };
        for e in failed {
            let _ = e.done.send(Err(Error::new(
                ErrorKind::Unavailable,
                "connection to the target was lost before the reply",
            )));
        }
    }

    /// Fails every outstanding request with `ShuttingDown`.
    pub(crate) fn fail_all_shutdown(&self) {
        let all: Vec<Entry> = self.lock().drain().map(|(_, e)| e).collect();
        for e in all {
            let _ = e.done.send(Err(Error::new(
                ErrorKind::ShuttingDown,
                "the runtime is shutting down",
            )));
        }
    }

    /// Number of outstanding requests.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// Removes its entry when dropped.
pub(crate) struct PendingGuard {
    table: Arc<PendingTable>,
    pub(crate) correlation: u64,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.table.lock().remove(&self.correlation);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn late_reply_after_drop_is_discarded() {
        let table = Arc::new(PendingTable::default());
        let (guard, _rx) = table.register(1);
        let id = guard.correlation;
        drop(guard);
        assert!(!table.complete(id, 1, Ok(Bytes::new())));
        assert_eq!(table.len(), 0);
    }

    #[tokio::test]
    async fn reply_from_another_connection_is_ignored() {
        let table = Arc::new(PendingTable::default());
        let (guard, rx) = table.register(1);
        assert!(!table.complete(guard.correlation, 2, Ok(Bytes::new())));
        assert!(table.complete(guard.correlation, 1, Ok(Bytes::from_static(b"x"))));
        assert_eq!(
            rx.await
                .expect("the waiter gets a result")
                .expect("the waiter gets a result"),
            Bytes::from_static(b"x")
        );
    }

    #[tokio::test]
    async fn lost_connection_fails_only_its_requests() {
        let table = Arc::new(PendingTable::default());
        let (_g1, rx1) = table.register(1);
        let (_g2, mut rx2) = table.register(2);
        table.fail_connection(1);
        assert!(rx1
            .await
            .expect("the waiter gets a result")
            .unwrap_err()
            .is(ErrorKind::Unavailable));
        assert!(rx2.try_recv().is_err());
    }
}
