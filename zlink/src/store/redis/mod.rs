//! The Redis Location Store provider: the production store.
//!
//! One reconnecting connection ([`redis::aio::ConnectionManager`]); every conditional or
//! multi-key change is one Lua script (atomic, one round trip); a configurable key prefix;
//! hash tags so the same scripts run on Redis Cluster. A node may start while Redis is
//! unreachable: the connection is made lazily and every call is bounded by the operation
//! timeout.

mod keys;
mod reply;
mod scripts;

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Script, Value};

use self::keys::Keys;
use self::reply::{bytes, int, item, remaining_ms, status, text, unsigned};
use super::types::{
    check_page_limit, check_value, ApplyOutcome, Batch, ClaimOutcome, Condition, DescriptorEntry,
    DescriptorKey, DescriptorPage, DescriptorScope, LeaseGrant, LeaseOutcome, LeaseToken, Mutation,
    OwnerId, PublishOutcome, ReadOutcome, RecordKey, StoreVersion, MAX_GENERATION,
};
use super::{LocationStore, StoreError, StoreResult};

/// How many bytes one scan page may carry.
const MAX_PAGE_BYTES: usize = 4 * 1024 * 1024;

/// Settings of the Redis provider.
#[derive(Debug, Clone)]
pub struct RedisOptions {
    /// The server, e.g. `redis://127.0.0.1:6379/` or `redis+unix:///run/redis.sock`.
    pub url: String,
    /// Prefix of every key (required, no `{` or `}`); give each application or store its own.
    pub key_prefix: String,
    /// The longest one store call may take (default 5 s).
    pub operation_timeout: Duration,
}

impl RedisOptions {
    /// Options for `url` with `key_prefix` and the default 5 s operation timeout.
    pub fn new(url: impl Into<String>, key_prefix: impl Into<String>) -> Self {
        RedisOptions {
            url: url.into(),
            key_prefix: key_prefix.into(),
            operation_timeout: Duration::from_secs(5),
        }
    }

    /// Sets the operation timeout (> 0).
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }
}

/// A [`LocationStore`] kept in Redis.
pub struct RedisLocationStore {
    connection: ConnectionManager,
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

impl RedisLocationStore {
    /// Prepares a store for `options`. Does not contact Redis: the connection is made on
    /// first use and remade after failures, so a node can start during an outage.
    pub fn new(options: RedisOptions) -> crate::Result<Self> {
        if options.key_prefix.is_empty()
            || options.key_prefix.contains('{')
            || options.key_prefix.contains('}')
        {
            return Err(crate::Error::InvalidArgument(
                "the Redis key prefix must be non-empty and contain no braces".into(),
            ));
        }
        if options.operation_timeout.is_zero() {
            return Err(crate::Error::InvalidArgument(
                "the Redis operation timeout must be greater than zero".into(),
            ));
        }
        let client = redis::Client::open(options.url.as_str()).map_err(|e| {
            crate::Error::InvalidArgument(format!("Redis url {:?}: {e}", options.url))
        })?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(options.operation_timeout))
            .set_response_timeout(Some(options.operation_timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        let connection = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| crate::Error::InvalidArgument(format!("Redis connection: {e}")))?;
        Ok(RedisLocationStore {
            connection,
            keys: Keys::new(&options.key_prefix),
            timeout: options.operation_timeout,
            scripts: Scripts::new(),
        })
    }

    async fn run(
        &self,
        effect: Effect,
        call: impl Future<Output = redis::RedisResult<Value>>,
    ) -> StoreResult<Value> {
        let failed = |detail: String, sent: bool| match (effect, sent) {
            (Effect::Change, true) => StoreError::OutcomeUnknown(detail),
            _ => StoreError::Unavailable(detail),
        };
        match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) if e.is_connection_refusal() => Err(failed(e.to_string(), false)),
            Ok(Err(e)) if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() => {
                Err(failed(e.to_string(), true))
            }
            Ok(Err(e)) => Err(StoreError::Protocol(e.to_string())),
            Err(_) => Err(failed(format!("no answer within {:?}", self.timeout), true)),
        }
    }

    /// Runs one prepared script on the shared connection.
    async fn invoke(
        &self,
        effect: Effect,
        call: &redis::ScriptInvocation<'_>,
    ) -> StoreResult<Value> {
        let mut conn = self.connection.clone();
        self.run(effect, call.invoke_async(&mut conn)).await
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

fn descriptor_entry(items: &[Value], offset: usize) -> StoreResult<DescriptorEntry> {
    Ok(DescriptorEntry {
        id: text(item(items, offset)?)?,
        owner: LeaseToken {
            owner: OwnerId(text(item(items, offset + 1)?)?),
            generation: unsigned(item(items, offset + 2)?)?,
        },
        owner_alive: int(item(items, offset + 3)?)? == 1,
        body: Bytes::from(bytes(item(items, offset + 4)?)?),
    })
}

#[async_trait]
impl LocationStore for RedisLocationStore {
    async fn claim_lease(&self, owner: &OwnerId, ttl: Duration) -> StoreResult<ClaimOutcome> {
        let mut call = self.scripts.claim.prepare_invoke();
        call.key(self.keys.lease(owner))
            .key(self.keys.lease_counter())
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
        key.validate()?;
        check_value(body)?;
        let mut call = self.scripts.publish.prepare_invoke();
        call.key(self.keys.lease(&token.owner))
            .key(self.keys.descriptor(key))
            .key(self.keys.index(&key.scope))
            .key(self.keys.stamp(&key.scope))
            .arg(&token.owner.0)
            .arg(generation_text(token))
            .arg(body)
            .arg(&key.id)
            .arg(self.keys.lease_prefix());
        let (word, rest) = status(self.invoke(Effect::Change, &call).await?)?;
        match word.as_str() {
            "published" => Ok(PublishOutcome::Published),
            "stale" => Ok(PublishOutcome::Stale),
            "taken" => Ok(PublishOutcome::Taken(OwnerId(text(item(&rest, 0)?)?))),
            other => Err(unexpected(other)),
        }
    }

    async fn withdraw_descriptor(
        &self,
        token: &LeaseToken,
        key: &DescriptorKey,
    ) -> StoreResult<bool> {
        key.validate()?;
        let mut call = self.scripts.withdraw.prepare_invoke();
        call.key(self.keys.descriptor(key))
            .key(self.keys.index(&key.scope))
            .key(self.keys.stamp(&key.scope))
            .arg(&token.owner.0)
            .arg(generation_text(token))
            .arg(&key.id);
        let reply = self.invoke(Effect::Change, &call).await?;
        Ok(int(&reply)? == 1)
    }

    async fn read_descriptor(&self, key: &DescriptorKey) -> StoreResult<Option<DescriptorEntry>> {
        key.validate()?;
        let mut call = self.scripts.read_descriptor.prepare_invoke();
        call.key(self.keys.descriptor(key))
            .arg(self.keys.lease_prefix());
        let (word, rest) = status(self.invoke(Effect::Read, &call).await?)?;
        match word.as_str() {
            "missing" => Ok(None),
            "found" => {
                let mut items = vec![Value::BulkString(key.id.clone().into_bytes())];
                items.extend(rest);
                Ok(Some(descriptor_entry(&items, 0)?))
            }
            other => Err(unexpected(other)),
        }
    }

    async fn scan_descriptors(
        &self,
        scope: &DescriptorScope,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<DescriptorPage> {
        scope.validate()?;
        check_page_limit(limit)?;
        let mut call = self.scripts.scan.prepare_invoke();
        call.key(self.keys.index(scope))
            .key(self.keys.stamp(scope))
            .arg(after.unwrap_or(""))
            .arg(limit)
            .arg(self.keys.descriptor_prefix(scope))
            .arg(self.keys.lease_prefix())
            .arg(MAX_PAGE_BYTES);
        let items = reply::array(self.invoke(Effect::Read, &call).await?)?;
        let stamp = unsigned(item(&items, 0)?)?;
        let more = int(item(&items, 1)?)? == 1;
        let last = text(item(&items, 2)?)?;
        let mut entries = Vec::new();
        for raw in reply::array(item(&items, 3)?.clone())? {
            entries.push(descriptor_entry(&reply::array(raw)?, 0)?);
        }
        Ok(DescriptorPage {
            entries,
            next: more.then_some(last),
            stamp,
        })
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

    async fn apply(&self, batch: &Batch) -> StoreResult<ApplyOutcome> {
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
        let (word, rest) = status(self.invoke(Effect::Change, &call).await?)?;
        match word.as_str() {
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
    }

    async fn next_generation(&self, counter: &RecordKey) -> StoreResult<u64> {
        counter.validate()?;
        let mut call = self.scripts.next_generation.prepare_invoke();
        call.key(self.keys.counter(counter))
            .arg(MAX_GENERATION.to_string());
        let (word, rest) = status(self.invoke(Effect::Change, &call).await?)?;
        match word.as_str() {
            "next" => unsigned(item(&rest, 0)?),
            "exhausted" => Err(StoreError::GenerationExhausted),
            other => Err(unexpected(other)),
        }
    }
}
