//! The [`RelocationStore`] trait: immutable payloads a relocation needs outside the
//! connection between the two nodes, under framework-issued references: the terminal
//! records of requests completed after a move (so an old owner that lost the connection
//! still learns a relayed request's result), and a captured state larger than one message
//! (over 1 MiB), which the target reads once and which is deleted after the move. The
//! queue, the timers and a small state travel over the ordered connection itself.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use super::{MemoryRelocationStore, StoreError, StoreResult, MAX_RETENTION};

/// The longest payload reference, in bytes.
pub const MAX_PAYLOAD_REF_BYTES: usize = 4096;
/// The largest payload one reference holds: 64 MiB of state plus a 23-byte envelope.
pub const MAX_PAYLOAD_BYTES: usize = 64 * 1024 * 1024 + 23;
/// How long a relocation payload is kept unless renewed.
pub const DEFAULT_PAYLOAD_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// A framework-issued reference to one immutable payload (1..=4096 bytes of UTF-8). A
/// reference is never reused for different bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PayloadRef(String);

impl PayloadRef {
    /// Checks the bounds of a reference.
    pub fn new(reference: impl Into<String>) -> StoreResult<Self> {
        let reference = reference.into();
        if reference.is_empty() || reference.len() > MAX_PAYLOAD_REF_BYTES {
            return Err(StoreError::InvalidArgument(format!(
                "a payload reference must be 1..={MAX_PAYLOAD_REF_BYTES} bytes, got {}",
                reference.len()
            )));
        }
        Ok(PayloadRef(reference))
    }

    /// The reference as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for PayloadRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a [`put`](RelocationStore::put) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutOutcome {
    /// The payload is stored; it expires after `expires_in` (the store's clock).
    Stored {
        /// Time left until it expires.
        expires_in: Duration,
    },
    /// The same bytes were already stored under the reference (a repeated put after a
    /// lost answer); their retention now runs from this call.
    AlreadyStored {
        /// Time left until it expires.
        expires_in: Duration,
    },
    /// Different bytes are stored under the reference; nothing changed.
    Conflict,
}

/// What a [`read`](RelocationStore::read) found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadRead {
    /// The payload, and the time left until it expires.
    Found {
        /// The stored bytes, exactly as put.
        bytes: Bytes,
        /// Time left until it expires.
        expires_in: Duration,
    },
    /// Nothing is stored under the reference (never put, deleted, or expired).
    Missing,
}

/// What a [`renew`](RelocationStore::renew) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenewOutcome {
    /// The payload now expires after `expires_in`.
    Renewed {
        /// Time left until it expires.
        expires_in: Duration,
    },
    /// Nothing is stored under the reference.
    Missing,
}

/// The Relocation Store: immutable payloads under framework-issued references, each with a
/// retention the provider's own clock enforces.
///
/// Every method is one atomic step. A call whose answer was lost returns
/// [`StoreError::OutcomeUnknown`]: the caller finds out what happened with a
/// [`read`](Self::read) or a put of the same bytes, never by guessing. `Missing`,
/// `AlreadyStored` and `Conflict` are normal outcomes, not errors. Correctness never
/// depends on a transaction across this store and the Location Store: they may share a
/// Redis deployment or not.
///
/// Providers must pass the conformance suite in `zlink-testkit`.
#[async_trait]
pub trait RelocationStore: Send + Sync + 'static {
    /// Stores `bytes` under `reference` for `retention`, unless other bytes are there.
    async fn put(
        &self,
        reference: &PayloadRef,
        bytes: &Bytes,
        retention: Duration,
    ) -> StoreResult<PutOutcome>;

    /// Reads the payload under `reference`.
    async fn read(&self, reference: &PayloadRef) -> StoreResult<PayloadRead>;

    /// Restarts the retention of the payload under `reference`.
    async fn renew(&self, reference: &PayloadRef, retention: Duration)
        -> StoreResult<RenewOutcome>;

    /// Removes the payload under `reference`; removing nothing also succeeds.
    async fn delete(&self, reference: &PayloadRef) -> StoreResult<()>;
}

impl dyn RelocationStore {
    /// A fresh in-memory Relocation Store: the embedded default for a single process.
    /// Register the same instance on every runtime of the process. See
    /// [`MemoryRelocationStore`].
    pub fn in_memory() -> std::sync::Arc<dyn RelocationStore> {
        std::sync::Arc::new(MemoryRelocationStore::new())
    }
}

/// Checks a payload's size and retention before any provider work.
pub fn check_payload(bytes: &[u8], retention: Duration) -> StoreResult<()> {
    if bytes.len() > MAX_PAYLOAD_BYTES {
        return Err(StoreError::InvalidArgument(format!(
            "a payload of {} bytes exceeds {MAX_PAYLOAD_BYTES}",
            bytes.len()
        )));
    }
    check_payload_retention(retention)
}

/// Checks a payload retention: at least a millisecond (the providers' resolution) and at
/// most [`MAX_RETENTION`].
pub fn check_payload_retention(retention: Duration) -> StoreResult<()> {
    if retention < Duration::from_millis(1) || retention > MAX_RETENTION {
        return Err(StoreError::InvalidArgument(format!(
            "a payload retention must be 1 ms..={MAX_RETENTION:?}, got {retention:?}"
        )));
    }
    Ok(())
}
