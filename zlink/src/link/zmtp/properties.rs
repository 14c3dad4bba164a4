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
}
