//! Names carried in a binary head (ChannelName, packet name): UTF-8, 1..=255 bytes, held
//! as a slice of the received frame so decoding allocates nothing.

use bytes::Bytes;

/// Longest name a head can carry (its length is one byte).
pub const MAX_NAME_BYTES: usize = 255;

/// A validated UTF-8 name that borrows the frame it was read from.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct WireName(Bytes);

impl WireName {
    /// Validates `bytes` as a name (UTF-8, at most [`MAX_NAME_BYTES`]; may be empty).
    pub(crate) fn new(bytes: Bytes) -> Result<WireName, &'static str> {
        if bytes.len() > MAX_NAME_BYTES {
            return Err("name longer than 255 bytes");
        }
        std::str::from_utf8(&bytes).map_err(|_| "name is not UTF-8")?;
        Ok(WireName(bytes))
    }

    /// A name from text already in memory (copied once).
    pub fn from_text(text: &str) -> WireName {
        WireName(Bytes::copy_from_slice(text.as_bytes()))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        // Validated at construction; the fallback is unreachable.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// Whether the name is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for WireName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for WireName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
