//! Metadata inside a STREAM header: `count u8`, then per entry `key_len u8 (>= 1) | key |
//! val_len u16 | value`. A key given twice is a decode error (the mesh's metadata keeps
//! the last write; a client sending two is confused, not overriding).

use bytes::BufMut;

use crate::wire::MAX_METADATA_BYTES;
use crate::Metadata;

/// Decodes the metadata block (its `u16` length already taken off).
pub(super) fn decode(mut block: &[u8]) -> Result<Metadata, String> {
    if block.len() > MAX_METADATA_BYTES {
        return Err(format!(
            "metadata of {} bytes exceeds {MAX_METADATA_BYTES}",
            block.len()
        ));
    }
    let count = take(&mut block, 1)?[0];
    let mut metadata = Metadata::new();
    for _ in 0..count {
        let key_len = usize::from(take(&mut block, 1)?[0]);
        if key_len == 0 {
            return Err("a metadata key is empty".into());
        }
        let key = utf8(take(&mut block, key_len)?, "key")?;
        let value_len = take(&mut block, 2)?;
        let value_len = usize::from(u16::from_be_bytes([value_len[0], value_len[1]]));
        let value = utf8(take(&mut block, value_len)?, "value")?;
        if metadata.get(key).is_some() {
            return Err(format!("metadata key {key:?} is given twice"));
        }
        metadata.insert(key, value).map_err(|e| e.to_string())?;
    }
    if !block.is_empty() {
        return Err(format!(
            "{} bytes follow the last metadata entry",
            block.len()
        ));
    }
    Ok(metadata)
}

/// The encoded length of `metadata`'s block (without its `u16` length).
pub(super) fn encoded_len(metadata: &Metadata) -> usize {
    1 + metadata
        .iter()
        .map(|(k, v)| 1 + k.len() + 2 + v.len())
        .sum::<usize>()
}

/// Writes the block (without its `u16` length). The entries are within bounds: metadata
/// holds at most 1024 bytes and keys of 1..=255 bytes.
pub(super) fn encode(metadata: &Metadata, out: &mut impl BufMut) {
    out.put_u8(metadata.len() as u8);
    for (key, value) in metadata.iter() {
        out.put_u8(key.len() as u8);
        out.put_slice(key.as_bytes());
        out.put_u16(value.len() as u16);
        out.put_slice(value.as_bytes());
    }
}

fn take<'a>(block: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
    if block.len() < n {
        return Err("metadata is truncated".into());
    }
    let (head, rest) = block.split_at(n);
    *block = rest;
    Ok(head)
}

fn utf8<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str, String> {
    std::str::from_utf8(bytes).map_err(|_| format!("a metadata {what} is not UTF-8"))
}
