//! [`MemoryLocationStore`]: the Location Store in process memory, the embedded default for
//! a single process (several runtimes in one process share one instance). Same contract as
//! the Redis provider: the conformance suite runs on both. Time is tokio's clock, so tests
//! with paused time can expire leases instantly.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use super::types::{
    check_lease_ttl, check_page_limit, check_value, ApplyOutcome, Batch, ClaimOutcome, Condition,
    DescriptorEntry, DescriptorKey, DescriptorPage, DescriptorScope, LeaseGrant, LeaseOutcome,
    LeaseToken, Mutation, OwnerId, PublishOutcome, ReadOutcome, RecordKey, RecordKeyPage,
    StoreVersion, MAX_GENERATION,
};
use super::{LocationStore, StoreError, StoreResult};
use crate::sync::LockUnpoisoned;
use async_trait::async_trait;
use bytes::Bytes;
use tokio::time::Instant;

#[derive(Default)]
struct State {
    leases: HashMap<OwnerId, (u64, Instant)>,
    lease_counter: u64,
    descriptors: BTreeMap<DescriptorScope, BTreeMap<String, (LeaseToken, Bytes)>>,
    stamps: HashMap<DescriptorScope, u64>,
    records: HashMap<RecordKey, (Bytes, StoreVersion, Option<Instant>)>,
    sequence: u64,
    counters: HashMap<RecordKey, u64>,
}

impl State {
    fn lease_alive(&self, token: &LeaseToken, now: Instant) -> bool {
        self.leases
            .get(&token.owner)
            .is_some_and(|(generation, expires)| *generation == token.generation && *expires > now)
    }

    fn live_record(
        &self,
        key: &RecordKey,
        now: Instant,
    ) -> Option<&(Bytes, StoreVersion, Option<Instant>)> {
        self.records
            .get(key)
            .filter(|(_, _, expires)| expires.is_none_or(|e| e > now))
    }

    fn entry(&self, id: &str, token: &LeaseToken, body: &Bytes, now: Instant) -> DescriptorEntry {
        DescriptorEntry {
            id: id.to_string(),
            body: body.clone(),
            owner: token.clone(),
            owner_alive: self.lease_alive(token, now),
        }
    }
}

/// A [`LocationStore`] in memory: the single-process store. Share one instance behind an
/// `Arc` between every runtime of the process (or of one test). Nothing survives the
/// process, and other processes cannot see it: a mesh that spans processes needs Redis.
#[derive(Default)]
pub struct MemoryLocationStore {
    state: Mutex<State>,
}

impl MemoryLocationStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock_unpoisoned()
    }

    /// Sets a counter's current value, so tests can reach exhaustion.
    #[doc(hidden)]
    pub fn set_counter(&self, counter: &RecordKey, value: u64) {
        self.state().counters.insert(counter.clone(), value);
    }
}

#[async_trait]
impl LocationStore for MemoryLocationStore {
    async fn claim_lease(&self, owner: &OwnerId, ttl: Duration) -> StoreResult<ClaimOutcome> {
        check_lease_ttl(ttl)?;
        let now = Instant::now();
        let mut s = self.state();
        if s.leases
            .get(owner)
            .is_some_and(|(_, expires)| *expires > now)
        {
            return Ok(ClaimOutcome::Conflict);
        }
        if s.lease_counter >= MAX_GENERATION {
            return Err(StoreError::GenerationExhausted);
        }
        s.lease_counter += 1;
        let generation = s.lease_counter;
        s.leases.insert(owner.clone(), (generation, now + ttl));
        Ok(ClaimOutcome::Claimed(LeaseGrant {
            token: LeaseToken {
                owner: owner.clone(),
                generation,
            },
            remaining: ttl,
        }))
    }

    async fn renew_lease(&self, token: &LeaseToken, ttl: Duration) -> StoreResult<LeaseOutcome> {
        check_lease_ttl(ttl)?;
        let now = Instant::now();
        let mut s = self.state();
        if !s.lease_alive(token, now) {
            return Ok(LeaseOutcome::Stale);
        }
        s.leases
            .insert(token.owner.clone(), (token.generation, now + ttl));
        Ok(LeaseOutcome::Done(ttl))
    }

    async fn release_lease(&self, token: &LeaseToken) -> StoreResult<LeaseOutcome> {
        let mut s = self.state();
        if !s.lease_alive(token, Instant::now()) {
            return Ok(LeaseOutcome::Stale);
        }
        s.leases.remove(&token.owner);
        Ok(LeaseOutcome::Done(Duration::ZERO))
    }

    async fn read_lease(&self, owner: &OwnerId) -> StoreResult<Option<LeaseGrant>> {
        let now = Instant::now();
        let s = self.state();
        Ok(s.leases
            .get(owner)
            .filter(|(_, expires)| *expires > now)
            .map(|(generation, expires)| LeaseGrant {
                token: LeaseToken {
                    owner: owner.clone(),
                    generation: *generation,
                },
                remaining: *expires - now,
            }))
    }

    async fn publish_descriptor(
        &self,
        token: &LeaseToken,
        key: &DescriptorKey,
        body: &[u8],
    ) -> StoreResult<PublishOutcome> {
        key.validate()?;
        check_value(body)?;
        let now = Instant::now();
        let mut s = self.state();
        if !s.lease_alive(token, now) {
            return Ok(PublishOutcome::Stale);
        }
        let current = s
            .descriptors
            .get(&key.scope)
            .and_then(|d| d.get(&key.id))
            .map(|(owner, _)| owner.clone());
        if let Some(owner) = current {
            if owner.owner != token.owner && s.lease_alive(&owner, now) {
                return Ok(PublishOutcome::Taken(owner.owner));
            }
        }
        s.descriptors.entry(key.scope.clone()).or_default().insert(
            key.id.clone(),
            (token.clone(), Bytes::copy_from_slice(body)),
        );
        *s.stamps.entry(key.scope.clone()).or_default() += 1;
        Ok(PublishOutcome::Published)
    }

    async fn withdraw_descriptor(
        &self,
        token: &LeaseToken,
        key: &DescriptorKey,
    ) -> StoreResult<bool> {
        key.validate()?;
        let mut s = self.state();
        let Some(scope) = s.descriptors.get_mut(&key.scope) else {
            return Ok(false);
        };
        if scope.get(&key.id).is_none_or(|(owner, _)| owner != token) {
            return Ok(false);
        }
        scope.remove(&key.id);
        *s.stamps.entry(key.scope.clone()).or_default() += 1;
        Ok(true)
    }

    async fn read_descriptor(&self, key: &DescriptorKey) -> StoreResult<Option<DescriptorEntry>> {
        key.validate()?;
        let now = Instant::now();
        let s = self.state();
        Ok(s.descriptors
            .get(&key.scope)
            .and_then(|d| d.get(&key.id))
            .map(|(owner, body)| s.entry(&key.id, owner, body, now)))
    }

    async fn scan_record_keys(
        &self,
        name: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> StoreResult<RecordKeyPage> {
        check_page_limit(limit)?;
        RecordKey::new("scan", name).validate()?;
        let now = Instant::now();
        let s = self.state();
        // The cursor is the last group listed: one name, so a group names one record.
        let mut groups: Vec<&String> = s
            .records
            .iter()
            .filter(|(key, (_, _, expires))| {
                key.name == name
                    && expires.is_none_or(|e| e > now)
                    && cursor.is_none_or(|after| key.group.as_str() > after)
            })
            .map(|(key, _)| &key.group)
            .collect();
        groups.sort_unstable();
        let more = groups.len() > limit;
        groups.truncate(limit);
        Ok(RecordKeyPage {
            next: more.then(|| groups.last().map(|g| g.to_string())).flatten(),
            keys: groups
                .into_iter()
                .map(|group| RecordKey::new(group.clone(), name))
                .collect(),
        })
    }

    async fn scan_descriptors(
        &self,
        scope: &DescriptorScope,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<DescriptorPage> {
        scope.validate()?;
        check_page_limit(limit)?;
        let now = Instant::now();
        let mut s = self.state();
        let stamp = s.stamps.get(scope).copied().unwrap_or(0);
        let Some(all) = s.descriptors.get(scope) else {
            return Ok(DescriptorPage {
                entries: Vec::new(),
                next: None,
                stamp,
            });
        };
        let range = match after {
            Some(after) => {
                all.range::<str, _>((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded))
            }
            None => all.range::<str, _>(..),
        };
        let entries: Vec<DescriptorEntry> = range
            .take(limit)
            .map(|(id, (owner, body))| s.entry(id, owner, body, now))
            .collect();
        let next = (entries.len() == limit).then(|| entries[limit - 1].id.clone());
        // The reader cleans up: a descriptor whose lease is gone can never count again (a
        // lease generation does not come back), so removing it leaves the live set, and
        // therefore the change stamp, as it was.
        if let Some(all) = s.descriptors.get_mut(scope) {
            for dead in entries.iter().filter(|e| !e.owner_alive) {
                all.remove(&dead.id);
            }
        }
        Ok(DescriptorPage {
            entries,
            next,
            stamp,
        })
    }

    async fn read(&self, key: &RecordKey) -> StoreResult<ReadOutcome> {
        key.validate()?;
        let now = Instant::now();
        let s = self.state();
        Ok(match s.live_record(key, now) {
            None => ReadOutcome::Missing,
            Some((value, version, expires)) => ReadOutcome::Found {
                value: value.clone(),
                version: version.clone(),
                remaining: expires.map(|e| e - now),
            },
        })
    }

    async fn apply(&self, batch: &Batch) -> StoreResult<ApplyOutcome> {
        batch.validate()?;
        let now = Instant::now();
        let mut s = self.state();
        for condition in &batch.conditions {
            let current = s.live_record(condition.key(), now).map(|(_, v, _)| v);
            let holds = match condition {
                Condition::Missing(_) => current.is_none(),
                Condition::Version(_, expected) => current == Some(expected),
            };
            if !holds {
                return Ok(ApplyOutcome::Conflict);
            }
        }
        let mut versions = Vec::new();
        for mutation in &batch.mutations {
            match mutation {
                Mutation::Put {
                    key,
                    value,
                    retention,
                } => {
                    s.sequence += 1;
                    let version = StoreVersion(s.sequence.to_string());
                    let expires = retention.map(|r| now + r);
                    s.records
                        .insert(key.clone(), (value.clone(), version.clone(), expires));
                    versions.push(version);
                }
                Mutation::Delete(key) => {
                    s.records.remove(key);
                }
            }
        }
        Ok(ApplyOutcome::Applied(versions))
    }

    async fn next_generation(&self, counter: &RecordKey) -> StoreResult<u64> {
        counter.validate()?;
        let mut s = self.state();
        let value = s.counters.entry(counter.clone()).or_default();
        if *value >= MAX_GENERATION {
            return Err(StoreError::GenerationExhausted);
        }
        *value += 1;
        Ok(*value)
    }
}
