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

use super::client_packets::{control_packet, judge, malformed, Verdict};
use super::lane::{run_lane, LaneEvent};
use super::limits::StreamLimits;
use super::packet::{decode_packet, CloseReason, ReadError, WireKind, HEARTBEAT_PING};
use super::peer::SessionPeer;
use super::session_type::DynSession;
use super::table::PacketTable;
use super::transport::{PacketSink, PacketSource};
use crate::handle::Handle;
use crate::telemetry::SessionMeter;

/// How long a closing session's notice may take to leave before the socket is dropped.
const CLOSE_LINGER: Duration = Duration::from_secs(1);
/// How long the packets read before a client's close or violation may take to be
/// handled before the session closes anyway.
const LANE_DRAIN: Duration = Duration::from_secs(5);
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
        if let Some(ending) = read_loop(&peer, source, (&limits, &meter), &lane_tx).await {
            close_after_lane(&peer, &lane_tx, ending).await;
        }
        drop(lane_tx);
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
        _ = sink.finish(peer.outbound.closing_notice()) => {}
    }
    peer.ended.cancel();
}

/// Reads until the session starts closing, or until what the client sent ends it: then
/// the reason, for the lane to close with once it handled what it holds.
async fn read_loop(
    peer: &SessionPeer,
    mut source: impl PacketSource,
    (limits, meter): (&StreamLimits, &SessionMeter),
    lane: &mpsc::Sender<LaneEvent>,
) -> Option<(CloseReason, String)> {
    let mut clock = SessionClock::new(limits);
    let check = tokio::time::sleep_until(clock.next());
    tokio::pin!(check);
    loop {
        let raw = tokio::select! {
            biased;
            _ = peer.outbound.closing_started() => return None,
            raw = source.next() => raw,
            _ = &mut check => {
                if !clock.on_timer(peer) {
                    return None;
                }
                check.as_mut().reset(clock.next());
                continue;
            }
        };
        let raw = match raw {
            Ok(raw) => raw,
            Err(e) => {
                let reason = close_reason(&e);
                if reason == CloseReason::TransportError {
                    peer.close(reason, &e.to_string());
                    return None;
                }
                return Some((reason, e.to_string()));
            }
        };
        clock.heard();
        meter.received(raw.body.len());
        let verdict = match decode_packet(raw.body, raw.header_len) {
            Ok(packet) => {
                if packet.kind != WireKind::Control {
                    clock.active();
                }
                judge(peer, packet)
            }
            Err(e) => malformed(peer, e.request_seq, e.detail),
        };
        let event = match verdict {
            Verdict::Read => continue,
            Verdict::Close(reason, diagnostic) => return Some((reason, diagnostic)),
            Verdict::Lane(event) => event,
        };
        // A full lane stops reading: the client's own socket is the backpressure.
        // The wait for it does not count against the client's heartbeat.
        let sent = tokio::select! {
            biased;
            _ = peer.outbound.closing_started() => return None,
            sent = lane.send(event) => sent,
        };
        if sent.is_err() {
            return None;
        }
        clock.heard();
    }
}

/// Closes the session with `reason` once its lane handled the packets read before it,
/// or after [`LANE_DRAIN`] at the latest.
async fn close_after_lane(
    peer: &SessionPeer,
    lane: &mpsc::Sender<LaneEvent>,
    (reason, diagnostic): (CloseReason, String),
) {
    let deadline = Instant::now() + LANE_DRAIN;
    let handed = tokio::select! {
        biased;
        _ = peer.outbound.closing_started() => return,
        sent = tokio::time::timeout_at(deadline, lane.send(LaneEvent::Close(reason, diagnostic.clone()))) => {
            matches!(sent, Ok(Ok(())))
        }
    };
    if handed
        && tokio::time::timeout_at(deadline, peer.outbound.closing_started())
            .await
            .is_ok()
    {
        return;
    }
    peer.close(reason, &diagnostic);
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
            let _ = peer
                .outbound
                .try_push(control_packet(HEARTBEAT_PING, Bytes::new()));
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
