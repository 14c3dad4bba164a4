//! Encoding and bounded decoding of whole envelopes.

use bytes::{BufMut, Bytes, BytesMut};

use super::call_head::{decode_call_head, encode_call_head, RouteFence};
use super::reply_head::{decode_reply_head, encode_reply_head, STATUS_OK};
use super::{
    cbor_decode_bounded, CallHead, Command, ControlHeader, Metadata, ReplyOutcome, PREFIX_LEN,
};

/// Magic bytes that open frame 0.
const MAGIC: [u8; 2] = [0x5A, 0x4D];
/// The wire major version we speak.
pub const PROTOCOL_MAJOR: u8 = 3;
/// Flag: a metadata frame follows the head.
pub const FLAG_METADATA: u8 = 0x01;
/// Flag: the head ends with a bound-session tail (Actor sends and requests only).
pub const FLAG_SESSION_TAIL: u8 = 0x02;
/// Largest frame 0 we decode; anything bigger is refused before decoding.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

pub(crate) fn prefix(command: Command, flags: u8) -> [u8; PREFIX_LEN] {
    [MAGIC[0], MAGIC[1], PROTOCOL_MAJOR, command as u8, flags]
}

/// One decoded message.
#[derive(Debug, Clone, PartialEq)]
pub enum Envelope {
    /// A control record: hello, admit, reject, update, liveness probe or ack.
    Control {
        /// Which record.
        command: Command,
        /// Its CBOR header.
        header: ControlHeader,
    },
    /// An application command: node or channel send or request, or a fanout event.
    Call(CallMessage),
    /// A terminal reply.
    Reply {
        /// The request's correlation.
        correlation: u64,
        /// The request's operation, echoed.
        operation: u64,
        /// What the request ended with.
        outcome: ReplyOutcome,
    },
}

/// An application command as it travels.
#[derive(Debug, Clone, PartialEq)]
pub struct CallMessage {
    /// Which command (16..=19 or 40).
    pub command: Command,
    /// Its binary head.
    pub head: CallHead,
    /// Application metadata (empty when the message carried none).
    pub metadata: Metadata,
    /// The codec's bytes.
    pub payload: Bytes,
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
    /// The request correlation, when the head was readable (lets the receiver answer
    /// with a `ProtocolError` reply).
    pub correlation: Option<u64>,
    /// The operation field as the head carried it (0 when unreadable): the error reply
    /// echoes it.
    pub operation: u64,
}

impl WireError {
    fn new(reason: impl Into<String>) -> Self {
        WireError {
            reason: reason.into(),
            command: None,
            correlation: None,
            operation: 0,
        }
    }
}

/// The big-endian u64 at `at` in `head`, when it is there.
fn u64_at(head: &[u8], at: usize) -> Option<u64> {
    let bytes: [u8; 8] = head.get(at..at + 8)?.try_into().ok()?;
    Some(u64::from_be_bytes(bytes))
}

/// Where the operation sits in call and reply heads.
const OPERATION_AT: usize = PREFIX_LEN + 8;

/// Where an application command goes: its target name (ChannelName or Spot ID, empty
/// otherwise), its packet name, and a Spot command's route fence.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Addressed<'a> {
    pub(crate) target: &'a str,
    pub(crate) packet: &'a str,
    pub(crate) fence: Option<RouteFence>,
    /// Forwarding hops so far (Message Follow relays count up; 0 from the sender).
    pub(crate) hops: u8,
    /// A session's relay: the binding it goes under (Actor sends and requests only).
    pub(crate) session: Option<super::SessionTail>,
    /// The topic of a Logical Multicast event (command 23 only).
    pub(crate) topic: Option<&'a str>,
    /// A bound Actor's push (command 36 only): its session and binding.
    pub(crate) push: Option<super::PushTail>,
}

/// Encodes an application command from borrowed parts: the hot path's encoder.
pub(crate) fn encode_call(
    command: Command,
    ids: (u64, u64),
    deadline_ms: u32,
    to: Addressed<'_>,
    metadata: &Metadata,
    payload: Bytes,
) -> Vec<Bytes> {
    let flags = if metadata.is_empty() {
        0
    } else {
        FLAG_METADATA
    };
    let head = encode_call_head(command, flags, ids, deadline_ms, to);
    let mut frames = Vec::with_capacity(3);
    frames.push(head);
    if !metadata.is_empty() {
        frames.push(metadata.encode());
    }
    frames.push(payload);
    frames
}

/// Encodes a terminal reply to the request `(correlation, operation)`.
pub(crate) fn encode_reply(ids: (u64, u64), outcome: &ReplyOutcome) -> Vec<Bytes> {
    match outcome {
        ReplyOutcome::Ok(payload) => {
            vec![encode_reply_head(ids, STATUS_OK, "", None), payload.clone()]
        }
        ReplyOutcome::Failed {
            kind,
            detail,
            refusal,
        } => vec![encode_reply_head(ids, *kind, detail, *refusal)],
    }
}

impl Envelope {
    /// A control record.
    pub fn control(command: Command, header: ControlHeader) -> Self {
        Envelope::Control { command, header }
    }

    /// The command of this message.
    pub fn command(&self) -> Command {
        match self {
            Envelope::Control { command, .. } => *command,
            Envelope::Call(call) => call.command,
            Envelope::Reply { .. } => Command::Reply,
        }
    }

    /// Encodes into ZMTP frames.
    pub fn encode(&self) -> Vec<Bytes> {
        match self {
            Envelope::Control { command, header } => {
                let mut head = BytesMut::with_capacity(64).writer();
                head.get_mut().put_slice(&prefix(*command, 0));
                // Serialising a plain struct into memory cannot fail.
                let _ = ciborium::into_writer(header, &mut head);
                vec![head.into_inner().freeze()]
            }
            Envelope::Call(call) => encode_call(
                call.command,
                (call.head.correlation, call.head.operation),
                call.head.deadline_ms,
                Addressed {
                    target: call.head.target.as_str(),
                    packet: call.head.packet.as_str(),
                    fence: call.head.fence,
                    hops: call.head.hops,
                    session: call.head.session,
                    topic: call.head.topic.as_ref().map(|t| t.as_str()),
                    push: call.head.push,
                },
                &call.metadata,
                call.payload.clone(),
            ),
            Envelope::Reply {
                correlation,
                operation,
                outcome,
            } => encode_reply((*correlation, *operation), outcome),
        }
    }

    /// Decodes frames, checking every bound before allocating.
    pub fn decode(frames: &[Bytes]) -> Result<Envelope, WireError> {
        let (head, command) = check_prefix(frames)?;
        let operation = u64_at(head, OPERATION_AT).unwrap_or(0);
        let fail = failing(command, operation);
        let flags = head[4];
        if command.is_application() {
            return decode_call(command, flags, frames, fail);
        }
        if command == Command::Reply {
            // A reply's flags are its head's to read: it knows where its correlation is.
            return decode_reply(flags, frames, fail);
        }
        if flags != 0 {
            return Err(fail(
                format!("undefined flags {flags:#04x} on {command:?}"),
                None,
            ));
        }
        let header: ControlHeader = cbor_decode_bounded(&head[PREFIX_LEN..])
            .map_err(|e| fail(format!("header: {e}"), None))?;
        if frames.len() != 1 {
            return Err(fail(
                format!("{} extra frame(s) on {command:?}", frames.len() - 1),
                None,
            ));
        }
        validate_control(command, &header).map_err(|e| fail(e, None))?;
        Ok(Envelope::Control { command, header })
    }
}

/// The head frame and its command, once the prefix is whole and known and the head
/// within its bound.
fn check_prefix(frames: &[Bytes]) -> Result<(&Bytes, Command), WireError> {
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
    Ok((head, command))
}

/// How a decode of `command` fails: the reason, with the correlation when it was read.
fn failing(command: Command, operation: u64) -> impl Fn(String, Option<u64>) -> WireError + Copy {
    move |reason, correlation| WireError {
        reason,
        command: Some(command),
        correlation,
        operation,
    }
}

/// An application command: its call head, the metadata frame when flagged, and exactly
/// one payload frame.
fn decode_call(
    command: Command,
    flags: u8,
    frames: &[Bytes],
    fail: impl Fn(String, Option<u64>) -> WireError + Copy,
) -> Result<Envelope, WireError> {
    let head = &frames[0];
    if flags & !(FLAG_METADATA | FLAG_SESSION_TAIL) != 0 {
        // The correlation sits right after the prefix: a request still learns why.
        let correlation = command
            .is_request()
            .then(|| u64_at(head, PREFIX_LEN))
            .flatten()
            .filter(|c| *c != 0);
        return Err(fail(format!("undefined flags {flags:#04x}"), correlation));
    }
    let head = decode_call_head(command, head).map_err(|(r, c)| fail(r, c))?;
    let correlation = (head.correlation != 0).then_some(head.correlation);
    let (metadata, rest) = if flags & FLAG_METADATA != 0 {
        let frame = frames
            .get(1)
            .ok_or_else(|| fail("metadata frame missing".into(), correlation))?;
        let metadata = Metadata::decode(frame).map_err(|e| fail(e, correlation))?;
        (metadata, &frames[2..])
    } else {
        (Metadata::default(), &frames[1..])
    };
    let [payload] = rest else {
        return Err(fail(
            format!("{} payload frame(s), expected 1", rest.len()),
            correlation,
        ));
    };
    Ok(Envelope::Call(CallMessage {
        command,
        head,
        metadata,
        payload: payload.clone(),
    }))
}

/// A terminal reply: its head, then one payload frame when ok and none when failed.
fn decode_reply(
    flags: u8,
    frames: &[Bytes],
    fail: impl Fn(String, Option<u64>) -> WireError + Copy,
) -> Result<Envelope, WireError> {
    let super::reply_head::ReplyHead {
        correlation,
        operation,
        status,
        detail,
        refusal,
    } = decode_reply_head(&frames[0], flags).map_err(|(r, c)| fail(r, c))?;
    let outcome = match (status, &frames[1..]) {
        (STATUS_OK, [payload]) => ReplyOutcome::Ok(payload.clone()),
        (STATUS_OK, rest) => {
            return Err(fail(
                format!("ok reply with {} payload frames, expected 1", rest.len()),
                Some(correlation),
            ))
        }
        (kind, []) => ReplyOutcome::Failed {
            kind,
            detail,
            refusal,
        },
        (_, _) => {
            return Err(fail(
                "error reply with a payload frame".into(),
                Some(correlation),
            ))
        }
    };
    Ok(Envelope::Reply {
        correlation,
        operation,
        outcome,
    })
}

fn validate_control(command: Command, h: &ControlHeader) -> Result<(), String> {
    match command {
        Command::Hello | Command::Admit | Command::Update if h.admission.is_none() => {
            Err("admission record missing".into())
        }
        Command::Reject if h.reject.is_none() => Err("reject reason missing".into()),
        Command::LivenessProbe | Command::LivenessAck if h.probe == 0 => {
            Err("probe id must be non-zero".into())
        }
        _ => Ok(()),
    }
}
