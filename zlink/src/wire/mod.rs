//! The wire: how one zlink message is laid out as ZMTP frames.
//!
//! Frame 0 is the envelope head: the 5-byte prefix `5A 4D 01 <command> <flags>` followed by
//! a CBOR map ([`Header`]). When flag [`FLAG_METADATA`] is set, frame 1 is the metadata frame
//! (a CBOR map of text to text, at most 1024 bytes). Commands that carry application data
//! end with one payload frame holding the codec's bytes (CBOR by default).

mod codec;
mod command;
mod envelope;
mod header;
mod message;
mod metadata;

pub use codec::{cbor_decode, cbor_encode, Cbor, Codec, Json};
pub use command::Command;
pub use envelope::{Envelope, WireError, FLAG_METADATA, MAX_HEAD_BYTES, PROTOCOL_MAJOR};
pub use header::{Admission, Header, RejectReason, ReplyStatus};
pub use message::{Message, Request};
pub use metadata::{Metadata, MAX_METADATA_BYTES};

/// Nesting depth accepted from the wire; deeper input is refused rather than recursed into.
const MAX_CBOR_DEPTH: usize = 64;

/// Decodes CBOR from an in-memory frame. Allocation is bounded by the frame, which the
/// caller has already length-checked; depth is bounded by [`MAX_CBOR_DEPTH`].
pub(crate) fn cbor_decode_bounded<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
) -> Result<T, String> {
    let mut reader = bytes;
    let value = ciborium::de::from_reader_with_recursion_limit(&mut reader, MAX_CBOR_DEPTH)
        .map_err(|e| e.to_string())?;
    if !reader.is_empty() {
        return Err(format!("{} trailing byte(s)", reader.len()));
    }
    Ok(value)
}
