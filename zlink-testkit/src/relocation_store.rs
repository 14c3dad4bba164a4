//! [`FaultyRelocationStore`]: a Relocation Store wrapper whose puts can be held at a gate
//! and whose reads can lose what was stored, so a test can stop a move in the middle (the
//! source sealed and captured, its ingress held) or make the target miss the moved state.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::watch;
use zlink::store::{
    PayloadRead, PayloadRef, PutOutcome, RelocationStore, RenewOutcome, StoreResult,
};

/// What a read of a [`FaultyRelocationStore`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFault {
    /// What is stored.
    None,
    /// Nothing, whatever is stored.
    Missing,
    /// The stored bytes but the last one.
    Short,
}

/// Wraps a Relocation Store. Puts pass through while the gate is open (the default);
/// [`hold_puts`](Self::hold_puts) makes every put wait until
/// [`release_puts`](Self::release_puts). Reads pass through unless a [`ReadFault`] is set.
pub struct FaultyRelocationStore {
    inner: Arc<dyn RelocationStore>,
    open: watch::Sender<bool>,
    puts_waiting: AtomicUsize,
    read_fault: AtomicU8,
    reads: AtomicUsize,
}

impl FaultyRelocationStore {
    /// A wrapper around `inner` that injects nothing yet.
    pub fn new(inner: Arc<dyn RelocationStore>) -> Arc<Self> {
        Arc::new(FaultyRelocationStore {
            inner,
            open: watch::Sender::new(true),
            puts_waiting: AtomicUsize::new(0),
            read_fault: AtomicU8::new(ReadFault::None as u8),
            reads: AtomicUsize::new(0),
        })
    }

    /// From now on a put waits at the gate (for ever, unless released).
    pub fn hold_puts(&self) {
        self.open.send_replace(false);
    }

    /// Opens the gate: waiting puts go on, new ones pass.
    pub fn release_puts(&self) {
        self.open.send_replace(true);
    }

    /// How many puts reached the gate while it was closed.
    pub fn puts_held(&self) -> usize {
        self.puts_waiting.load(Ordering::SeqCst)
    }

    /// What reads return from now on.
    pub fn set_read_fault(&self, fault: ReadFault) {
        self.read_fault.store(fault as u8, Ordering::SeqCst);
    }

    /// How many reads were made.
    pub fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }

    fn read_fault(&self) -> ReadFault {
        match self.read_fault.load(Ordering::SeqCst) {
            x if x == ReadFault::Missing as u8 => ReadFault::Missing,
            x if x == ReadFault::Short as u8 => ReadFault::Short,
            _ => ReadFault::None,
        }
    }
}

#[async_trait]
impl RelocationStore for FaultyRelocationStore {
    async fn put(
        &self,
        reference: &PayloadRef,
        bytes: &Bytes,
        retention: Duration,
    ) -> StoreResult<PutOutcome> {
        let mut open = self.open.subscribe();
        if !*open.borrow() {
            self.puts_waiting.fetch_add(1, Ordering::SeqCst);
            // The sender lives as long as `self`: the wait ends only when the gate opens.
            let _ = open.wait_for(|open| *open).await;
        }
        self.inner.put(reference, bytes, retention).await
    }

    async fn read(&self, reference: &PayloadRef) -> StoreResult<PayloadRead> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        let read = self.inner.read(reference).await?;
        Ok(match (self.read_fault(), read) {
            (ReadFault::Missing, _) => PayloadRead::Missing,
            (ReadFault::Short, PayloadRead::Found { bytes, expires_in }) => PayloadRead::Found {
                bytes: bytes.slice(..bytes.len().saturating_sub(1)),
                expires_in,
            },
            (_, read) => read,
        })
    }

    async fn renew(
        &self,
        reference: &PayloadRef,
        retention: Duration,
    ) -> StoreResult<RenewOutcome> {
        self.inner.renew(reference, retention).await
    }

    async fn delete(&self, reference: &PayloadRef) -> StoreResult<()> {
        self.inner.delete(reference).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference() -> PayloadRef {
        PayloadRef::new("r-1").unwrap()
    }

    #[tokio::test]
    async fn a_held_put_waits_for_the_gate_and_a_read_fault_loses_what_was_stored() {
        let store = FaultyRelocationStore::new(<dyn RelocationStore>::in_memory());
        let day = Duration::from_secs(86_400);
        store.hold_puts();
        let put = tokio::spawn({
            let store = store.clone();
            async move {
                store
                    .put(&reference(), &Bytes::from_static(b"abc"), day)
                    .await
            }
        });
        while store.puts_held() == 0 {
            tokio::task::yield_now().await;
        }
        assert!(!put.is_finished());
        store.release_puts();
        put.await.unwrap().unwrap();
        let found = |read| matches!(read, PayloadRead::Found { bytes, .. } if bytes == "abc");
        assert!(found(store.read(&reference()).await.unwrap()));
        store.set_read_fault(ReadFault::Short);
        let short = store.read(&reference()).await.unwrap();
        assert!(matches!(short, PayloadRead::Found { bytes, .. } if bytes == "ab"));
        store.set_read_fault(ReadFault::Missing);
        assert!(matches!(
            store.read(&reference()).await.unwrap(),
            PayloadRead::Missing
        ));
        assert_eq!(store.reads(), 3);
    }
}
