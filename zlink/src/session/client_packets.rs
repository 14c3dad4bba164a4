//! What a client may send, and the one rule for a packet that breaks it: a malformed
//! packet whose request sequence is readable (flag `0x01`, its 8 bytes, not 0, and no
//! request with it pending) is answered with an Error (`ProtocolError`) under that
//! sequence, and the session goes on; any other malformed packet closes the session
//! with `ProtocolError`, once the packets read before it are handled.

use bytes::Bytes;

use super::lane::{AdmittedPacket, LaneEvent};
use super::packet::{
    encode_packet, CloseReason, StreamCodec, WireKind, WirePacket, HEARTBEAT_PING, HEARTBEAT_PONG,
    SESSION_CLOSING,
};
use super::peer::{answer_error, SessionPeer};
use crate::ErrorKind;

/// What the read loop does after one packet.
pub(crate) enum Verdict {
    /// Read on: the packet was handled (or answered) here.
    Read,
    /// Hand the packet to the session's lane.
    Lane(LaneEvent),
    /// Stop reading; the session closes with this reason after the lane handled what it
    /// holds.
    Close(CloseReason, String),
}

/// Judges one decoded packet from the client.
pub(crate) fn judge(peer: &SessionPeer, packet: WirePacket) -> Verdict {
    let codec = match check(&packet) {
        Ok(codec) => codec,
        Err(detail) => return malformed(peer, packet.request_seq, detail),
    };
    match packet.kind {
        WireKind::Control => control(peer, packet),
        _ => admit(peer, packet, codec),
    }
}

/// The rule for a malformed packet whose header gave `seq` (`None`: no readable one).
pub(crate) fn malformed(peer: &SessionPeer, seq: Option<u64>, detail: String) -> Verdict {
    match seq {
        Some(seq) if seq != 0 && !peer.is_pending(seq) => {
            answer_error(peer, Some(seq), ErrorKind::ProtocolError, &detail);
            Verdict::Read
        }
        Some(seq) if seq != 0 => Verdict::Close(
            CloseReason::ProtocolError,
            format!("{detail} (and request sequence {seq} is pending)"),
        ),
        _ => Verdict::Close(CloseReason::ProtocolError, detail),
    }
}

/// What a well-formed header may hold, kind by kind; the codec of an application packet.
fn check(packet: &WirePacket) -> Result<StreamCodec, String> {
    let seq = packet.request_seq.is_some();
    match packet.kind {
        WireKind::Response | WireKind::Error => {
            return Err("a client sends no Response or Error: the server sends no requests".into())
        }
        WireKind::Request if !seq => {
            return Err(format!(
                "request {:?} carries no request sequence (flag 0x01)",
                packet.name
            ))
        }
        WireKind::Send | WireKind::Control if seq => {
            return Err(format!(
                "a {:?} packet carries no request sequence, and {:?} has one",
                packet.kind, packet.name
            ))
        }
        WireKind::Control => return check_control(packet).map(|()| StreamCodec::Raw),
        WireKind::Send | WireKind::Request => {}
    }
    if packet.name.is_empty() {
        return Err("a Send or Request packet needs a name".into());
    }
    if packet.name.starts_with(super::RESERVED_PREFIX) {
        return Err(format!(
            "packet name {:?} starts with the reserved {:?}",
            packet.name,
            super::RESERVED_PREFIX
        ));
    }
    match packet.codec {
        0 => Ok(StreamCodec::Raw),
        1 => Ok(StreamCodec::Json),
        other => Err(format!(
            "codec {other} ({}) is not spoken here: send JSON (1) or Raw (0)",
            StreamCodec::describe(other)
        )),
    }
}

fn check_control(packet: &WirePacket) -> Result<(), String> {
    if ![HEARTBEAT_PING, HEARTBEAT_PONG, SESSION_CLOSING].contains(&packet.name.as_str()) {
        return Err(format!("control packet {:?} is undefined", packet.name));
    }
    if packet.codec != StreamCodec::Raw as u8 {
        return Err(format!(
            "control packet {:?} comes in codec Raw (0), not {}",
            packet.name, packet.codec
        ));
    }
    if !packet.metadata.is_empty() || packet.correlation.is_some() || packet.flow.is_some() {
        return Err(format!(
            "control packet {:?} carries no metadata, correlation or flow",
            packet.name
        ));
    }
    Ok(())
}

/// A control packet the client sent: a ping is answered with its own payload.
fn control(peer: &SessionPeer, packet: WirePacket) -> Verdict {
    match packet.name.as_str() {
        HEARTBEAT_PING => {
            let _ = peer
                .outbound
                .try_push(control_packet(HEARTBEAT_PONG, packet.payload));
            Verdict::Read
        }
        SESSION_CLOSING => Verdict::Close(
            CloseReason::ClientClose,
            "the client closed the session".into(),
        ),
        _ => Verdict::Read,
    }
}

/// A Send or Request for the lane; a request sequence reused while pending closes the
/// session.
fn admit(peer: &SessionPeer, packet: WirePacket, codec: StreamCodec) -> Verdict {
    if let Some(seq) = packet.request_seq {
        if !peer.open_request(seq) {
            return Verdict::Close(
                CloseReason::ProtocolError,
                format!("request sequence {seq} is reused while its request is pending"),
            );
        }
    }
    Verdict::Lane(LaneEvent::Packet(Box::new(AdmittedPacket {
        name: packet.name,
        codec,
        metadata: packet.metadata,
        payload: packet.payload,
        flow: packet.flow,
        request_seq: packet.request_seq,
    })))
}

/// An encoded control packet named `name` carrying `payload`.
pub(crate) fn control_packet(name: &str, payload: Bytes) -> Bytes {
    let packet = WirePacket::new(WireKind::Control, StreamCodec::Raw, name, payload);
    encode_packet(&packet).unwrap_or_default()
}
