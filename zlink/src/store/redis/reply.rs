//! Reading script replies (`redis::Value`) without trusting their shape.

use redis::Value;

use crate::store::{StoreError, StoreResult};

fn bad(what: &str) -> StoreError {
    StoreError::Protocol(format!("unexpected Redis reply: {what}"))
}

/// The items of an array reply.
pub(crate) fn array(value: Value) -> StoreResult<Vec<Value>> {
    match value {
        Value::Array(items) | Value::Set(items) => Ok(items),
        Value::Nil => Ok(Vec::new()),
        _ => Err(bad("expected an array")),
    }
}

/// A bulk or simple string as bytes.
pub(crate) fn bytes(value: &Value) -> StoreResult<Vec<u8>> {
    match value {
        Value::BulkString(b) => Ok(b.clone()),
        Value::SimpleString(s) => Ok(s.clone().into_bytes()),
        Value::Okay => Ok(b"OK".to_vec()),
        Value::Int(i) => Ok(i.to_string().into_bytes()),
        _ => Err(bad("expected a string")),
    }
}

/// A string reply as UTF-8 text.
pub(crate) fn text(value: &Value) -> StoreResult<String> {
    String::from_utf8(bytes(value)?).map_err(|_| bad("text that is not UTF-8"))
}

/// An integer, sent either as an integer or as decimal text.
pub(crate) fn int(value: &Value) -> StoreResult<i64> {
    match value {
        Value::Int(i) => Ok(*i),
        other => text(other)?.parse().map_err(|_| bad("expected an integer")),
    }
}

/// A non-negative integer (counters, generations, stamps).
pub(crate) fn unsigned(value: &Value) -> StoreResult<u64> {
    match value {
        Value::Int(i) => u64::try_from(*i).map_err(|_| bad("negative integer")),
        other => text(other)?
            .parse()
            .map_err(|_| bad("expected an unsigned integer")),
    }
}

/// The first item of a reply, its status word, and the rest.
pub(crate) fn status(value: Value) -> StoreResult<(String, Vec<Value>)> {
    let mut items = array(value)?.into_iter();
    let head = items.next().ok_or_else(|| bad("empty reply"))?;
    Ok((text(&head)?, items.collect()))
}

/// Item `i` of a reply.
pub(crate) fn item(items: &[Value], i: usize) -> StoreResult<&Value> {
    items.get(i).ok_or_else(|| bad("reply too short"))
}

/// A PTTL reply in milliseconds; `None` when the key has no expiry (-1).
pub(crate) fn remaining_ms(value: &Value) -> StoreResult<Option<u64>> {
    let ms = int(value)?;
    Ok(u64::try_from(ms).ok())
}
