//! ZMTP metadata properties (READY and CURVE INITIATE/READY): a name of 1..=255 bytes with a
//! one-byte length, then a value with a four-byte length.

use bytes::BufMut;

/// Encodes `(name, value)` pairs.
pub(crate) fn encode(properties: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in properties {
        out.put_u8(name.len() as u8);
        out.put_slice(name.as_bytes());
        out.put_u32(value.len() as u32);
        out.put_slice(value);
    }
    out
}

/// The value of property `wanted` (case-insensitive), or `Err` when the bytes are not a
/// well-formed property list. Every length is checked against what is there.
pub(crate) fn find<'a>(mut rest: &'a [u8], wanted: &str) -> Result<Option<&'a [u8]>, ()> {
    let mut found = None;
    while !rest.is_empty() {
        let name_len = usize::from(rest[0]);
        let name = rest.get(1..1 + name_len).ok_or(())?;
        if name.is_empty() {
            return Err(());
        }
        let at = 1 + name_len;
        let len_bytes: [u8; 4] = rest.get(at..at + 4).ok_or(())?.try_into().map_err(|_| ())?;
        let value_len = u32::from_be_bytes(len_bytes) as usize;
        let value = rest
            .get(at + 4..at.saturating_add(4).saturating_add(value_len))
            .ok_or(())?;
        if found.is_none() && name.eq_ignore_ascii_case(wanted.as_bytes()) {
            found = Some(value);
        }
        rest = &rest[at + 4 + value_len..];
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_are_found_and_lengths_are_not_trusted() {
        let body = encode(&[("Identity", b""), ("Socket-Type", b"DEALER")]);
        assert_eq!(find(&body, "socket-type"), Ok(Some(&b"DEALER"[..])));
        assert_eq!(find(&body, "Resource"), Ok(None));
        assert_eq!(find(&body[..body.len() - 2], "Socket-Type"), Err(()));
        let mut huge = vec![1, b'x'];
        huge.extend_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(find(&huge, "x"), Err(()));
        assert_eq!(find(&[0, 0, 0, 0, 0], "x"), Err(()));
    }

    use proptest::collection::vec;
    use proptest::prelude::*;

    fn config(cases: u32) -> ProptestConfig {
        ProptestConfig {
            cases,
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    /// Letters of the generated names: both cases, so that case-insensitive lookups meet.
    const LETTERS: &[u8] = b"aAbBtTyY-";

    /// A name of `len` letters.
    fn name(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = String> {
        vec(proptest::sample::select(LETTERS), len)
            .prop_map(|bytes| String::from_utf8(bytes).expect("ascii"))
    }

    /// A property list: names of 1..=255 bytes (a few cases apart), values of any bytes.
    fn property_list() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
        let name = prop_oneof![4 => name(1..=3), 1 => name(200..=255)];
        vec((name, vec(any::<u8>(), 0..64)), 0..6)
    }

    fn encoded(list: &[(String, Vec<u8>)]) -> Vec<u8> {
        let pairs: Vec<(&str, &[u8])> = list
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_slice()))
            .collect();
        encode(&pairs)
    }

    /// Where each property of `list` ends in its encoding.
    fn boundaries(list: &[(String, Vec<u8>)]) -> Vec<usize> {
        let mut at = 0;
        let mut out = vec![0];
        for (name, value) in list {
            at += 1 + name.len() + 4 + value.len();
            out.push(at);
        }
        out
    }

    fn within(part: &[u8], whole: &[u8]) -> bool {
        let (start, end) = (
            whole.as_ptr() as usize,
            whole.as_ptr() as usize + whole.len(),
        );
        let p = part.as_ptr() as usize;
        p >= start && p + part.len() <= end
    }

    proptest! {
        #![proptest_config(config(20_000))]

        /// Arbitrary bytes are a property list or an error; a value found is a part of the
        /// input, never more than is there.
        #[test]
        fn arbitrary_property_bytes_never_panic(
            bytes in vec(any::<u8>(), 0..300),
            wanted in name(0..=3),
        ) {
            if let Ok(Some(value)) = find(&bytes, &wanted) {
                prop_assert!(within(value, &bytes));
            }
            // Behind a valid name, an arbitrary declared length must be there.
            let mut named = encode(&[("Socket-Type", b"")]);
            named.truncate(1 + 11);
            named.extend_from_slice(&bytes);
            if let Ok(Some(value)) = find(&named, "socket-type") {
                prop_assert!(within(value, &named));
            }
        }
    }

    proptest! {
        #![proptest_config(config(10_000))]

        /// An encoded list gives back, for every name, the value of its first occurrence
        /// (names compare case-insensitively), and nothing for a name it lacks.
        #[test]
        fn encoded_properties_round_trip(list in property_list()) {
            let body = encoded(&list);
            for (name, _) in &list {
                let first = list
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.as_slice());
                prop_assert_eq!(find(&body, name), Ok(first));
                prop_assert_eq!(find(&body, &name.to_ascii_uppercase()), Ok(first));
            }
            prop_assert_eq!(find(&body, "Not_In_The_List"), Ok(None));
        }

        /// Cut anywhere, a list parses only where a property ends; with a byte changed, it
        /// parses or is refused.
        #[test]
        fn a_cut_or_mutated_property_list_parses_or_is_refused(
            list in property_list(),
            cut in any::<proptest::sample::Index>(),
            at in any::<proptest::sample::Index>(),
            bits in 1..=255u8,
        ) {
            let body = encoded(&list);
            let cut = cut.index(body.len() + 1);
            let short = find(&body[..cut], "Socket-Type");
            if boundaries(&list).contains(&cut) {
                prop_assert!(short.is_ok(), "a whole prefix of {} bytes refused", cut);
            } else {
                prop_assert_eq!(short, Err(()));
            }
            if !body.is_empty() {
                let mut changed = body.clone();
                changed[at.index(body.len())] ^= bits;
                if let Ok(Some(value)) = find(&changed, "Socket-Type") {
                    prop_assert!(within(value, &changed));
                }
            }
        }
    }
}
