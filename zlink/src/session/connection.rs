//! One client connection: the read loop (packets, heartbeats, timeouts) runs on the
//! connection's task, the writer and the session's lane on tasks of their own. Closing
//! starts once (the first reason wins), writes what is queued and the closing notice,
//! and ends every task; a client that does not take the notice within the linger is
//! cut off.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::lane::{run_lane, AdmittedPacket, LaneEvent};
use super::limits::StreamLimits;
use super::packet::{
    decode_packet, encode_packet, CloseReason, ReadError, StreamCodec, WireKind, WirePacket,
    HEARTBEAT_PING, HEARTBEAT_PONG, SESSION_CLOSING,
};
use super::peer::{answer_error, SessionPeer};
use super::session_type::DynSession;
use super::table::PacketTable;
use super::transport::{PacketSink, PacketSource};
use crate::handle::Handle;
use crate::telemetry::SessionMeter;
use crate::ErrorKind;

/// How long a closing session's notice may take to leave before the socket is dropped.
const CLOSE_LINGER: Duration = Duration::from_secs(1);
/// Largest batch the writer takes at once.
const WRITE_BATCH: usize = 64 * 1024;

/// What one connection runs with.
pub(crate) struct Connection {
    pub(crate) peer: Arc<SessionPeer>,
    pub(crate) session: Box<dyn DynSession>,
    pub(crate) table: Arc<PacketTable>,
    pub(crate) limits: StreamLimits,
    pub(crate) handle: Handle,
}

impl Connection {
    /// Runs the connection until it ends.
    pub(crate) async fn run(self, source: impl PacketSource, sink: impl PacketSink) {
        let Connection {
            peer,
            session,
            table,
            limits,
            handle,
        } = self;
        let meter = handle.node().instruments().sessions.clone();
        let writer = tokio::spawn(write_loop(peer.clone(), sink, meter.clone()));
        let (lane_tx, lane_rx) = mpsc::channel(limits.lane_depth);
        let lane = tokio::spawn(run_lane(peer.clone(), session, table, handle, lane_rx));
        read_loop(&peer, source, (&limits, &meter), lane_tx).await;
        // Closing has started; the writer ends once the notice is out, or the linger does.
        if tokio::time::timeout(CLOSE_LINGER, peer.ended.cancelled())
            .await
            .is_err()
        {
            tracing::debug!(session = %peer.id, "the client did not take the closing notice; cut off");
            peer.ended.cancel();
        }
        let _ = writer.await;
        let _ = lane.await;
    }
}

async fn write_loop(peer: Arc<SessionPeer>, mut sink: impl PacketSink, meter: Arc<SessionMeter>) {
    let mut batch: Vec<Bytes> = Vec::new();
    loop {
        let more = tokio::select! {
            _ = peer.ended.cancelled() => break,
            more = peer.outbound.next_batch(&mut batch, WRITE_BATCH) => more,
        };
        if !more {
            break;
        }
        meter.sent(batch.iter().map(Bytes::len).sum());
        let written = tokio::select! {
            _ = peer.ended.cancelled() => break,
            written = sink.write(&batch) => written,
        };
        batch.clear();
        if let Err(e) = written {
            peer.close(
                CloseReason::TransportError,
                &format!("writing to the client failed: {e}"),
            );
            break;
        }
    }
    tokio::select! {
        _ = peer.ended.cancelled() => {}
        _ = sink.finish() => {}
    }
    peer.ended.cancel();
}

/// Reads until the session starts closing (for any reason, from any side).
async fn read_loop(
    peer: &SessionPeer,
    mut source: impl PacketSource,
    (limits, meter): (&StreamLimits, &SessionMeter),
    lane: mpsc::Sender<LaneEvent>,
) {
    let mut clock = SessionClock::new(limits);
    let check = tokio::time::sleep_until(clock.next());
    tokio::pin!(check);
    loop {
        let raw = tokio::select! {
            biased;
            _ = peer.outbound.closing_started() => return,
            raw = source.next() => raw,
            _ = &mut check => {
                if !clock.on_timer(peer) {
                    return;
                }
                check.as_mut().reset(clock.next());
                continue;
            }
        };
        let raw = match raw {
            Ok(raw) => raw,
            Err(e) => return peer.close(close_reason(&e), &e.to_string()),
        };
        clock.heard();
        meter.received(raw.body.len());
        let packet = match decode_packet(raw.body, raw.header_len) {
            Ok(packet) => packet,
            Err(e) => match e.request_seq {
                // The request is known: it is answered, and the session goes on.
                Some(seq) if !peer.is_pending(seq) => {
                    answer_error(peer, Some(seq), ErrorKind::ProtocolError, &e.detail);
                    continue;
                }
                _ => {
                    peer.close(CloseReason::ProtocolError, &e.detail);
                    return;
                }
            },
        };
        match packet.kind {
            WireKind::Control => {
                if !control_packet(peer, &packet) {
                    return;
                }
            }
            WireKind::Send | WireKind::Request => {
                clock.active();
                let Some(event) = admit(peer, packet) else {
                    if peer.outbound.closing().is_some() {
                        return;
                    }
                    continue;
                };
                // A full lane stops reading: the client's own socket is the backpressure.
                // The wait for it does not count against the client's heartbeat.
                let sent = tokio::select! {
                    biased;
                    _ = peer.outbound.closing_started() => return,
                    sent = lane.send(event) => sent,
                };
                if sent.is_err() {
                    return;
                }
                clock.heard();
            }
            WireKind::Response | WireKind::Error => {
                answer_error(
                    peer,
                    None,
                    ErrorKind::ProtocolError,
                    "the server sends no requests, so a client sends no Response or Error",
                );
            }
        }
    }
}

/// Why a session whose read failed with `e` closes.
fn close_reason(e: &ReadError) -> CloseReason {
    match e {
        ReadError::Closed => CloseReason::ClientClose,
        ReadError::Truncated { .. } | ReadError::Io(_) => CloseReason::TransportError,
        ReadError::Oversize { .. } | ReadError::BadPrefix { .. } | ReadError::Malformed(_) => {
            CloseReason::ProtocolError
        }
    }
}

/// A session's three deadlines: the heartbeat (anything heard), the idle timeout (an
/// application packet) and the next ping. One timer per session wakes at the earliest: a
/// packet only moves the deadlines, it never touches the timer.
struct SessionClock<'a> {
    limits: &'a StreamLimits,
    heard: Instant,
    active: Instant,
    ping_at: Instant,
}

impl<'a> SessionClock<'a> {
    fn new(limits: &'a StreamLimits) -> Self {
        SessionClock {
            limits,
            heard: after(limits.heartbeat_timeout),
            active: after(limits.idle_timeout),
            ping_at: after(limits.heartbeat_interval),
        }
    }

    fn next(&self) -> Instant {
        self.heard.min(self.active).min(self.ping_at)
    }

    fn heard(&mut self) {
        self.heard = after(self.limits.heartbeat_timeout);
    }

    fn active(&mut self) {
        self.active = after(self.limits.idle_timeout);
    }

    /// The timer fired: closes the session on a passed timeout (`false`), or pings when
    /// it is time.
    fn on_timer(&mut self, peer: &SessionPeer) -> bool {
        let now = Instant::now();
        if self.heard <= now {
            let waited = self.limits.heartbeat_timeout.as_millis();
            peer.close(
                CloseReason::HeartbeatTimeout,
                &format!("nothing arrived for {waited} ms"),
            );
            return false;
        }
        if self.active <= now {
            let waited = self.limits.idle_timeout.as_millis();
            peer.close(
                CloseReason::IdleTimeout,
                &format!("no application packet for {waited} ms"),
            );
            return false;
        }
        if self.ping_at <= now {
            self.ping_at = after(self.limits.heartbeat_interval);
            let _ = peer.outbound.try_push(control(HEARTBEAT_PING));
        }
        true
    }
}

/// `d` from now; a zero duration (the timeout is off) is a year away.
fn after(d: Duration) -> Instant {
    let d = if d.is_zero() {
        Duration::from_secs(86_400 * 365)
    } else {
        d
    };
    Instant::now() + d
}

/// A control packet; `false` when the session ends with it.
fn control_packet(peer: &SessionPeer, packet: &WirePacket) -> bool {
    match packet.name.as_str() {
        HEARTBEAT_PING => {
            let _ = peer.outbound.try_push(control(HEARTBEAT_PONG));
            true
        }
        HEARTBEAT_PONG => true,
        SESSION_CLOSING => {
            peer.close(CloseReason::ClientClose, "the client closed the session");
            false
        }
        other => {
            answer_error(
                peer,
                None,
                ErrorKind::ProtocolError,
                &format!("control packet {other:?} is undefined"),
            );
            true
        }
    }
}

/// Checks an application packet before it reaches the lane; `None` when it was answered
/// (or the session closed) instead.
fn admit(peer: &SessionPeer, packet: WirePacket) -> Option<LaneEvent> {
    let seq = packet.request_seq;
    if packet.kind == WireKind::Request && seq.is_none() {
        answer_error(
            peer,
            None,
            ErrorKind::ProtocolError,
            &format!("request {:?} carries no request sequence", packet.name),
        );
        return None;
    }
    let refuse = |detail: String| {
        if seq.is_some() && packet.kind == WireKind::Request {
            answer_error(peer, seq, ErrorKind::ProtocolError, &detail);
        } else {
            answer_error(peer, None, ErrorKind::ProtocolError, &detail);
        }
        None
    };
    if packet.name.starts_with(super::RESERVED_PREFIX) {
        return refuse(format!(
            "packet name {:?} starts with the reserved {:?}",
            packet.name,
            super::RESERVED_PREFIX
        ));
    }
    if packet.name.is_empty() {
        return refuse("a Send or Request packet needs a name".into());
    }
    let codec = match packet.codec {
        0 => StreamCodec::Raw,
        1 => StreamCodec::Json,
        other => {
            return refuse(format!(
                "codec {other} ({}) is not spoken here: send JSON (1) or Raw (0)",
                StreamCodec::describe(other)
            ))
        }
    };
    let request_seq = match packet.kind {
        WireKind::Request => {
            let seq = seq?;
            if !peer.open_request(seq) {
                peer.close(
                    CloseReason::ProtocolError,
                    &format!("request sequence {seq} is reused while its request is pending"),
                );
                return None;
            }
            Some(seq)
        }
        _ => None,
    };
    Some(LaneEvent::Packet(Box::new(AdmittedPacket {
        name: packet.name,
        codec,
        metadata: packet.metadata,
        payload: packet.payload,
        flow: packet.flow,
        request_seq,
    })))
}

fn control(name: &str) -> Bytes {
    let packet = WirePacket::new(WireKind::Control, StreamCodec::Raw, name, Bytes::new());
    encode_packet(&packet).unwrap_or_default()
}
