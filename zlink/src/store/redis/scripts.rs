//! The Lua scripts of the Redis provider: every conditional or multi-key change is one
//! script, so it is atomic and takes one round trip. Each script declares every key it
//! touches in KEYS, and the keys of one call share one hash tag (one slot), so the same
//! scripts run on Redis Cluster; different calls touch different slots.
//!
//! Counters and generations travel as decimal strings (Lua numbers are doubles).

/// KEYS: lease, the owner's lease generation counter. ARGV: ttl ms, max generation.
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

/// KEYS: scope holders, bodies, index, stamp.
/// ARGV: id, holder ("<lease generation>:<owner>"), owner, body, replaceable holder ('' for
/// none: the holder the caller found dead), lease generation.
/// A holder of another owner is kept unless it is exactly the replaceable one. The same
/// owner's holder under a newer lease generation is kept too: a publish that checked an
/// older lease and landed late is stale (generations compare as decimal strings: longer is
/// larger, then byte order; Lua numbers are doubles).
pub(crate) const PUBLISH_DESCRIPTOR: &str = r#"
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur and cur ~= ARGV[5] then
  local gen, owner = string.match(cur, '^(%d+):(.*)$')
  if owner ~= ARGV[3] then return {'held', cur} end
  if #gen > #ARGV[6] or (#gen == #ARGV[6] and gen > ARGV[6]) then return {'stale'} end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
redis.call('ZADD', KEYS[3], 0, ARGV[1])
redis.call('INCR', KEYS[4])
return {'published'}
"#;

/// KEYS: scope holders, bodies, index, stamp. ARGV: id, holder.
pub(crate) const WITHDRAW_DESCRIPTOR: &str = r#"
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('INCR', KEYS[4])
return 1
"#;

/// KEYS: scope holders, bodies. ARGV: id.
pub(crate) const READ_DESCRIPTOR: &str = r#"
local holder = redis.call('HGET', KEYS[1], ARGV[1])
if not holder then return {'missing'} end
return {'found', holder, redis.call('HGET', KEYS[2], ARGV[1])}
"#;

/// KEYS: scope index, holders, bodies, stamp.
/// ARGV: after ('' for the start), limit, max bytes.
/// Returns: stamp, more (0/1), last id, entries [id, holder or nil, body or nil].
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
  local holder = redis.call('HGET', KEYS[2], id)
  local body = redis.call('HGET', KEYS[3], id)
  table.insert(out, {id, holder, body})
  if body then bytes = bytes + #body end
  bytes = bytes + #id + 128
  last = id
  if bytes > tonumber(ARGV[3]) and i < #ids then
    more = 1
    break
  end
end
return {redis.call('GET', KEYS[4]) or '0', more, last, out}
"#;

/// KEYS: scope index, holders, bodies. ARGV: triples of id, the holder it was read with
/// ('' for none) and '-' when it was read without a body ('+' otherwise). Removes each
/// entry still as it was read, and leaves the change stamp alone: what is removed is dead
/// (or malformed) and never counted as a member.
pub(crate) const REMOVE_DEAD_DESCRIPTORS: &str = r#"
local removed = 0
for i = 1, #ARGV, 3 do
  local cur = redis.call('HGET', KEYS[2], ARGV[i]) or ''
  local unchanged = cur == ARGV[i + 1]
  if ARGV[i + 2] == '-' and redis.call('HEXISTS', KEYS[3], ARGV[i]) == 1 then
    unchanged = false
  end
  if unchanged then
    redis.call('HDEL', KEYS[2], ARGV[i])
    redis.call('HDEL', KEYS[3], ARGV[i])
    redis.call('ZREM', KEYS[1], ARGV[i])
    removed = removed + 1
  end
end
return removed
"#;

/// KEYS: record.
pub(crate) const READ_RECORD: &str = r#"
local h = redis.call('HMGET', KEYS[1], 'v', 'ver')
if not h[1] then return {'missing'} end
return {'found', h[1], h[2], redis.call('PTTL', KEYS[1])}
"#;

/// KEYS: group sequence, then the records. ARGV: condition count, then per condition
/// kind ('m' missing / 'v' version), key index, version; mutation count, then per mutation
/// kind ('p' put / 'd' delete), key index, value, retention ms (0 = none); last, the
/// longest retention ms. Every retention is checked before the first write, because Redis
/// does not roll back a script that fails half-way.
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
for m = 0, nm - 1 do
  local retention = tonumber(ARGV[i + m * 4 + 3])
  if not retention or retention < 0 or retention > tonumber(ARGV[#ARGV]) then
    return {'invalid'}
  end
end
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

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [(&str, &str); 16] = [
        ("claim", CLAIM_LEASE),
        ("renew", RENEW_LEASE),
        ("release", RELEASE_LEASE),
        ("read lease", READ_LEASE),
        ("publish", PUBLISH_DESCRIPTOR),
        ("withdraw", WITHDRAW_DESCRIPTOR),
        ("read descriptor", READ_DESCRIPTOR),
        ("scan", SCAN_DESCRIPTORS),
        ("remove dead", REMOVE_DEAD_DESCRIPTORS),
        ("read record", READ_RECORD),
        ("apply", APPLY_BATCH),
        ("next generation", NEXT_GENERATION),
        ("relocation put", super::super::relocation::PUT),
        ("relocation read", super::super::relocation::READ),
        ("relocation renew", super::super::relocation::RENEW),
        ("relocation delete", super::super::relocation::DELETE),
    ];

    /// Redis Cluster routes a script by its declared keys; a key built from ARGV would
    /// work on one server and fail (or silently hit the wrong slot) on a cluster.
    #[test]
    fn every_script_names_every_key_it_touches_in_keys() {
        for (name, script) in ALL {
            for call in script.split("redis.call(").skip(1) {
                let Some((command, rest)) = call.split_once(',') else {
                    continue;
                };
                let key = rest
                    .trim_start()
                    .split([',', ')'])
                    .next()
                    .unwrap_or_default();
                let key = if key.starts_with("KEYS[") {
                    rest.trim_start()
                } else {
                    key
                };
                let declared =
                    key.starts_with("KEYS[") || script.contains(&format!("local {key} = KEYS["));
                assert!(declared, "{name}: {command} touches {key:?}, not from KEYS");
            }
        }
    }
}
