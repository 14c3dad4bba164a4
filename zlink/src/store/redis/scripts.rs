//! The Lua scripts of the Redis provider: every conditional or multi-key change is one
//! script, so it is atomic and takes one round trip. Each script touches only keys that
//! share one hash tag, so the same scripts run on Redis Cluster.
//!
//! Counters and generations travel as decimal strings (Lua numbers are doubles).

/// KEYS: lease, lease counter. ARGV: ttl ms, max generation.
pub(crate) const CLAIM_LEASE: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 1 then return {'conflict'} end
if redis.call('GET', KEYS[2]) == ARGV[2] then return {'exhausted'} end
redis.call('INCR', KEYS[2])
local gen = redis.call('GET', KEYS[2])
redis.call('SET', KEYS[1], gen, 'PX', ARGV[1])
return {'claimed', gen, redis.call('PTTL', KEYS[1])}
"#;

/// KEYS: lease. ARGV: generation, ttl ms.
pub(crate) const RENEW_LEASE: &str = r#"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {'stale'} end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {'done', redis.call('PTTL', KEYS[1])}
"#;

/// KEYS: lease. ARGV: generation.
pub(crate) const RELEASE_LEASE: &str = r#"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {'stale'} end
redis.call('DEL', KEYS[1])
return {'done', 0}
"#;

/// KEYS: lease.
pub(crate) const READ_LEASE: &str = r#"
local gen = redis.call('GET', KEYS[1])
if not gen then return {'missing'} end
return {'found', gen, redis.call('PTTL', KEYS[1])}
"#;

/// KEYS: our lease, descriptor, scope index, scope stamp.
/// ARGV: owner, lease generation, body, id, lease key prefix.
pub(crate) const PUBLISH_DESCRIPTOR: &str = r#"
if redis.call('GET', KEYS[1]) ~= ARGV[2] then return {'stale'} end
local cur = redis.call('HMGET', KEYS[2], 'owner', 'gen')
if cur[1] and cur[1] ~= ARGV[1] then
  if redis.call('GET', ARGV[5] .. cur[1]) == cur[2] then return {'taken', cur[1]} end
end
redis.call('HSET', KEYS[2], 'owner', ARGV[1], 'gen', ARGV[2], 'body', ARGV[3])
redis.call('ZADD', KEYS[3], 0, ARGV[4])
redis.call('INCR', KEYS[4])
return {'published'}
"#;

/// KEYS: descriptor, scope index, scope stamp. ARGV: owner, lease generation, id.
pub(crate) const WITHDRAW_DESCRIPTOR: &str = r#"
local cur = redis.call('HMGET', KEYS[1], 'owner', 'gen')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[3])
redis.call('INCR', KEYS[3])
return 1
"#;

/// KEYS: descriptor. ARGV: lease key prefix.
pub(crate) const READ_DESCRIPTOR: &str = r#"
local d = redis.call('HMGET', KEYS[1], 'owner', 'gen', 'body')
if not d[1] then return {'missing'} end
local alive = 0
if redis.call('GET', ARGV[1] .. d[1]) == d[2] then alive = 1 end
return {'found', d[1], d[2], alive, d[3]}
"#;

/// KEYS: scope index, scope stamp.
/// ARGV: after ('' for the start), limit, descriptor key prefix, lease key prefix, max bytes.
/// Returns: stamp, more (0/1), last id, entries [id, owner, gen, alive, body].
pub(crate) const SCAN_DESCRIPTORS: &str = r#"
local min = '-'
if ARGV[1] ~= '' then min = '(' .. ARGV[1] end
local limit = tonumber(ARGV[2])
local ids = redis.call('ZRANGEBYLEX', KEYS[1], min, '+', 'LIMIT', 0, limit)
local out = {}
local bytes = 0
local last = ''
local more = 0
if #ids == limit then more = 1 end
for i, id in ipairs(ids) do
  local d = redis.call('HMGET', ARGV[3] .. id, 'owner', 'gen', 'body')
  if d[1] then
    local alive = 0
    if redis.call('GET', ARGV[4] .. d[1]) == d[2] then alive = 1 end
    table.insert(out, {id, d[1], d[2], alive, d[3]})
    bytes = bytes + #d[3] + #id + 128
  end
  last = id
  if bytes > tonumber(ARGV[5]) and i < #ids then
    more = 1
    break
  end
end
return {redis.call('GET', KEYS[2]) or '0', more, last, out}
"#;

/// KEYS: record.
pub(crate) const READ_RECORD: &str = r#"
local h = redis.call('HMGET', KEYS[1], 'v', 'ver')
if not h[1] then return {'missing'} end
return {'found', h[1], h[2], redis.call('PTTL', KEYS[1])}
"#;

/// KEYS: group sequence, then the records. ARGV: condition count, then per condition
/// kind ('m' missing / 'v' version), key index, version; mutation count, then per mutation
/// kind ('p' put / 'd' delete), key index, value, retention ms (0 = none).
pub(crate) const APPLY_BATCH: &str = r#"
local i = 1
local nc = tonumber(ARGV[i]); i = i + 1
for c = 1, nc do
  local cur = redis.call('HGET', KEYS[tonumber(ARGV[i + 1])], 'ver')
  if ARGV[i] == 'm' then
    if cur then return {'conflict'} end
  elseif cur ~= ARGV[i + 2] then
    return {'conflict'}
  end
  i = i + 3
end
local nm = tonumber(ARGV[i]); i = i + 1
local versions = {}
for m = 1, nm do
  local key = KEYS[tonumber(ARGV[i + 1])]
  if ARGV[i] == 'p' then
    redis.call('INCR', KEYS[1])
    local ver = redis.call('GET', KEYS[1])
    redis.call('DEL', key)
    redis.call('HSET', key, 'v', ARGV[i + 2], 'ver', ver)
    local retention = tonumber(ARGV[i + 3])
    if retention > 0 then redis.call('PEXPIRE', key, retention) end
    table.insert(versions, ver)
  else
    redis.call('DEL', key)
  end
  i = i + 4
end
return {'applied', versions}
"#;

/// KEYS: counter. ARGV: max generation.
pub(crate) const NEXT_GENERATION: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then return {'exhausted'} end
redis.call('INCR', KEYS[1])
return {'next', redis.call('GET', KEYS[1])}
"#;
