//! The Redis Relocation Store provider: one Redis string per payload reference, its
//! retention a millisecond TTL. Each call is one single-key script, so it runs the same on
//! one server and on a Redis Cluster (each payload hashes to its own slot).

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use redis::{Script, Value};

use super::connection::{Connection, Resend};
use super::reply::{bytes, int, item, status};
use super::{run_within, Effect, RedisOptions};
use crate::store::relocation::{
    check_payload, check_payload_retention, PayloadRead, PayloadRef, PutOutcome, RenewOutcome,
};
use crate::store::{RelocationStore, StoreError, StoreResult};

/// KEYS: the payload. ARGV: bytes, retention ms. Equal bytes restart the retention;
/// different bytes change nothing.
pub(super) const PUT: &str = r#"
local cur = redis.call('GET', KEYS[1])
if not cur then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {'stored'}
end
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'already'}
end
return {'conflict'}
"#;

/// KEYS: the payload. The bytes and their remaining TTL, read together. A payload with
/// under a millisecond left is expired now (PTTL rounds it to 0): it is removed, so a put
/// right after this read finds it gone, as the read said.
pub(super) const READ: &str = r#"
local cur = redis.call('GET', KEYS[1])
if not cur then return {'missing'} end
local ttl = redis.call('PTTL', KEYS[1])
if ttl >= 0 and ttl < 1 then
  redis.call('DEL', KEYS[1])
  return {'missing'}
end
return {'found', cur, ttl}
"#;

/// KEYS: the payload. ARGV: retention ms.
pub(super) const RENEW: &str = "return redis.call('PEXPIRE', KEYS[1], ARGV[1])";

/// KEYS: the payload.
pub(super) const DELETE: &str = "return redis.call('DEL', KEYS[1])";

/// A [`RelocationStore`] kept in Redis (one server or a cluster). It may share a Redis
/// deployment with the Location Store or not; give it its own key prefix either way.
pub struct RedisRelocationStore {
    reads: Connection,
    changes: Connection,
    prefix: String,
    timeout: Duration,
    put: Script,
    read: Script,
    renew: Script,
    delete: Script,
}

impl RedisRelocationStore {
    /// Prepares a store for `options` (the replica wait does not apply to payloads). Does
    /// not contact Redis: the connection is made on first use.
    pub fn new(options: RedisOptions) -> crate::Result<Self> {
        options.validate()?;
        let timeout = options.operation_timeout;
        Ok(RedisRelocationStore {
            reads: Connection::open(&options.target, timeout, Resend::Allowed)?,
            changes: Connection::open(&options.target, timeout, Resend::Never)?,
            prefix: options.key_prefix,
            timeout,
            put: Script::new(PUT),
            read: Script::new(READ),
            renew: Script::new(RENEW),
            delete: Script::new(DELETE),
        })
    }

    fn key(&self, reference: &PayloadRef) -> String {
        format!(
            "{{{}:r:{}:{}}}",
            self.prefix,
            reference.as_str().len(),
            reference.as_str()
        )
    }

    async fn eval(&self, effect: Effect, call: &redis::ScriptInvocation<'_>) -> StoreResult<Value> {
        let connection = match effect {
            Effect::Read => &self.reads,
            Effect::Change => &self.changes,
        };
        run_within(self.timeout, effect, connection.eval(call)).await
    }
}

fn millis(retention: Duration) -> String {
    retention.as_millis().max(1).to_string()
}

fn unexpected(word: &str) -> StoreError {
    StoreError::Protocol(format!("unexpected relocation store reply {word:?}"))
}

#[async_trait]
impl RelocationStore for RedisRelocationStore {
    async fn put(
        &self,
        reference: &PayloadRef,
        payload: &Bytes,
        retention: Duration,
    ) -> StoreResult<PutOutcome> {
        check_payload(payload, retention)?;
        let mut call = self.put.prepare_invoke();
        call.key(self.key(reference));
        call.arg(payload.as_ref()).arg(millis(retention));
        let (word, _) = status(self.eval(Effect::Change, &call).await?)?;
        match word.as_str() {
            "stored" => Ok(PutOutcome::Stored {
                expires_in: retention,
            }),
            "already" => Ok(PutOutcome::AlreadyStored {
                expires_in: retention,
            }),
            "conflict" => Ok(PutOutcome::Conflict),
            other => Err(unexpected(other)),
        }
    }

    async fn read(&self, reference: &PayloadRef) -> StoreResult<PayloadRead> {
        let mut call = self.read.prepare_invoke();
        call.key(self.key(reference));
        let (word, rest) = status(self.eval(Effect::Read, &call).await?)?;
        match word.as_str() {
            "missing" => Ok(PayloadRead::Missing),
            "found" => {
                let ttl = int(item(&rest, 1)?)?;
                // -1 (no TTL) is impossible for a payload this provider wrote; -2 is a key
                // that expired between the two reads of the script (it cannot, but a reply
                // that says so is read as missing rather than trusted).
                if ttl <= 0 {
                    return Ok(PayloadRead::Missing);
                }
                Ok(PayloadRead::Found {
                    bytes: Bytes::from(bytes(item(&rest, 0)?)?),
                    expires_in: Duration::from_millis(ttl.unsigned_abs()),
                })
            }
            other => Err(unexpected(other)),
        }
    }

    async fn renew(
        &self,
        reference: &PayloadRef,
        retention: Duration,
    ) -> StoreResult<RenewOutcome> {
        check_payload_retention(retention)?;
        let mut call = self.renew.prepare_invoke();
        call.key(self.key(reference)).arg(millis(retention));
        Ok(match int(&self.eval(Effect::Change, &call).await?)? {
            1 => RenewOutcome::Renewed {
                expires_in: retention,
            },
            _ => RenewOutcome::Missing,
        })
    }

    async fn delete(&self, reference: &PayloadRef) -> StoreResult<()> {
        let mut call = self.delete.prepare_invoke();
        call.key(self.key(reference));
        self.eval(Effect::Change, &call).await?;
        Ok(())
    }
}
