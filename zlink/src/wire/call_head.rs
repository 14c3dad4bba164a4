//! The fixed binary head of application commands (node and channel sends and requests,
//! fanout events). The hot path reads it with a handful of bounds checks and no serde pass.
//!
//! ```text
//! offset  size  field
//!  0      5     prefix 5A 4D 03 <command> <flags>
//!  5      8     correlation, u64 big-endian (non-zero on requests, zero otherwise)
//! 13      8     operation, u64 big-endian: non-zero, unique among the commands its
//!               sender started in one lifecycle; kept by every relay of the message
//! 21      4     deadline_ms, u32 big-endian: the request's remaining budget (0 = none)
//! 25      1     hops: how many times the message was forwarded (0 from its sender)
//! 26      1     target name length: the ChannelName of channel commands, the Spot ID
//!               of Spot commands, 0 for node-direct and fanout
//! 27      1     packet name length (1..=255)
//! 28      ...   target name bytes, then packet name bytes (UTF-8)
//! then, on Spot and Actor commands only, the route fence the sender resolved:
//!         8     ObjectGeneration, u64 big-endian (non-zero)
//!         8     AuthorityOwnerGeneration, u64 big-endian (non-zero)
//!         8     OwnerLeaseGeneration, u64 big-endian (non-zero)
//! then, on Logical Multicast (command 23) only, the topic:
//!         1     topic length (1..=255)
//!         ...   topic bytes (UTF-8)
//! then, on Actor sends and requests with flag 0x02 only, the bound-session tail:
//!         8     binding generation, u64 big-endian (non-zero)
//!         8     session sequence, u64 big-endian
//! then, on a bound Actor's push (command 36) only, whose target is the Actor ID, whose
//! packet name is the pushed packet's and which carries the Actor's route fence, the push
//! tail:
//!         8     session number on the session owner, u64 big-endian
//!         8     the session owner's lifecycle generation, u64 big-endian (non-zero)
//!         8     the Actor owner's lifecycle generation, u64 big-endian (non-zero)
//!         8     binding generation, u64 big-endian (non-zero)
//!         1     the STREAM codec of the payload
//! nothing after
//! ```

use bytes::{BufMut, Bytes, BytesMut};

use super::{Command, WireName, PREFIX_LEN};

/// Bytes before the names.
pub(crate) const CALL_FIXED_LEN: usize = 28;

/// The fields of an application command's head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallHead {
    /// Request/reply correlation: non-zero on requests, zero on sends and events.
    pub correlation: u64,
    /// The sender's operation identity (non-zero): it names one piece of work, however
    /// many relays carry it, so duplicates can be told apart. It never replaces the reply
    /// route: a reply goes back by its connection and correlation.
    pub operation: u64,
    /// Remaining request budget in milliseconds when sent; 0 = none (sends).
    pub deadline_ms: u32,
    /// Forwarding hops so far.
    pub hops: u8,
    /// The ChannelName (channel commands) or the target Spot ID (Spot commands); empty
    /// otherwise.
    pub target: WireName,
    /// Packet name of the payload.
    pub packet: WireName,
    /// The owner fence the sender resolved (Spot and Actor commands only): the owner
    /// checks it before admitting the message.
    pub fence: Option<RouteFence>,
    /// On a session's relay to its bound Actor (Actor sends and requests, flag 0x02):
    /// the binding it was sent under. The owner admits it only while that binding is
    /// current.
    pub session: Option<SessionTail>,
    /// The topic of a Logical Multicast event (command 23 only, where it is required).
    pub topic: Option<WireName>,
    /// A bound Actor's push (command 36 only, where it is required): its session and the
    /// binding it was pushed under.
    pub push: Option<PushTail>,
}

/// What a bound Actor's push (command 36) names besides the Actor and its fence: the
/// session it goes to and every generation the session owner checks it against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PushTail {
    /// The session's number on its owner.
    pub session: u64,
    /// The session owner's lifecycle generation (non-zero).
    pub session_node_generation: u64,
    /// The pushing Actor owner's lifecycle generation (non-zero).
    pub actor_node_generation: u64,
    /// The binding generation the push was made under (non-zero).
    pub binding_generation: u64,
    /// The STREAM codec of the payload.
    pub codec: u8,
}

/// Bytes of a push tail.
const PUSH_TAIL_LEN: usize = 33;

/// The binding a relayed message was sent under, and its place in the session's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionTail {
    /// The binding generation the Actor's owner issued (non-zero).
    pub binding_generation: u64,
    /// The message's sequence among the ones the session accepted.
    pub session_seq: u64,
}

/// Bytes of a bound-session tail.
const SESSION_TAIL_LEN: usize = 16;

/// The part of the owner fence a Spot message carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RouteFence {
    /// The incarnation the sender resolved. The owner does not match it (an object
    /// created again on the same owner takes the message, seed 000 §2.6); a Message
    /// Follow route does, so a relay only carries work for the incarnation that moved.
    pub object_generation: u64,
    /// The AuthorityOwnerGeneration of the resolved owner.
    pub owner_generation: u64,
    /// The owner lease generation the authority names.
    pub lease_generation: u64,
}

/// Bytes of a route fence.
const FENCE_LEN: usize = 24;

/// Writes a call head from borrowed names (the sender's interned names are copied once,
/// straight into the frame).
pub(crate) fn encode_call_head(
    command: Command,
    flags: u8,
    ids: (u64, u64),
    deadline_ms: u32,
    to: super::envelope::Addressed<'_>,
) -> Bytes {
    let (correlation, operation) = ids;
    let super::envelope::Addressed {
        target,
        packet,
        fence,
        hops,
        session,
        topic,
        push,
    } = to;
    let topic = topic
        .filter(|_| command == Command::LogicalMulticast)
        .map(|t| &t.as_bytes()[..t.len().min(255)]);
    let session = session.filter(|_| command.takes_session_tail());
    let flags = if session.is_some() {
        flags | super::envelope::FLAG_SESSION_TAIL
    } else {
        flags
    };
    let mut head = BytesMut::with_capacity(
        CALL_FIXED_LEN + target.len() + packet.len() + FENCE_LEN + PUSH_TAIL_LEN + 256,
    );
    head.put_slice(&super::prefix(command, flags));
    head.put_u64(correlation);
    head.put_u64(operation);
    head.put_u32(deadline_ms);
    head.put_u8(hops);
    // Names are validated to 1..=255 bytes where they enter the program (builder, macros);
    // a longer one is truncated here rather than corrupting the layout.
    let target = &target.as_bytes()[..target.len().min(255)];
    let packet = &packet.as_bytes()[..packet.len().min(255)];
    head.put_u8(target.len() as u8);
    head.put_u8(packet.len() as u8);
    head.put_slice(target);
    head.put_slice(packet);
    if carries_fence(command) {
        let fence = fence.unwrap_or(RouteFence {
            object_generation: 0,
            owner_generation: 0,
            lease_generation: 0,
        });
        head.put_u64(fence.object_generation);
        head.put_u64(fence.owner_generation);
        head.put_u64(fence.lease_generation);
    }
    if let Some(topic) = topic {
        head.put_u8(topic.len() as u8);
        head.put_slice(topic);
    }
    if let Some(tail) = session {
        head.put_u64(tail.binding_generation);
        head.put_u64(tail.session_seq);
    }
    if command == Command::BoundSessionSend {
        // A push without its tail is written with zeros, which every decoder refuses.
        let tail = push.unwrap_or(PushTail {
            session: 0,
            session_node_generation: 0,
            actor_node_generation: 0,
            binding_generation: 0,
            codec: 0,
        });
        head.put_u64(tail.session);
        head.put_u64(tail.session_node_generation);
        head.put_u64(tail.actor_node_generation);
        head.put_u64(tail.binding_generation);
        head.put_u8(tail.codec);
    }
    head.freeze()
}

/// Whether `command`'s head carries a route fence: every Spot and Actor command, and a
/// bound Actor's push (the fence it runs under).
fn carries_fence(command: Command) -> bool {
    command.is_object() || command == Command::BoundSessionSend
}

/// A push tail at `at` (the length already checked).
fn read_push_tail(head: &[u8], at: usize) -> Result<PushTail, &'static str> {
    let tail = PushTail {
        session: be_u64_at(head, at),
        session_node_generation: be_u64_at(head, at + 8),
        actor_node_generation: be_u64_at(head, at + 16),
        binding_generation: be_u64_at(head, at + 24),
        codec: head[at + 32],
    };
    if tail.session_node_generation == 0
        || tail.actor_node_generation == 0
        || tail.binding_generation == 0
    {
        return Err("a push tail has a zero generation");
    }
    Ok(tail)
}

fn be_u64_at(head: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&head[at..at + 8]);
    u64::from_be_bytes(b)
}

/// An object command's route fence at `at` (the length already checked): no generation
/// may be zero.
fn read_fence(head: &[u8], at: usize) -> Result<RouteFence, &'static str> {
    let fence = RouteFence {
        object_generation: be_u64_at(head, at),
        owner_generation: be_u64_at(head, at + 8),
        lease_generation: be_u64_at(head, at + 16),
    };
    if fence.object_generation == 0 || fence.owner_generation == 0 || fence.lease_generation == 0 {
        return Err("a Spot command's route fence has a zero generation");
    }
    Ok(fence)
}

/// A bound-session tail at `at` (the length already checked).
fn read_session_tail(head: &[u8], at: usize) -> Result<SessionTail, &'static str> {
    let tail = SessionTail {
        binding_generation: be_u64_at(head, at),
        session_seq: be_u64_at(head, at + 8),
    };
    if tail.binding_generation == 0 {
        return Err("a bound-session tail has a zero binding generation");
    }
    Ok(tail)
}

/// A packet name always; a target exactly on commands that take one; a correlation
/// exactly on requests.
fn check_names_and_correlation(
    command: Command,
    correlation: u64,
    target: &WireName,
    packet: &WireName,
) -> Result<(), &'static str> {
    if packet.is_empty() {
        return Err("packet name missing");
    }
    let is_request = command.is_request();
    if is_request && correlation == 0 {
        return Err("correlation must be non-zero");
    }
    if !is_request && correlation != 0 {
        return Err("correlation on a one-way command");
    }
    if command.has_target() == target.is_empty() {
        return Err(if command.has_target() {
            "target name (ChannelName or Spot ID) missing"
        } else {
            "target name on a command without a target"
        });
    }
    Ok(())
}

/// Reads a call head (the prefix already checked). `Err` carries the reason and, when it
/// was readable, the correlation.
pub(crate) fn decode_call_head(
    command: Command,
    head: &Bytes,
) -> Result<CallHead, (String, Option<u64>)> {
    if head.len() < CALL_FIXED_LEN {
        return Err((
            format!(
                "call head of {} bytes is shorter than {CALL_FIXED_LEN}",
                head.len()
            ),
            None,
        ));
    }
    let be_u64 = |at: usize| be_u64_at(head, at);
    let correlation = be_u64(PREFIX_LEN);
    let reported = (correlation != 0).then_some(correlation);
    let fail = |reason: &str| (reason.to_string(), reported);
    let operation = be_u64(13);
    if operation == 0 {
        return Err(fail("operation must be non-zero"));
    }
    let mut dl = [0u8; 4];
    dl.copy_from_slice(&head[21..25]);
    let deadline_ms = u32::from_be_bytes(dl);
    let hops = head[25];
    let target_len = usize::from(head[26]);
    let packet_len = usize::from(head[27]);
    let is_object = carries_fence(command);
    let is_push = command == Command::BoundSessionSend;
    let has_session = head[4] & super::envelope::FLAG_SESSION_TAIL != 0;
    if has_session && !command.takes_session_tail() {
        return Err(fail("a bound-session tail on a command that takes none"));
    }
    let target_end = CALL_FIXED_LEN + target_len;
    let packet_end = target_end + packet_len;
    // Command 23's topic: a length byte and the name, right after the packet name.
    let topic_len = if command == Command::LogicalMulticast {
        match head.get(packet_end) {
            Some(0) | None => return Err(fail("a multicast head without its topic")),
            Some(len) => 1 + usize::from(*len),
        }
    } else {
        0
    };
    let tail = if is_object { FENCE_LEN } else { 0 }
        + topic_len
        + if has_session { SESSION_TAIL_LEN } else { 0 }
        + if is_push { PUSH_TAIL_LEN } else { 0 };
    if head.len() != CALL_FIXED_LEN + target_len + packet_len + tail {
        return Err(fail("call head length does not match its name lengths"));
    }
    let target = WireName::new(head.slice(CALL_FIXED_LEN..target_end)).map_err(&fail)?;
    let packet = WireName::new(head.slice(target_end..packet_end)).map_err(&fail)?;
    let fence = match is_object {
        true => Some(read_fence(head, packet_end).map_err(fail)?),
        false => None,
    };
    let topic = if topic_len > 0 {
        Some(WireName::new(head.slice(packet_end + 1..packet_end + topic_len)).map_err(&fail)?)
    } else {
        None
    };
    let session = match has_session {
        true => Some(read_session_tail(head, packet_end + FENCE_LEN).map_err(fail)?),
        false => None,
    };
    let push = match is_push {
        true => Some(read_push_tail(head, packet_end + FENCE_LEN).map_err(fail)?),
        false => None,
    };
    check_names_and_correlation(command, correlation, &target, &packet).map_err(fail)?;
    Ok(CallHead {
        correlation,
        operation,
        deadline_ms,
        hops,
        target,
        packet,
        fence,
        session,
        topic,
        push,
    })
}
