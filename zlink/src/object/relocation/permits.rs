//! The bounds on relocation work one runtime does at once (digest §7.1): moves out, moves
//! in, and state bytes in flight. Taken all or nothing, before anything is sealed: a move
//! out waits for its permits (until its deadline) without holding any; a move in that
//! finds none is refused.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::{Error, ErrorKind, Result};

/// Moves out of one runtime at once.
pub(crate) const MAX_OUTBOUND: usize = 64;
/// Moves into one runtime at once.
pub(crate) const MAX_INBOUND: usize = 64;
/// State bytes of moves in flight, in or out.
pub(crate) const MAX_BYTES_IN_FLIGHT: usize = 256 * 1024 * 1024;

/// One runtime's relocation permits.
#[derive(Debug)]
pub(crate) struct RelocationPermits {
    outbound: Arc<AtomicUsize>,
    inbound: Arc<AtomicUsize>,
    bytes: Arc<AtomicUsize>,
    /// Wakes moves waiting for permits when some return.
    returned: Arc<tokio::sync::Notify>,
}

/// Permits held by one move; they return when it is dropped.
#[derive(Debug)]
pub(crate) struct Permit {
    count: Arc<AtomicUsize>,
    bytes: Arc<AtomicUsize>,
    held_bytes: usize,
    returned: Arc<tokio::sync::Notify>,
}

impl Permit {
    /// Gives back what the move turned out not to need (its state is smaller than the
    /// bound it reserved).
    pub(crate) fn shrink_to(&mut self, bytes: usize) {
        if bytes < self.held_bytes {
            self.bytes
                .fetch_sub(self.held_bytes - bytes, Ordering::AcqRel);
            self.held_bytes = bytes;
            self.returned.notify_waiters();
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
        self.bytes.fetch_sub(self.held_bytes, Ordering::AcqRel);
        self.returned.notify_waiters();
    }
}

fn take(counter: &AtomicUsize, amount: usize, limit: usize) -> bool {
    counter
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
            used.checked_add(amount).filter(|next| *next <= limit)
        })
        .is_ok()
}

impl RelocationPermits {
    pub(crate) fn new() -> Self {
        RelocationPermits {
            outbound: Arc::new(AtomicUsize::new(0)),
            inbound: Arc::new(AtomicUsize::new(0)),
            bytes: Arc::new(AtomicUsize::new(0)),
            returned: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// A move out, waiting until `deadline` for its permits to be free.
    pub(crate) async fn outbound_by(
        &self,
        bytes: usize,
        deadline: tokio::time::Instant,
    ) -> Result<Permit> {
        loop {
            let returned = self.returned.notified();
            tokio::pin!(returned);
            returned.as_mut().enable();
            match self.outbound(bytes) {
                Ok(permit) => return Ok(permit),
                Err(e) => {
                    if tokio::time::timeout_at(deadline, returned).await.is_err() {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// A move out carrying up to `bytes` of state.
    pub(crate) fn outbound(&self, bytes: usize) -> Result<Permit> {
        self.take(&self.outbound, MAX_OUTBOUND, bytes, "moves out")
    }

    /// A move in carrying `bytes` of state.
    pub(crate) fn inbound(&self, bytes: usize) -> Result<Permit> {
        self.take(&self.inbound, MAX_INBOUND, bytes, "moves in")
    }

    fn take(
        &self,
        count: &Arc<AtomicUsize>,
        limit: usize,
        bytes: usize,
        what: &str,
    ) -> Result<Permit> {
        if !take(count, 1, limit) {
            return Err(Error::new(
                ErrorKind::CapacityExceeded,
                format!("this node runs its limit of {limit} {what} at once"),
            ));
        }
        if !take(&self.bytes, bytes, MAX_BYTES_IN_FLIGHT) {
            count.fetch_sub(1, Ordering::AcqRel);
            return Err(Error::new(
                ErrorKind::CapacityExceeded,
                format!("this node has {MAX_BYTES_IN_FLIGHT} bytes of relocation state in flight"),
            ));
        }
        Ok(Permit {
            count: count.clone(),
            bytes: self.bytes.clone(),
            held_bytes: bytes,
            returned: self.returned.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_are_all_or_nothing_and_return_when_dropped() {
        let permits = RelocationPermits::new();
        let held: Vec<_> = (0..MAX_OUTBOUND)
            .map(|_| permits.outbound(0).unwrap())
            .collect();
        assert!(permits
            .outbound(0)
            .unwrap_err()
            .is(ErrorKind::CapacityExceeded));
        assert!(permits.inbound(0).is_ok(), "inbound has its own bound");
        drop(held);
        let big = permits.outbound(MAX_BYTES_IN_FLIGHT).unwrap();
        assert!(permits
            .inbound(1)
            .unwrap_err()
            .is(ErrorKind::CapacityExceeded));
        assert_eq!(
            permits.inbound.load(Ordering::Acquire),
            0,
            "nothing kept by a refusal"
        );
        drop(big);
        assert!(permits.inbound(1).is_ok());
    }
}
