//! What a store call can fail with.

use crate::{Error, ErrorKind};

/// A failed store call. `Missing`, `Conflict` and `Stale` are not errors: they are normal
/// outcomes in each call's result type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The store could not be reached or did not answer in time, before any change could
    /// have been made (reads, or writes that were never sent).
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// A change was sent but its result was lost: it may or may not have been applied.
    /// Never guess: re-read by key and version (see [`resolve`](super::resolve)).
    #[error("store outcome unknown: {0}")]
    OutcomeUnknown(String),
    /// An authority write was applied on the primary, but fewer replicas than asked for
    /// acknowledged it in time (see `RedisOptions::wait_for_replicas`): a failover may still
    /// lose it. Re-reading cannot tell (the primary has it), so it is not
    /// [`OutcomeUnknown`](Self::OutcomeUnknown): the write does not count as applied.
    #[error("store write not replicated: {0}")]
    NotReplicated(String),
    /// The call itself was malformed (bounds, duplicate keys, mixed groups).
    #[error("invalid store argument: {0}")]
    InvalidArgument(String),
    /// A generation counter reached 2^63-1; nothing was changed and retrying cannot help.
    #[error("generation counter exhausted")]
    GenerationExhausted,
    /// The store answered something this provider does not understand.
    #[error("store protocol error: {0}")]
    Protocol(String),
}

impl StoreError {
    /// Whether the call may have changed the store.
    pub fn outcome_unknown(&self) -> bool {
        matches!(self, StoreError::OutcomeUnknown(_))
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::InvalidArgument(detail) => Error::InvalidArgument(detail),
            StoreError::GenerationExhausted => {
                Error::new(ErrorKind::CapacityExceeded, e.to_string())
            }
            StoreError::Protocol(_) => Error::new(ErrorKind::ProtocolError, e.to_string()),
            StoreError::Unavailable(_)
            | StoreError::OutcomeUnknown(_)
            | StoreError::NotReplicated(_) => Error::new(ErrorKind::Unavailable, e.to_string()),
        }
    }
}

/// The result of a store call.
pub type StoreResult<T> = std::result::Result<T, StoreError>;
