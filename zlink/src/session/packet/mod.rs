//! The STREAM packet format outside clients speak (reference §6.1): a 6-byte prefix
//! (`u16` header length, `u32` payload size, big-endian), a header that starts with the
//! marker `0xF2`, then the payload. The same bytes travel over TCP, TLS and (one packet
//! per binary message) WebSocket.

mod control;
mod header;
mod read;
mod stream_metadata;

#[cfg(test)]
mod proptests;

pub use control::CloseReason;
pub(crate) use control::{ClosingNotice, HEARTBEAT_PING, HEARTBEAT_PONG, SESSION_CLOSING};
pub(crate) use header::{decode_packet, encode_packet};
pub(crate) use read::{check_prefix, PacketReader, RawPacket, ReadError};

/// The prefix before every header: `u16` header length and `u32` payload size.
pub(crate) const PREFIX_LEN: usize = 6;

/// The first byte of every header.
pub(crate) const MARKER: u8 = 0xF2;

/// Names the framework reserves for its control packets; an application packet's name
/// cannot start with it.
pub const RESERVED_PREFIX: &str = "$zlink.";

/// The default cap on one inbound message (header and payload, without the prefix).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 64 * 1024;

/// What a packet is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub(crate) enum WireKind {
    /// One-way: no answer.
    Send = 1,
    /// Expects exactly one Response or Error with its request sequence.
    Request = 2,
    /// The answer to a request.
    Response = 3,
    /// A failed request (with its sequence) or a session-level error (without one).
    Error = 4,
    /// Framework control: heartbeats and the closing notice.
    Control = 5,
}

impl WireKind {
    fn from_code(code: u8) -> Option<WireKind> {
        Some(match code {
            1 => WireKind::Send,
            2 => WireKind::Request,
            3 => WireKind::Response,
            4 => WireKind::Error,
            5 => WireKind::Control,
            _ => return None,
        })
    }
}

/// How a packet's payload is encoded. A session speaks JSON (the default) and Raw; the
/// reference's MessagePack (2) and Protobuf (3) are refused with an error naming them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum StreamCodec {
    /// Bytes the application reads itself.
    Raw = 0,
    /// UTF-8 JSON.
    Json = 1,
}

impl StreamCodec {
    /// What the reference names a codec number, for the refusal of the ones not spoken.
    pub(crate) fn describe(code: u8) -> &'static str {
        match code {
            0 => "Raw",
            1 => "JSON",
            2 => "MessagePack",
            3 => "Protobuf",
            _ => "undefined",
        }
    }
}

/// Header flags.
pub(crate) mod flags {
    pub(crate) const REQUEST_SEQ: u8 = 0x01;
    pub(crate) const METADATA: u8 = 0x02;
    pub(crate) const COMPRESSED: u8 = 0x04;
    pub(crate) const CORRELATION: u8 = 0x08;
    pub(crate) const FLOW: u8 = 0x10;
    pub(crate) const DEFINED: u8 = REQUEST_SEQ | METADATA | COMPRESSED | CORRELATION | FLOW;
}

/// Length of a flow ID (a UUID in text form) in the header.
pub(crate) const FLOW_ID_LEN: usize = 36;

/// A flow the client names so its traffic can be followed across nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    /// 36 ASCII bytes (a UUID in text form).
    pub id: String,
    /// Where the flow started, as the client numbers it.
    pub origin: u8,
}

/// One decoded packet: what a session reads and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WirePacket {
    pub(crate) kind: WireKind,
    pub(crate) codec: u8,
    pub(crate) request_seq: Option<u64>,
    pub(crate) name: String,
    pub(crate) metadata: crate::Metadata,
    pub(crate) correlation: Option<bytes::Bytes>,
    pub(crate) flow: Option<Flow>,
    pub(crate) payload: bytes::Bytes,
}

impl WirePacket {
    /// A packet of `kind` named `name` with `payload`, and nothing optional.
    pub(crate) fn new(
        kind: WireKind,
        codec: StreamCodec,
        name: &str,
        payload: bytes::Bytes,
    ) -> Self {
        WirePacket {
            kind,
            codec: codec as u8,
            request_seq: None,
            name: name.to_string(),
            metadata: crate::Metadata::new(),
            correlation: None,
            flow: None,
            payload,
        }
    }
}
