//! How a descriptor's holder is stored (`<lease generation>:<owner>`), and a scanned entry
//! read without trusting its shape: a malformed one is reported, never fatal.

use bytes::Bytes;
use redis::Value;

use super::reply::{self, bytes, item, text};
use crate::store::types::{LeaseToken, OwnerId};
use crate::store::StoreResult;

/// A descriptor's holder as stored: `<lease generation>:<owner>`.
pub(super) fn holder_text(token: &LeaseToken) -> String {
    format!("{}:{}", token.generation, token.owner.0)
}

pub(super) fn parse_holder(holder: &str) -> Option<LeaseToken> {
    let (generation, owner) = holder.split_once(':')?;
    let generation = generation.parse().ok().filter(|g| *g > 0)?;
    (!owner.is_empty()).then(|| LeaseToken {
        owner: OwnerId(owner.to_string()),
        generation,
    })
}

/// One scanned descriptor before its owner's liveness is known.
pub(super) struct RawEntry {
    pub(super) id: String,
    /// The holder as stored ('' when absent), kept for the conditional removal.
    pub(super) holder: String,
    /// Whether it was read without a body.
    pub(super) bodyless: bool,
    /// Its lease and body, or `None` when malformed.
    pub(super) parsed: Option<(LeaseToken, Bytes)>,
}

impl RawEntry {
    pub(super) fn parse(raw: Value) -> StoreResult<RawEntry> {
        let items = reply::array(raw)?;
        let id = text(item(&items, 0)?)?;
        let holder = match item(&items, 1)? {
            Value::Nil => None,
            v => text(v).ok(),
        };
        let body = match item(&items, 2)? {
            Value::Nil => None,
            v => bytes(v).ok(),
        };
        let token = holder.as_deref().and_then(parse_holder);
        Ok(RawEntry {
            id,
            holder: holder.unwrap_or_default(),
            bodyless: body.is_none(),
            parsed: token.zip(body.map(Bytes::from)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_round_trips_and_damage_is_refused() {
        let token = LeaseToken {
            owner: OwnerId("a:b".into()),
            generation: 12,
        };
        assert_eq!(parse_holder(&holder_text(&token)), Some(token));
        for bad in ["", "12", "12:", ":owner", "x:owner", "0:owner", "-1:owner"] {
            assert_eq!(parse_holder(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_scanned_entry_without_a_body_is_malformed_not_an_error() {
        let raw = Value::Array(vec![
            Value::BulkString(b"n1".to_vec()),
            Value::BulkString(b"3:owner".to_vec()),
            Value::Nil,
        ]);
        let entry = RawEntry::parse(raw).unwrap();
        assert_eq!(entry.id, "n1");
        assert_eq!(entry.holder, "3:owner");
        assert!(entry.parsed.is_none());
        assert!(entry.bodyless);
        assert!(
            RawEntry::parse(Value::Int(3)).is_err(),
            "not an entry at all"
        );
    }

    fn value(bytes: Option<Vec<u8>>) -> Value {
        bytes.map_or(Value::Nil, Value::BulkString)
    }

    proptest::proptest! {
        #[test]
        fn any_stored_entry_parses_or_is_refused_without_panicking(
            id in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            holder in proptest::option::of(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)),
            body in proptest::option::of(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)),
            extra in 0usize..3,
        ) {
            let mut items = vec![Value::BulkString(id), value(holder), value(body)];
            items.truncate(3 - extra.min(1));
            let _ = RawEntry::parse(Value::Array(items));
        }

        #[test]
        fn every_token_round_trips_through_its_holder_text(
            owner in "[^\\x00]{1,40}",
            generation in 1u64..=i64::MAX as u64,
        ) {
            let token = LeaseToken { owner: OwnerId(owner), generation };
            proptest::prop_assert_eq!(parse_holder(&holder_text(&token)), Some(token));
        }
    }
}
