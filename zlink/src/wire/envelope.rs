//! Encoding and bounded decoding of whole envelopes.

use bytes::{BufMut, Bytes, BytesMut};

use super::{cbor_decode_bounded, Command, Header, Metadata, MAX_METADATA_BYTES};

/// Magic bytes that open frame 0.
const MAGIC: [u8; 2] = [0x5A, 0x4D];
/// The wire major version we speak.
pub const PROTOCOL_MAJOR: u8 = 1;
/// Flag: a metadata frame follows the head.
pub const FLAG_METADATA: u8 = 0x01;
/// Largest frame 0 we decode; anything bigger is refused before decoding.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
const PREFIX_LEN: usize = 5;

/// One decoded message: command, header, optional metadata and optional payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// What the message is.
    pub command: Command,
    /// Command fields.
    pub header: Header,
    /// Application metadata (application commands only).
    pub metadata: Option<Metadata>,
    /// Application payload bytes.
    pub payload: Option<Bytes>,
}

/// Why a message could not be decoded. Always a protocol error for that message; never a
/// panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed message: {reason}")]
pub struct WireError {
    /// What was wrong.
    pub reason: String,
    /// The command, when the prefix was readable.
    pub command: Option<Command>,
    /// The request correlation, when the header was readable (lets the receiver answer
    /// with a `ProtocolError` reply).
    pub correlation: Option<u64>,
}

impl WireError {
    fn new(reason: impl Into<String>) -> Self {
        WireError {
            reason: reason.into(),
            command: None,
            correlation: None,
        }
    }
}

impl Envelope {
    /// A message with no metadata and no payload.
    pub fn control(command: Command, header: Header) -> Self {
        Envelope {
            command,
            header,
            metadata: None,
            payload: None,
        }
    }

    /// Encodes into ZMTP frames.
    pub fn encode(&self) -> Vec<Bytes> {
        let metadata = self.metadata.as_ref().filter(|m| !m.is_empty());
        let flags = if metadata.is_some() { FLAG_METADATA } else { 0 };
        let mut head = BytesMut::with_capacity(64).writer();
        head.get_mut().put_slice(&[
            MAGIC[0],
            MAGIC[1],
            PROTOCOL_MAJOR,
            self.command as u8,
            flags,
        ]);
        // Serialising a plain struct into memory cannot fail.
        let _ = ciborium::into_writer(&self.header, &mut head);
        let mut frames = Vec::with_capacity(3);
        frames.push(head.into_inner().freeze());
        if let Some(md) = metadata {
            frames.push(md.encode());
        }
        if let Some(payload) = &self.payload {
            frames.push(payload.clone());
        }
        frames
    }

    /// Decodes frames, checking every bound before allocating.
    pub fn decode(frames: &[Bytes]) -> Result<Envelope, WireError> {
        let head = frames.first().ok_or_else(|| WireError::new("no frames"))?;
        if head.len() < PREFIX_LEN {
            return Err(WireError::new("head shorter than its 5-byte prefix"));
        }
        if head.len() > MAX_HEAD_BYTES {
            return Err(WireError::new(format!(
                "head of {} bytes exceeds {MAX_HEAD_BYTES}",
                head.len()
            )));
        }
        if head[..2] != MAGIC {
            return Err(WireError::new("invalid magic"));
        }
        if head[2] != PROTOCOL_MAJOR {
            return Err(WireError::new(format!("unsupported version {}", head[2])));
        }
        let command = Command::from_code(head[3])
            .ok_or_else(|| WireError::new(format!("unknown command {}", head[3])))?;
        let fail = |reason: String, correlation: Option<u64>| WireError {
            reason,
            command: Some(command),
            correlation,
        };
        let flags = head[4];
        if flags & !FLAG_METADATA != 0 {
            return Err(fail(format!("undefined flags {flags:#04x}"), None));
        }
        let header: Header = cbor_decode_bounded(&head[PREFIX_LEN..])
            .map_err(|e| fail(format!("header: {e}"), None))?;
        let correlation = (header.correlation != 0).then_some(header.correlation);
        let has_metadata = flags & FLAG_METADATA != 0;
        if has_metadata && !command.is_application() {
            return Err(fail(
                "metadata flag on a control command".into(),
                correlation,
            ));
        }
        let mut rest = &frames[1..];
        let metadata = if has_metadata {
            let frame = rest
                .first()
                .ok_or_else(|| fail("metadata frame missing".into(), correlation))?;
            rest = &rest[1..];
            Some(Metadata::decode(frame).map_err(|e| fail(e, correlation))?)
        } else {
            None
        };
        let payload = match (command.payload_rule(), rest.len()) {
            (Some(true), 1) | (None, 1) => Some(rest[0].clone()),
            (Some(false), 0) | (None, 0) => None,
            (_, n) => {
                return Err(fail(
                    format!("{n} payload frame(s) not allowed for {command:?}"),
                    correlation,
                ))
            }
        };
        validate_fields(command, &header).map_err(|e| fail(e, correlation))?;
        Ok(Envelope {
            command,
            header,
            metadata,
            payload,
        })
    }
}

fn validate_fields(command: Command, h: &Header) -> Result<(), String> {
    let need_correlation = matches!(
        command,
        Command::NodeRequest | Command::ChannelRequest | Command::Reply
    );
    if need_correlation && h.correlation == 0 {
        return Err("correlation must be non-zero".into());
    }
    if command.is_application() && h.packet.as_deref().is_none_or(str::is_empty) {
        return Err("packet name missing".into());
    }
    if matches!(command, Command::ChannelSend | Command::ChannelRequest)
        && h.channel.as_deref().is_none_or(str::is_empty)
    {
        return Err("channel name missing".into());
    }
    match command {
        Command::Hello | Command::Admit | Command::Update if h.admission.is_none() => {
            Err("admission record missing".into())
        }
        Command::Reject if h.reject.is_none() => Err("reject reason missing".into()),
        Command::LivenessProbe | Command::LivenessAck if h.probe == 0 => {
            Err("probe id must be non-zero".into())
        }
        Command::Reply => match &h.status {
            None => Err("reply status missing".into()),
            Some(s) if s.error_kind.is_some_and(|k| k > 12) => Err("unknown error kind".into()),
            Some(_) => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Upper bound used by tests and fuzzing.
pub(crate) const _MAX_METADATA: usize = MAX_METADATA_BYTES;
