//! [`MemoryRelocationStore`]: the Relocation Store in process memory, the embedded default
//! for a single process. Same contract as the Redis provider: the conformance suite runs
//! on both. Time is tokio's clock.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::time::Instant;

use super::relocation::{
    check_payload, check_payload_retention, PayloadRead, PayloadRef, PutOutcome, RenewOutcome,
};
use super::{RelocationStore, StoreResult};
use crate::sync::LockUnpoisoned;

/// A [`RelocationStore`] in memory. Share one instance behind an `Arc` between every
/// runtime of the process. Expired payloads are dropped when next touched and by every
/// put, so memory follows what is live.
#[derive(Default)]
pub struct MemoryRelocationStore {
    payloads: Mutex<HashMap<PayloadRef, (Bytes, Instant)>>,
}

impl MemoryRelocationStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn payloads(&self) -> std::sync::MutexGuard<'_, HashMap<PayloadRef, (Bytes, Instant)>> {
        self.payloads.lock_unpoisoned()
    }

    /// How many payloads are stored and live (for tests and diagnostics).
    pub fn len(&self) -> usize {
        let now = Instant::now();
        self.payloads()
            .values()
            .filter(|(_, expires)| *expires > now)
            .count()
    }

    /// Whether no live payload is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl RelocationStore for MemoryRelocationStore {
    async fn put(
        &self,
        reference: &PayloadRef,
        bytes: &Bytes,
        retention: Duration,
    ) -> StoreResult<PutOutcome> {
        check_payload(bytes, retention)?;
        let now = Instant::now();
        let mut payloads = self.payloads();
        payloads.retain(|_, (_, expires)| *expires > now);
        let expires = now + retention;
        match payloads.get_mut(reference) {
            None => {
                payloads.insert(reference.clone(), (bytes.clone(), expires));
                Ok(PutOutcome::Stored {
                    expires_in: retention,
                })
            }
            Some((stored, at)) if stored == bytes => {
                *at = expires;
                Ok(PutOutcome::AlreadyStored {
                    expires_in: retention,
                })
            }
            Some(_) => Ok(PutOutcome::Conflict),
        }
    }

    async fn read(&self, reference: &PayloadRef) -> StoreResult<PayloadRead> {
        let now = Instant::now();
        Ok(match self.payloads().get(reference) {
            Some((bytes, expires)) if *expires > now => PayloadRead::Found {
                bytes: bytes.clone(),
                expires_in: *expires - now,
            },
            _ => PayloadRead::Missing,
        })
    }

    async fn renew(
        &self,
        reference: &PayloadRef,
        retention: Duration,
    ) -> StoreResult<RenewOutcome> {
        check_payload_retention(retention)?;
        let now = Instant::now();
        Ok(match self.payloads().get_mut(reference) {
            Some((_, expires)) if *expires > now => {
                *expires = now + retention;
                RenewOutcome::Renewed {
                    expires_in: retention,
                }
            }
            _ => RenewOutcome::Missing,
        })
    }

    async fn delete(&self, reference: &PayloadRef) -> StoreResult<()> {
        self.payloads().remove(reference);
        Ok(())
    }
}
