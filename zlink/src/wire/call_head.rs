//! The fixed binary head of application commands (node and channel sends and requests,
//! fanout events). The hot path reads it with a handful of bounds checks and no serde pass.
//!
//! ```text
//! offset  size  field
//!  0      5     prefix 5A 4D 02 <command> <flags>
//!  5      8     correlation, u64 big-endian (non-zero on requests, zero otherwise)
//! 13      4     deadline_ms, u32 big-endian: the request's remaining budget (0 = none)
//! 17      1     hops: how many times the message was forwarded (0 from its sender)
//! 18      1     channel name length (0 for node-direct and fanout)
//! 19      1     packet name length (1..=255)
//! 20      ...   channel name bytes, then packet name bytes (UTF-8); nothing after
//! ```

use bytes::{BufMut, Bytes, BytesMut};

use super::{Command, WireName, PREFIX_LEN};

/// Bytes before the names.
pub(crate) const CALL_FIXED_LEN: usize = 20;

/// The fields of an application command's head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallHead {
    /// Request/reply correlation: non-zero on requests, zero on sends and events.
    pub correlation: u64,
    /// Remaining request budget in milliseconds when sent; 0 = none (sends).
    pub deadline_ms: u32,
    /// Forwarding hops so far.
    pub hops: u8,
    /// ChannelName (channel commands only; empty otherwise).
    pub channel: WireName,
    /// Packet name of the payload.
    pub packet: WireName,
}

/// Writes a call head from borrowed names (the sender's interned names are copied once,
/// straight into the frame).
pub(crate) fn encode_call_head(
    command: Command,
    flags: u8,
    correlation: u64,
    deadline_ms: u32,
    channel: &str,
    packet: &str,
) -> Bytes {
    let mut head = BytesMut::with_capacity(CALL_FIXED_LEN + channel.len() + packet.len());
    head.put_slice(&super::prefix(command, flags));
    head.put_u64(correlation);
    head.put_u32(deadline_ms);
    head.put_u8(0);
    // Names are validated to 1..=255 bytes where they enter the program (builder, macros);
    // a longer one is truncated here rather than corrupting the layout.
    let channel = &channel.as_bytes()[..channel.len().min(255)];
    let packet = &packet.as_bytes()[..packet.len().min(255)];
    head.put_u8(channel.len() as u8);
    head.put_u8(packet.len() as u8);
    head.put_slice(channel);
    head.put_slice(packet);
    head.freeze()
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
    let be_u64 = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&head[at..at + 8]);
        u64::from_be_bytes(b)
    };
    let correlation = be_u64(PREFIX_LEN);
    let reported = (correlation != 0).then_some(correlation);
    let fail = |reason: &str| (reason.to_string(), reported);
    let mut dl = [0u8; 4];
    dl.copy_from_slice(&head[13..17]);
    let deadline_ms = u32::from_be_bytes(dl);
    let hops = head[17];
    let channel_len = usize::from(head[18]);
    let packet_len = usize::from(head[19]);
    if head.len() != CALL_FIXED_LEN + channel_len + packet_len {
        return Err(fail("call head length does not match its name lengths"));
    }
    let channel_end = CALL_FIXED_LEN + channel_len;
    let channel = WireName::new(head.slice(CALL_FIXED_LEN..channel_end)).map_err(&fail)?;
    let packet = WireName::new(head.slice(channel_end..)).map_err(&fail)?;
    if packet.is_empty() {
        return Err(fail("packet name missing"));
    }
    let is_request = command.is_request();
    if is_request && correlation == 0 {
        return Err(fail("correlation must be non-zero"));
    }
    if !is_request && correlation != 0 {
        return Err(fail("correlation on a one-way command"));
    }
    let is_channel = matches!(command, Command::ChannelSend | Command::ChannelRequest);
    if is_channel == channel.is_empty() {
        return Err(fail(if is_channel {
            "channel name missing"
        } else {
            "channel name on a command without a channel"
        }));
    }
    Ok(CallHead {
        correlation,
        deadline_ms,
        hops,
        channel,
        packet,
    })
}
