//! The Redis Location Store provider: the production store, on one Redis or a Redis
//! Cluster.
//!
//! Every conditional or multi-key change within one slot is one Lua script (atomic, one
//! round trip) that declares every key it touches (see [`keys`] for the layout). Owner
//! leases live in their own slots, so a publish checks its lease first and a scan reads the
//! listed owners' leases after its page. Reads and changes use separate connections: the
//! cluster client may resend a read, never a change. A configurable key prefix. A node may
//! start while Redis is unreachable: connections are made lazily and every operation is
//! bounded by the operation timeout.

mod connection;
mod durable;
mod holder;
mod keys;
mod options;
mod relocation;
mod reply;
mod scripts;

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use redis::{ErrorKind, Script, ServerErrorKind, Value};

use self::connection::{Connection, Resend};
use self::durable::DurableWrites;
use self::holder::{holder_text, parse_holder, RawEntry};
use self::keys::{Keys, ScopeKeys};
pub use self::options::{RedisOptions, RedisTarget, ReplicaWait};
pub use self::relocation::RedisRelocationStore;
use self::reply::{bytes, int, item, remaining_ms, status, text, unsigned};
use super::types::{
    check_lease_ttl, check_page_limit, check_value, ApplyOutcome, Batch, ClaimOutcome, Condition,
    DescriptorEntry, DescriptorKey, DescriptorPage, DescriptorScope, LeaseGrant, LeaseOutcome,
    LeaseToken, Mutation, OwnerId, PublishOutcome, ReadOutcome, RecordKey, RecordKeyPage,
    StoreVersion, MAX_GENERATION, MAX_RETENTION,
};
use super::{LocationStore, StoreError, StoreResult};

/// How many bytes one scan page may carry.
const MAX_PAGE_BYTES: usize = 4 * 1024 * 1024;
/// The most SCAN steps one page of a record-key scan takes.
const MAX_SCAN_STEPS: usize = 16;
/// How often a publish retries after finding the key held by a dead lease.
const PUBLISH_ATTEMPTS: usize = 3;

/// A [`LocationStore`] kept in Redis (one server or a cluster).
pub struct RedisLocationStore {
    /// Reads: the cluster client may send them again after a lost answer.
    reads: Connection,
    /// Changes: never sent again by the client (a lost answer is `OutcomeUnknown`).
    changes: Connection,
    /// Authority writes that wait for replicas, when the option is on.
    durable: Option<DurableWrites>,
    keys: Keys,
    timeout: Duration,
    scripts: Scripts,
}

struct Scripts {
    claim: Script,
    renew: Script,
    release: Script,
    read_lease: Script,
    publish: Script,
    withdraw: Script,
    read_descriptor: Script,
    scan: Script,
    remove_dead: Script,
    read_record: Script,
    apply: Script,
    next_generation: Script,
}

impl Scripts {
    fn new() -> Self {
        Scripts {
            claim: Script::new(scripts::CLAIM_LEASE),
            renew: Script::new(scripts::RENEW_LEASE),
            release: Script::new(scripts::RELEASE_LEASE),
            read_lease: Script::new(scripts::READ_LEASE),
            publish: Script::new(scripts::PUBLISH_DESCRIPTOR),
            withdraw: Script::new(scripts::WITHDRAW_DESCRIPTOR),
            read_descriptor: Script::new(scripts::READ_DESCRIPTOR),
            scan: Script::new(scripts::SCAN_DESCRIPTORS),
            remove_dead: Script::new(scripts::REMOVE_DEAD_DESCRIPTORS),
            read_record: Script::new(scripts::READ_RECORD),
            apply: Script::new(scripts::APPLY_BATCH),
            next_generation: Script::new(scripts::NEXT_GENERATION),
        }
    }
}

/// Whether a call only reads (a failure then is plainly `Unavailable`) or may change the
/// store (a failure after sending leaves the outcome unknown).
#[derive(Clone, Copy)]
enum Effect {
    Read,
    Change,
}

/// Whether Redis refused the command without running it (a cluster mid-failover or mid
/// resharding, a server still loading or out of memory, a demoted master). Changes are
/// never sent twice by the client, so the refusal is the only attempt.
fn refused_unrun(e: &redis::RedisError) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Server(
            ServerErrorKind::TryAgain
                | ServerErrorKind::ClusterDown
                | ServerErrorKind::MasterDown
                | ServerErrorKind::BusyLoading
                | ServerErrorKind::ReadOnly
                | ServerErrorKind::Moved
                | ServerErrorKind::Ask
        ) | ErrorKind::ClusterConnectionNotFound
    ) || e.code() == Some("OOM")
}

/// Runs one Redis call within `timeout`, classifying a failure by whether the call may
/// have changed the store.
async fn run_within<T>(
    timeout: Duration,
    effect: Effect,
    call: impl Future<Output = redis::RedisResult<T>>,
) -> StoreResult<T> {
    let failed = |detail: String, sent: bool| match (effect, sent) {
        (Effect::Change, true) => StoreError::OutcomeUnknown(detail),
        _ => StoreError::Unavailable(detail),
    };
    match tokio::time::timeout(timeout, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) if e.is_connection_refusal() || refused_unrun(&e) => {
            Err(failed(e.to_string(), false))
        }
        Ok(Err(e)) if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() => {
            Err(failed(e.to_string(), true))
        }
        Ok(Err(e)) => Err(StoreError::Protocol(e.to_string())),
        Err(_) => Err(failed(format!("no answer within {timeout:?}"), true)),
    }
}

impl RedisLocationStore {
    /// Prepares a store for `options`. Does not contact Redis: the connection is made on
    /// first use and remade after failures, so a node can start during an outage.
    pub fn new(options: RedisOptions) -> crate::Result<Self> {
        options.validate()?;
        let timeout = options.operation_timeout;
        let reads = Connection::open(&options.target, timeout, Resend::Allowed)?;
        let changes = Connection::open(&options.target, timeout, Resend::Never)?;
        let durable = options
            .replica_wait
            .map(|wait| DurableWrites::new(options.target.clone(), timeout, wait));
        Ok(RedisLocationStore {
            reads,
            changes,
            durable,
            keys: Keys::new(&options.key_prefix),
            timeout,
            scripts: Scripts::new(),
        })
    }

    async fn run(
        &self,
        effect: Effect,
        call: impl Future<Output = redis::RedisResult<Value>>,
    ) -> StoreResult<Value> {
        run_within(self.timeout, effect, call).await
    }

    /// Runs one prepared script on the connection for its effect.
    async fn invoke(
        &self,
        effect: Effect,
        call: &redis::ScriptInvocation<'_>,
    ) -> StoreResult<Value> {
        let connection = match effect {
            Effect::Read => &self.reads,
            Effect::Change => &self.changes,
        };
        self.run(effect, connection.eval(call)).await
    }

    /// Bounds a whole store operation (several round trips) by the operation timeout.
    async fn bounded<T>(
        &self,
        effect: Effect,
        operation: impl Future<Output = StoreResult<T>>,
    ) -> StoreResult<T> {
        match tokio::time::timeout(self.timeout, operation).await {
            Ok(result) => result,
            Err(_) => {
                let detail = format!("the operation took over {:?}", self.timeout);
                Err(match effect {
                    Effect::Read => StoreError::Unavailable(detail),
                    Effect::Change => StoreError::OutcomeUnknown(detail),
                })
            }
        }
    }

    /// Runs an authority write: on the durable connection, then waits for the replicas,
    /// when the option is on. `slot_key` is any key of the write's slot.
    async fn invoke_authority(
        &self,
        call: &redis::ScriptInvocation<'_>,
        slot_key: &str,
        applied: impl Fn(&Value) -> bool,
    ) -> StoreResult<Value> {
        let Some(durable) = &self.durable else {
            return self.invoke(Effect::Change, call).await;
        };
        let wait = durable.wait();
        let connection = durable.take().await?;
        let reply = self.run(Effect::Change, connection.eval(call)).await?;
        if !applied(&reply) {
            return Ok(reply);
        }
        let acked = self
            .run(
                Effect::Change,
                connection.wait_for_replicas(slot_key, wait.replicas, wait.timeout),
            )
            .await?;
        let acked = int(&acked)?;
        if acked < i64::from(wait.replicas) {
            return Err(StoreError::NotReplicated(format!(
                "applied on the primary, acknowledged by {acked} of {} replicas within {:?}: \
                 a failover may lose it",
                wait.replicas, wait.timeout
            )));
        }
        Ok(reply)
    }

    /// Whether `token` is its owner's live lease (read from the owner's slot).
    async fn lease_alive(&self, token: &LeaseToken) -> StoreResult<bool> {
        let alive = self.leases_alive(std::iter::once(token)).await?;
        Ok(alive.get(token).copied().unwrap_or(false))
    }

    /// Liveness of every distinct lease among `tokens`, read in one `MGET`.
    async fn leases_alive<'a>(
        &self,
        tokens: impl Iterator<Item = &'a LeaseToken>,
    ) -> StoreResult<HashMap<LeaseToken, bool>> {
        let mut distinct: Vec<&LeaseToken> = tokens.collect();
        distinct.sort_by(|a, b| (&a.owner, a.generation).cmp(&(&b.owner, b.generation)));
        distinct.dedup();
        if distinct.is_empty() {
            return Ok(HashMap::new());
        }
        let keys: Vec<String> = distinct.iter().map(|t| self.keys.lease(&t.owner)).collect();
        let values = reply::array(self.run(Effect::Read, self.reads.get_many(&keys)).await?)?;
        if values.len() != distinct.len() {
            return Err(StoreError::Protocol(format!(
                "MGET of {} leases answered {} values",
                distinct.len(),
                values.len()
            )));
        }
        Ok(distinct
            .into_iter()
            .zip(values)
            .map(|(t, v)| {
                let alive = !matches!(v, Value::Nil) && unsigned(&v).ok() == Some(t.generation);
                (t.clone(), alive)
            })
            .collect())
    }

    /// Removes entries found dead or malformed, if they are still as they were read. A
    /// failure only leaves them for the next reader.
    async fn remove_dead(&self, keys: &ScopeKeys, dead: &[&RawEntry]) {
        if dead.is_empty() {
            return;
        }
        let mut call = self.scripts.remove_dead.prepare_invoke();
        call.key(&keys.index).key(&keys.holders).key(&keys.bodies);
        for entry in dead {
            call.arg(&entry.id)
                .arg(&entry.holder)
                .arg(if entry.bodyless { "-" } else { "+" });
        }
        match self.invoke(Effect::Change, &call).await {
            Ok(removed) => {
                tracing::debug!(index = %keys.index, removed = int(&removed).unwrap_or(0), "removed dead descriptors")
            }
            Err(e) => {
                tracing::debug!(index = %keys.index, error = %e, "dead descriptors left for the next reader")
            }
        }
    }
}

fn generation_text(token: &LeaseToken) -> String {
    token.generation.to_string()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

fn unexpected(word: &str) -> StoreError {
    StoreError::Protocol(format!("unexpected script status {word:?}"))
}

fn applied_status(value: &Value) -> bool {
    match value {
        Value::Array(items) => items
            .first()
            .and_then(|v| text(v).ok())
            .is_some_and(|w| w == "applied" || w == "next"),
        _ => false,
    }
}

#[async_trait]
impl LocationStore for RedisLocationStore {
    async fn claim_lease(&self, owner: &OwnerId, ttl: Duration) -> StoreResult<ClaimOutcome> {
        check_lease_ttl(ttl)?;
        let mut call = self.scripts.claim.prepare_invoke();
        call.key(self.keys.lease(owner))
            .key(self.keys.lease_counter(owner))
            .arg(millis(ttl))
            .arg(MAX_GENERATION.to_string());
        let (word, rest) = status(self.invoke(Effect::Change, &call).await?)?;
        match word.as_str() {
            "claimed" => Ok(ClaimOutcome::Claimed(LeaseGrant {
                token: LeaseToken {
                    owner: owner.clone(),
                    generation: unsigned(item(&rest, 0)?)?,
                },
                remaining: Duration::from_millis(remaining_ms(item(&rest, 1)?)?.unwrap_or(0)),
            })),
            "conflict" => Ok(ClaimOutcome::Conflict),
            "exhausted" => Err(StoreError::GenerationExhausted),
            other => Err(unexpected(other)),
        }
    }

    async fn renew_lease(&self, token: &LeaseToken, ttl: Duration) -> StoreResult<LeaseOutcome> {
        check_lease_ttl(ttl)?;
        let mut call = self.scripts.renew.prepare_invoke();
        call.key(self.keys.lease(&token.owner))
            .arg(generation_text(token))
            .arg(millis(ttl));
        let (word, rest) = status(self.invoke(Effect::Change, &call).await?)?;
        match word.as_str() {
            "done" => Ok(LeaseOutcome::Done(Duration::from_millis(
                remaining_ms(item(&rest, 0)?)?.unwrap_or(0),
            ))),
            "stale" => Ok(LeaseOutcome::Stale),
            other => Err(unexpected(other)),
        }
    }

    async fn release_lease(&self, token: &LeaseToken) -> StoreResult<LeaseOutcome> {
        let mut call = self.scripts.release.prepare_invoke();
        call.key(self.keys.lease(&token.owner))
            .arg(generation_text(token));
        let (word, _) = status(self.invoke(Effect::Change, &call).await?)?;
        match word.as_str() {
            "done" => Ok(LeaseOutcome::Done(Duration::ZERO)),
            "stale" => Ok(LeaseOutcome::Stale),
            other => Err(unexpected(other)),
        }
    }

    async fn read_lease(&self, owner: &OwnerId) -> StoreResult<Option<LeaseGrant>> {
        let mut call = self.scripts.read_lease.prepare_invoke();
        call.key(self.keys.lease(owner));
        let (word, rest) = status(self.invoke(Effect::Read, &call).await?)?;
        match word.as_str() {
            "missing" => Ok(None),
            "found" => Ok(Some(LeaseGrant {
                token: LeaseToken {
                    owner: owner.clone(),
                    generation: unsigned(item(&rest, 0)?)?,
                },
                remaining: Duration::from_millis(remaining_ms(item(&rest, 1)?)?.unwrap_or(0)),
            })),
            other => Err(unexpected(other)),
        }
    }

    async fn publish_descriptor(
        &self,
        token: &LeaseToken,
        key: &DescriptorKey,
        body: &[u8],
    ) -> StoreResult<PublishOutcome> {
        self.bounded(Effect::Change, async move {
            key.validate()?;
            check_value(body)?;
            // The lease lives in the owner's slot, the descriptor in its scope's: check the
            // lease first. Should it lapse before the write lands, the descriptor is simply
            // dead to every reader (a lease generation never comes back) and the next one
            // removes it.
            if !self.lease_alive(token).await? {
                return Ok(PublishOutcome::Stale);
            }
            let scope = self.keys.scope(&key.scope);
            let holder = holder_text(token);
            let mut replaceable = String::new();
            for _ in 0..PUBLISH_ATTEMPTS {
                let mut call = self.scripts.publish.prepare_invoke();
                call.key(&scope.holders)
                    .key(&scope.bodies)
                    .key(&scope.index)
                    .key(&scope.stamp)
                    .arg(&key.id)
                    .arg(&holder)
                    .arg(&token.owner.0)
                    .arg(body)
                    .arg(&replaceable)
                    .arg(generation_text(token));
                let (word, rest) = status(self.invoke(Effect::Change, &call).await?)?;
                match word.as_str() {
                    "published" => return Ok(PublishOutcome::Published),
                    "stale" => return Ok(PublishOutcome::Stale),
                    "held" => {
                        let current = text(item(&rest, 0)?)?;
                        match parse_holder(&current) {
                            Some(other) if self.lease_alive(&other).await? => {
                                return Ok(PublishOutcome::Taken(other.owner))
                            }
                            _ => replaceable = current,
                        }
                    }
                    other => return Err(unexpected(other)),
                }
            }
            Err(StoreError::Unavailable(format!(
                "descriptor {:?} changed holder {PUBLISH_ATTEMPTS} times while it was published",
                key.id
            )))
        })
        .await
    }

    async fn withdraw_descriptor(
        &self,
        token: &LeaseToken,
        key: &DescriptorKey,
    ) -> StoreResult<bool> {
        key.validate()?;
        let scope = self.keys.scope(&key.scope);
        let mut call = self.scripts.withdraw.prepare_invoke();
        call.key(&scope.holders)
            .key(&scope.bodies)
            .key(&scope.index)
            .key(&scope.stamp)
            .arg(&key.id)
            .arg(holder_text(token));
        let reply = self.invoke(Effect::Change, &call).await?;
        Ok(int(&reply)? == 1)
    }

    async fn read_descriptor(&self, key: &DescriptorKey) -> StoreResult<Option<DescriptorEntry>> {
        self.bounded(Effect::Read, async move {
            key.validate()?;
            let scope = self.keys.scope(&key.scope);
            let mut call = self.scripts.read_descriptor.prepare_invoke();
            call.key(&scope.holders).key(&scope.bodies).arg(&key.id);
            let (word, rest) = status(self.invoke(Effect::Read, &call).await?)?;
            match word.as_str() {
                "missing" => Ok(None),
                "found" => {
                    let mut raw = vec![Value::BulkString(key.id.clone().into_bytes())];
                    raw.extend(rest);
                    let Some((owner, body)) = RawEntry::parse(Value::Array(raw))?.parsed else {
                        tracing::warn!(key = %scope.holders, id = %key.id, "malformed descriptor skipped");
                        return Ok(None);
                    };
                    let owner_alive = self.lease_alive(&owner).await?;
                    Ok(Some(DescriptorEntry {
                        id: key.id.clone(),
                        body,
                        owner,
                        owner_alive,
                    }))
                }
                other => Err(unexpected(other)),
            }
            })
        .await
    }

    async fn scan_descriptors(
        &self,
        scope: &DescriptorScope,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<DescriptorPage> {
        self.bounded(Effect::Read, async move {
            scope.validate()?;
            check_page_limit(limit)?;
            let keys = self.keys.scope(scope);
            let mut call = self.scripts.scan.prepare_invoke();
            call.key(&keys.index)
                .key(&keys.holders)
                .key(&keys.bodies)
                .key(&keys.stamp)
                .arg(after.unwrap_or(""))
                .arg(limit)
                .arg(MAX_PAGE_BYTES);
            let items = reply::array(self.invoke(Effect::Read, &call).await?)?;
            let stamp = unsigned(item(&items, 0)?)?;
            let more = int(item(&items, 1)?)? == 1;
            let last = text(item(&items, 2)?)?;
            let raw: Vec<RawEntry> = reply::array(item(&items, 3)?.clone())?
                .into_iter()
                .map(RawEntry::parse)
                .collect::<StoreResult<_>>()?;
            let alive = self
                .leases_alive(raw.iter().filter_map(|r| r.parsed.as_ref().map(|(t, _)| t)))
                .await?;
            let mut entries = Vec::with_capacity(raw.len());
            let mut dead: Vec<&RawEntry> = Vec::new();
            for entry in &raw {
                let Some((owner, body)) = &entry.parsed else {
                    tracing::warn!(key = %keys.holders, id = %entry.id, "malformed descriptor skipped");
                    dead.push(entry);
                    continue;
                };
                let owner_alive = alive.get(owner).copied().unwrap_or(false);
                if !owner_alive {
                    dead.push(entry);
                }
                entries.push(DescriptorEntry {
                    id: entry.id.clone(),
                    body: body.clone(),
                    owner: owner.clone(),
                    owner_alive,
                });
            }
            self.remove_dead(&keys, &dead).await;
            Ok(DescriptorPage {
                entries,
                next: more.then_some(last),
                stamp,
            })
            })
        .await
    }

    async fn read(&self, key: &RecordKey) -> StoreResult<ReadOutcome> {
        key.validate()?;
        let mut call = self.scripts.read_record.prepare_invoke();
        call.key(self.keys.record(key));
        let (word, rest) = status(self.invoke(Effect::Read, &call).await?)?;
        match word.as_str() {
            "missing" => Ok(ReadOutcome::Missing),
            "found" => Ok(ReadOutcome::Found {
                value: Bytes::from(bytes(item(&rest, 0)?)?),
                version: StoreVersion(text(item(&rest, 1)?)?),
                remaining: remaining_ms(item(&rest, 2)?)?.map(Duration::from_millis),
            }),
            other => Err(unexpected(other)),
        }
    }

    async fn scan_record_keys(
        &self,
        name: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> StoreResult<RecordKeyPage> {
        check_page_limit(limit)?;
        RecordKey::new("scan", name).validate()?;
        let pattern = self.keys.record_pattern(name);
        let scan = async {
            let mut keys = Vec::new();
            let mut at = cursor.map(str::to_string);
            // SCAN may answer a step with no key: walk on until a page fills, the walk
            // ends, or the page took its share of steps (a sparse store answers pages
            // with few keys, or none, and a `next`, so each page stays within the
            // operation timeout).
            for _ in 0..MAX_SCAN_STEPS {
                let step = self.reads.scan(&pattern, at.as_deref(), limit);
                let (found, next) = run_within(self.timeout, Effect::Read, step).await?;
                keys.extend(
                    found
                        .iter()
                        .filter_map(|key| self.keys.group_of(key, name))
                        .map(|group| RecordKey::new(group, name)),
                );
                at = next;
                if at.is_none() || keys.len() >= limit {
                    break;
                }
            }
            Ok(RecordKeyPage { keys, next: at })
        };
        self.bounded(Effect::Read, scan).await
    }

    async fn apply(&self, batch: &Batch) -> StoreResult<ApplyOutcome> {
        self.bounded(Effect::Change, async move {
            let group = batch.validate()?;
            let mut call = self.scripts.apply.prepare_invoke();
            call.key(self.keys.sequence(group));
            let mut key_index = std::collections::HashMap::new();
            let mut index_of = |key: &RecordKey, call: &mut redis::ScriptInvocation<'_>| {
                let next = key_index.len() + 2;
                *key_index.entry(key.clone()).or_insert_with(|| {
                    call.key(self.keys.record(key));
                    next
                })
            };
            let mut args: Vec<Vec<u8>> = vec![batch.conditions.len().to_string().into_bytes()];
            for condition in &batch.conditions {
                let index = index_of(condition.key(), &mut call);
                let (kind, version) = match condition {
                    Condition::Missing(_) => ("m", String::new()),
                    Condition::Version(_, v) => ("v", v.0.clone()),
                };
                args.extend([kind.into(), index.to_string().into(), version.into_bytes()]);
            }
            args.push(batch.mutations.len().to_string().into_bytes());
            for mutation in &batch.mutations {
                let index = index_of(mutation.key(), &mut call);
                let (kind, value, retention) = match mutation {
                    Mutation::Put {
                        value, retention, ..
                    } => ("p", value.to_vec(), retention.map_or(0, millis)),
                    Mutation::Delete(_) => ("d", Vec::new(), 0),
                };
                args.extend([
                    kind.into(),
                    index.to_string().into(),
                    value,
                    retention.to_string().into(),
                ]);
            }
            for arg in args {
                call.arg(arg);
            }
            call.arg(millis(MAX_RETENTION));
            let slot_key = self.keys.sequence(group);
            let reply = self
                .invoke_authority(&call, &slot_key, applied_status)
                .await?;
            let (word, rest) = status(reply)?;
            match word.as_str() {
                "invalid" => Err(StoreError::InvalidArgument(format!(
                    "a retention must be at most {MAX_RETENTION:?}"
                ))),
                "applied" => {
                    let versions = reply::array(item(&rest, 0)?.clone())?
                        .iter()
                        .map(|v| text(v).map(StoreVersion))
                        .collect::<StoreResult<_>>()?;
                    Ok(ApplyOutcome::Applied(versions))
                }
                "conflict" => Ok(ApplyOutcome::Conflict),
                other => Err(unexpected(other)),
            }
        })
        .await
    }

    async fn next_generation(&self, counter: &RecordKey) -> StoreResult<u64> {
        self.bounded(Effect::Change, async move {
            counter.validate()?;
            let mut call = self.scripts.next_generation.prepare_invoke();
            let key = self.keys.counter(counter);
            call.key(&key).arg(MAX_GENERATION.to_string());
            let (word, rest) = status(self.invoke_authority(&call, &key, applied_status).await?)?;
            match word.as_str() {
                "next" => unsigned(item(&rest, 0)?),
                "exhausted" => Err(StoreError::GenerationExhausted),
                other => Err(unexpected(other)),
            }
        })
        .await
    }
}
