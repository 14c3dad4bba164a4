//! The wire: how one zlink message is laid out as ZMTP frames.
//!
//! Frame 0 is the envelope head. It opens with the 5-byte prefix `5A 4D 03 <command>
//! <flags>`. Application commands (sends, requests, fanout events) and replies continue
//! with a fixed binary head ([`CallHead`](crate::wire::CallHead), the reply head) so the
//! hot path does no serde pass; control records (hello, admit, reject, update, liveness)
//! continue with a CBOR map ([`ControlHeader`](crate::wire::ControlHeader)). When flag
//! [`FLAG_METADATA`](crate::wire::FLAG_METADATA) is set on an application command,
//! frame 1 is the metadata frame (a CBOR map of text to text, at most 1024 bytes). Every
//! application command ends with one payload frame holding the codec's bytes (CBOR by
//! default); an ok reply ends with one, an error reply with none.

mod call_head;
mod cbor_depth;
mod codec;
mod command;
mod envelope;
mod header;
mod message;
mod metadata;
mod name;
mod operation;
mod payload;
mod reply_head;
pub(crate) mod trace_context;

pub use call_head::{CallHead, PushTail, RouteFence, SessionTail};
pub use codec::{cbor_decode, cbor_encode, Cbor, Codec, Json, Raw};
pub use command::Command;
pub(crate) use envelope::{encode_call, encode_reply, prefix, Addressed};
pub use envelope::{CallMessage, Envelope, WireError, PROTOCOL_MAJOR};
pub use envelope::{FLAG_METADATA, FLAG_SESSION_TAIL, MAX_HEAD_BYTES};
pub use header::{Admission, ControlHeader, RejectReason};
pub use name::{WireName, MAX_NAME_BYTES};
pub(crate) use operation::OperationIds;
pub use payload::Payload;
pub use reply_head::ReplyOutcome;
pub use reply_head::MAX_DETAIL_BYTES;

/// Length of the prefix that opens every head.
pub(crate) const PREFIX_LEN: usize = 5;
pub use message::{Message, Request};
pub use metadata::Metadata;
pub use metadata::MAX_METADATA_BYTES;

/// Nesting depth accepted from the wire; deeper input is refused rather than recursed into.
const MAX_CBOR_DEPTH: usize = 64;

/// Decodes CBOR from an in-memory frame. Allocation is bounded by the frame, which the
/// caller has already length-checked; depth is bounded by [`MAX_CBOR_DEPTH`].
pub(crate) fn cbor_decode_bounded<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
) -> Result<T, String> {
    let mut reader = bytes;
    // The explicit-limit entry zeroes a 4 KiB scratch buffer per call; a payload plainly
    // shallower than the limit takes the cheap entry, with a small one (text and bytes
    // longer than it are read straight into their own allocation either way).
    let value = if cbor_depth::nests_below(bytes, MAX_CBOR_DEPTH) {
        let mut scratch = [0u8; 128];
        ciborium::de::from_reader_with_buffer(&mut reader, &mut scratch)
    } else {
        ciborium::de::from_reader_with_recursion_limit(&mut reader, MAX_CBOR_DEPTH)
    }
    .map_err(|e| e.to_string())?;
    if !reader.is_empty() {
        return Err(format!("{} trailing byte(s)", reader.len()));
    }
    Ok(value)
}
