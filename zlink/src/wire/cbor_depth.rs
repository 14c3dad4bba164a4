//! A look at how deep a CBOR item nests, without decoding it: payloads that are plainly
//! shallow take the decoder's cheap entry (a small scratch buffer); every other payload
//! is decoded under the explicit depth limit, so the limit holds either way.

/// An open container's items still to come; indefinite ones end at a break.
const INDEFINITE: u64 = u64::MAX;

/// Whether the first CBOR item of `bytes` is whole and nests fewer than `limit` levels,
/// counting every array, map, tag and indefinite-length string as one. `false` when it
/// nests deeper, or when the look cannot tell (truncated or malformed input): then the
/// caller decodes under its explicit limit, which reports the real error.
pub(crate) fn nests_below(bytes: &[u8], limit: usize) -> bool {
    const MAX_TRACKED: usize = 64;
    if limit > MAX_TRACKED {
        return false;
    }
    let mut owed = [0u64; MAX_TRACKED];
    let mut depth = 0usize;
    let mut at = 0usize;
    loop {
        let Some(&initial) = bytes.get(at) else {
            return false;
        };
        at += 1;
        let opened = if initial == 0xff {
            // A break closes the innermost container, which must be indefinite.
            if depth == 0 || owed[depth - 1] != INDEFINITE {
                return false;
            }
            depth -= 1;
            None
        } else {
            let major = initial >> 5;
            let argument = match initial & 0x1f {
                small @ 0..=23 => Some(u64::from(small)),
                width @ 24..=27 => {
                    let len = 1usize << (width - 24);
                    let Some(raw) = bytes.get(at..at + len) else {
                        return false;
                    };
                    at += len;
                    Some(raw.iter().fold(0u64, |n, b| (n << 8) | u64::from(*b)))
                }
                31 => None,
                _ => return false,
            };
            match (major, argument) {
                (0 | 1 | 7, Some(_)) => None,
                (2 | 3, Some(len)) => {
                    let remaining = (bytes.len() - at) as u64;
                    if len > remaining {
                        return false;
                    }
                    at += len as usize;
                    None
                }
                (2..=5, None) => Some(INDEFINITE),
                (4, Some(items)) => Some(items),
                (5, Some(pairs)) => match pairs.checked_mul(2) {
                    Some(items) if items != INDEFINITE => Some(items),
                    _ => return false,
                },
                (6, Some(_)) => Some(1),
                _ => return false,
            }
        };
        if let Some(items) = opened {
            if depth + 1 >= limit {
                return false;
            }
            owed[depth] = items;
            depth += 1;
            if items != 0 {
                continue;
            }
            // An empty container is complete as soon as it opens.
            depth -= 1;
        }
        // One item is complete: it counts against its container, which may complete too.
        loop {
            if depth == 0 {
                return true;
            }
            let left = &mut owed[depth - 1];
            if *left == INDEFINITE {
                break;
            }
            *left -= 1;
            if *left > 0 {
                break;
            }
            depth -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cbor(value: &ciborium::Value) -> Vec<u8> {
        let mut out = Vec::new();
        ciborium::ser::into_writer(value, &mut out).unwrap();
        out
    }

    fn nested(levels: usize) -> ciborium::Value {
        (0..levels).fold(ciborium::Value::Integer(1.into()), |inner, _| {
            ciborium::Value::Array(vec![inner])
        })
    }

    #[test]
    fn plain_values_and_shallow_containers_are_below_the_limit() {
        for value in [
            ciborium::Value::Integer(7.into()),
            ciborium::Value::Bytes(vec![1; 300]),
            ciborium::Value::Text("x".repeat(70)),
            ciborium::Value::Array(vec![]),
            ciborium::Value::Map(vec![(1.into(), nested(3))]),
            ciborium::Value::Tag(2, Box::new(ciborium::Value::Bytes(vec![9]))),
        ] {
            assert!(nests_below(&cbor(&value), 64), "{value:?}");
        }
    }

    #[test]
    fn depth_is_counted_per_level_and_the_limit_is_strict() {
        // `nested(n)` opens n arrays.
        assert!(nests_below(&cbor(&nested(62)), 64));
        assert!(nests_below(&cbor(&nested(63)), 64));
        assert!(!nests_below(&cbor(&nested(64)), 64));
        assert!(!nests_below(&cbor(&nested(200)), 64));
    }

    #[test]
    fn a_payload_nested_past_the_wire_limit_is_refused_by_either_entry() {
        let decode =
            |levels| super::super::cbor_decode_bounded::<ciborium::Value>(&cbor(&nested(levels)));
        assert_eq!(
            decode(63).ok(),
            Some(nested(63)),
            "63 levels take the cheap entry"
        );
        assert!(decode(64).is_ok(), "64 levels are decoded under the limit");
        let refused = decode(65).expect_err("65 levels exceed the limit of 64");
        assert!(refused.contains("RecursionLimitExceeded"), "{refused}");
        // 100 000 one-item arrays, written out directly (a Value that deep would not drop).
        let mut deep = vec![0x81u8; 100_000];
        deep.push(0x01);
        let deep = super::super::cbor_decode_bounded::<ciborium::Value>(&deep);
        assert!(deep.is_err(), "and no stack is spent on deeper input");
    }

    #[test]
    fn indefinite_containers_end_at_their_break() {
        // [_ 1, [_ 2] ] as indefinite arrays, then a trailing byte.
        let bytes = [0x9f, 0x01, 0x9f, 0x02, 0xff, 0xff, 0x00];
        assert!(nests_below(&bytes, 64));
        // A stray break, and a definite array closed by a break, are not whole items.
        assert!(!nests_below(&[0xff], 64));
        assert!(!nests_below(&[0x81, 0xff], 64));
    }

    #[test]
    fn truncated_or_reserved_input_cannot_be_told() {
        assert!(!nests_below(&[], 64));
        assert!(!nests_below(&[0x82, 0x01], 64), "an array missing an item");
        assert!(
            !nests_below(&[0x5a, 0xff, 0xff, 0xff, 0xff], 64),
            "a 4 GiB byte string"
        );
        assert!(
            !nests_below(&[0x1c], 64),
            "reserved additional information 28"
        );
        assert!(!nests_below(
            &[0xbb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            64
        ));
        assert!(
            !nests_below(&cbor(&nested(3)), 65),
            "limits above 64 are never looked at"
        );
    }

    fn value() -> impl Strategy<Value = ciborium::Value> {
        let leaf = prop_oneof![
            any::<i64>().prop_map(|n| ciborium::Value::Integer(n.into())),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(ciborium::Value::Bytes),
            "[a-z]{0,30}".prop_map(ciborium::Value::Text),
        ];
        leaf.prop_recursive(80, 200, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(ciborium::Value::Array),
                proptest::collection::vec((inner.clone(), inner.clone()), 0..3)
                    .prop_map(ciborium::Value::Map),
                (0u64..100, inner).prop_map(|(t, v)| ciborium::Value::Tag(t, Box::new(v))),
            ]
        })
    }

    /// How many arrays, maps and tags `value` nests.
    fn depth(value: &ciborium::Value) -> usize {
        use ciborium::Value::{Array, Map, Tag};
        match value {
            Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
            Map(pairs) => {
                1 + pairs
                    .iter()
                    .map(|(k, v)| depth(k).max(depth(v)))
                    .max()
                    .unwrap_or(0)
            }
            Tag(_, inner) => 1 + depth(inner),
            _ => 0,
        }
    }

    /// What the cheap entry decodes (the decoder's own default limit, a small scratch).
    fn cheap(bytes: &[u8]) -> Option<ciborium::Value> {
        let mut scratch = [0u8; 128];
        ciborium::de::from_reader_with_buffer(bytes, &mut scratch).ok()
    }

    /// What the decoder under the explicit limit decodes.
    fn limited(bytes: &[u8]) -> Option<ciborium::Value> {
        ciborium::de::from_reader_with_recursion_limit(bytes, 64).ok()
    }

    proptest! {
        /// The look says "below" exactly for values nesting fewer than 64 levels, and there
        /// the cheap entry decodes what the limited decoder does.
        #[test]
        fn below_means_both_entries_agree(value in value()) {
            let bytes = cbor(&value);
            let below = nests_below(&bytes, 64);
            prop_assert_eq!(below, depth(&value) < 64);
            if below {
                prop_assert_eq!(cheap(&bytes), limited(&bytes));
            }
        }

        /// On arbitrary bytes the look never panics, and where it says "below" both
        /// entries agree (the same value, or both refuse).
        #[test]
        fn garbage_is_never_misjudged(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if nests_below(&bytes, 64) {
                // Compared re-encoded: a NaN is not equal to itself, its bytes are.
                let cheap = cheap(&bytes).map(|v| cbor(&v));
                prop_assert_eq!(cheap, limited(&bytes).map(|v| cbor(&v)), "{:02x?}", bytes);
            }
        }
    }
}
