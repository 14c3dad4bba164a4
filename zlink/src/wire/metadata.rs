//! Per-message metadata: small UTF-8 key/value pairs, last write wins, at most 1024 bytes.

use bytes::Bytes;
use std::collections::BTreeMap;

use crate::{Error, Result};

/// Largest encoded metadata frame.
pub const MAX_METADATA_BYTES: usize = 1024;
const MAX_KEY_BYTES: usize = 255;

/// Key/value metadata attached to one message. Setting a key again replaces its value.
/// Metadata travels with requests and sends; a reply never carries the request's metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    entries: BTreeMap<String, String>,
}

impl Metadata {
    /// Empty metadata.
    pub const fn new() -> Self {
        Metadata {
            entries: BTreeMap::new(),
        }
    }

    /// Sets `key` to `value` (last write wins). Fails with
    /// [`Error::InvalidArgument`] for an empty or over-long key, or when the encoded
    /// metadata would exceed `MAX_METADATA_BYTES` (1024 bytes); the metadata is then unchanged.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) -> Result<()> {
        let key = key.into();
        if key.is_empty() || key.len() > MAX_KEY_BYTES {
            return Err(Error::InvalidArgument(format!(
                "metadata key must be 1..={MAX_KEY_BYTES} bytes"
            )));
        }
        let previous = self.entries.insert(key.clone(), value.into());
        if self.encoded_len() > MAX_METADATA_BYTES {
            match previous {
                Some(old) => self.entries.insert(key, old),
                None => self.entries.remove(&key),
            };
            return Err(Error::InvalidArgument(format!(
                "metadata exceeds {MAX_METADATA_BYTES} bytes"
            )));
        }
        Ok(())
    }

    /// The value for `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }

    /// Removes `key` (the framework's own keys, before a handler sees the metadata).
    pub(crate) fn remove(&mut self, key: &str) -> Option<String> {
        self.entries.remove(key)
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// All entries, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    fn encoded_len(&self) -> usize {
        self.encode().len()
    }

    pub(crate) fn encode(&self) -> Bytes {
        let mut out = Vec::with_capacity(64);
        let _ = ciborium::into_writer(&self.entries, &mut out);
        Bytes::from(out)
    }

    pub(crate) fn decode(frame: &[u8]) -> std::result::Result<Metadata, String> {
        if frame.len() > MAX_METADATA_BYTES {
            return Err(format!(
                "metadata frame of {} bytes exceeds {MAX_METADATA_BYTES}",
                frame.len()
            ));
        }
        let entries: BTreeMap<String, String> =
            super::cbor_decode_bounded(frame).map_err(|e| format!("metadata: {e}"))?;
        if entries
            .keys()
            .any(|k| k.is_empty() || k.len() > MAX_KEY_BYTES)
        {
            return Err("metadata key out of bounds".into());
        }
        Ok(Metadata { entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_last_write_wins() {
        let mut md = Metadata::new();
        md.insert("trace", "1").expect("metadata within bounds");
        md.insert("trace", "2").expect("metadata within bounds");
        assert_eq!(md.get("trace"), Some("2"));
        assert_eq!(md.len(), 1);
    }

    #[test]
    fn metadata_over_1024_bytes_is_refused_and_unchanged() {
        let mut md = Metadata::new();
        md.insert("a", "x".repeat(900))
            .expect("metadata within bounds");
        let err = md.insert("b", "y".repeat(200)).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)));
        assert_eq!(md.get("b"), None);
        assert!(md.encode().len() <= MAX_METADATA_BYTES);
    }

    #[test]
    fn metadata_roundtrips() {
        let mut md = Metadata::new();
        md.insert("k", "v").expect("metadata within bounds");
        assert_eq!(
            Metadata::decode(&md.encode()).expect("metadata within bounds"),
            md
        );
    }
}
