//! Inbound dispatch: decode, admission checks, then handler work or infrastructure.

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use tokio::time::Instant;

use super::count_permit::CountPermit;
use super::dispatch::{reply_outcome, InboundCall, ReplyRoute};
use super::node::{lock, ConnState, MeshNode, Phase};
use super::peer_table::{PeerLink, UpdateOutcome};
use crate::link::{ConnId, Connection, Frames, LinkEvents};
use crate::wire::{CallMessage, Command, ControlHeader, Envelope, ReplyOutcome, WireError};
use crate::{Error, ErrorKind};

/// The node's [`LinkEvents`], holding it weakly so transports never keep a node alive.
pub(crate) struct NodeEvents {
    node: Weak<MeshNode>,
    /// Whether the connections reporting here were dialed by us (they may only ever be
    /// answered with admit or reject, even before the dialer has registered them).
    dialed: bool,
}

impl NodeEvents {
    /// Events of connections the node's listener accepted.
    pub(crate) fn accepted(node: Weak<MeshNode>) -> Self {
        NodeEvents {
            node,
            dialed: false,
        }
    }

    /// Events of a connection the node dialed.
    pub(crate) fn dialed(node: Weak<MeshNode>) -> Self {
        NodeEvents { node, dialed: true }
    }
}

impl LinkEvents for NodeEvents {
    fn on_frames(&self, conn: &Arc<dyn Connection>, frames: Frames) {
        if let Some(node) = self.node.upgrade() {
            node.on_frames(conn, frames, self.dialed);
        }
    }

    fn on_closed(&self, conn: ConnId) {
        if let Some(node) = self.node.upgrade() {
            node.connection_lost(conn, "transport closed");
        }
    }
}

impl MeshNode {
    fn on_frames(&self, conn: &Arc<dyn Connection>, frames: Frames, dialed: bool) {
        let max = self.settings.max_message;
        if max > 0 {
            let size: usize = frames.iter().map(|f| f.len()).sum();
            if size > max {
                return self.on_oversize(conn, &frames, size);
            }
        }
        let envelope = match Envelope::decode(&frames) {
            Ok(e) => e,
            Err(e) => return self.on_malformed(conn, e, dialed),
        };
        let ready = {
            let mut conns = lock(&self.conns);
            let state = conns.entry(conn.id()).or_insert_with(|| ConnState {
                conn: conn.clone(),
                // A dialed connection the dialer has not registered yet: whatever arrives
                // now cannot be the admit to a hello we have not sent.
                phase: if dialed {
                    Phase::AwaitAdmit {
                        expected_rid: None,
                        expected_generation: None,
                        outcome: None,
                    }
                } else {
                    Phase::AwaitHello
                },
                liveness: None,
                on_close: None,
                opened: Instant::now(),
                inflight: Arc::default(),
                waiting_sends: Arc::default(),
            });
            match &state.phase {
                Phase::Ready { link } => Some(ReadySender {
                    link: link.clone(),
                    inflight: state.inflight.clone(),
                }),
                _ => None,
            }
        };
        let Some(sender) = ready else {
            return self.on_unadmitted(conn, envelope);
        };
        let command = envelope.command();
        if !self.accepts(command) {
            tracing::warn!(peer = %sender.link.rid(), ?command, topology = ?self.topology(), "protocol_error: command not allowed in this direction; closing");
            return self.connection_lost(conn.id(), "command not allowed in this direction");
        }
        match envelope {
            Envelope::Reply {
                correlation,
                outcome,
            } => self.on_reply(conn.id(), correlation, outcome),
            Envelope::Call(call) => self.on_call(sender, call),
            Envelope::Control { command, header } => {
                self.on_control(conn, sender.link.rid(), command, header)
            }
        }
    }

    fn on_control(
        &self,
        conn: &Arc<dyn Connection>,
        rid: &Arc<str>,
        command: Command,
        header: ControlHeader,
    ) {
        match command {
            Command::LivenessProbe => {
                let ack = ControlHeader {
                    probe: header.probe,
                    ..ControlHeader::default()
                };
                self.send_control(conn, Command::LivenessAck, ack);
            }
            Command::LivenessAck => {
                if let Some(l) = lock(&self.conns)
                    .get_mut(&conn.id())
                    .and_then(|s| s.liveness.as_mut())
                {
                    l.ack(header.probe, Instant::now());
                }
            }
            Command::Update => {
                let Some(adm) = header.admission else { return };
                match self.peers.update(conn.id(), adm) {
                    UpdateOutcome::Applied => tracing::info!(peer = %rid, "peer weights updated"),
                    UpdateOutcome::Stale => tracing::debug!(peer = %rid, "stale update ignored"),
                    UpdateOutcome::Unknown => {}
                    UpdateOutcome::IdentityChanged => {
                        tracing::warn!(peer = %rid, "update changed identity or generation: protocol error");
                        self.connection_lost(conn.id(), "protocol error in update");
                    }
                }
            }
            other => {
                tracing::warn!(peer = %rid, command = ?other, "handshake command on a ready connection ignored");
            }
        }
    }

    /// Which commands an admitted connection may carry towards this node. ClientServer is
    /// one-way: clients send calls, servers send only replies (and updates).
    fn accepts(&self, command: Command) -> bool {
        use crate::config::Topology;
        match (self.topology(), command) {
            (_, Command::FanoutEvent) => false,
            (_, Command::LivenessProbe | Command::LivenessAck) => true,
            (Topology::RouteMesh, _) => true,
            (Topology::ClientServerServer, c) => {
                matches!(c, Command::ChannelSend | Command::ChannelRequest)
            }
            (Topology::ClientServerClient, c) => matches!(c, Command::Reply | Command::Update),
        }
    }

    /// A message over this node's size cap: refused before decoding; a request gets an
    /// error reply when its correlation can be read from the head.
    fn on_oversize(&self, conn: &Arc<dyn Connection>, frames: &Frames, size: usize) {
        let max = self.settings.max_message;
        tracing::warn!(
            conn = conn.id(),
            size,
            max,
            "protocol_error: message over the size cap dropped"
        );
        // The head alone, with an empty payload frame, tells a request's correlation.
        let head_only: Frames = frames
            .iter()
            .take(1)
            .cloned()
            .chain(std::iter::once(Bytes::new()))
            .collect();
        let correlation = match Envelope::decode(&head_only) {
            Ok(Envelope::Call(call)) if call.command.is_request() => Some(call.head.correlation),
            Err(e) if e.command.is_some_and(Command::is_request) => e.correlation,
            _ => None,
        };
        let admitted = matches!(
            lock(&self.conns).get(&conn.id()).map(|s| &s.phase),
            Some(Phase::Ready { .. })
        );
        if let (true, Some(correlation)) = (admitted, correlation) {
            let err = Error::new(
                ErrorKind::CapacityExceeded,
                format!("message of {size} bytes exceeds the receiver's cap of {max} bytes"),
            );
            self.reply(
                &ReplyRoute {
                    conn: conn.clone(),
                    correlation,
                },
                Err(err),
            );
        }
    }

    fn on_unadmitted(&self, conn: &Arc<dyn Connection>, envelope: Envelope) {
        let (dialed, rejected) = match lock(&self.conns).get(&conn.id()).map(|s| &s.phase) {
            Some(Phase::AwaitAdmit { .. }) => (true, false),
            Some(Phase::Rejected) => (false, true),
            _ => (false, false),
        };
        if rejected {
            return;
        }
        let (command, header) = match envelope {
            Envelope::Control { command, header } => (command, header),
            other => (other.command(), ControlHeader::default()),
        };
        match (command, dialed) {
            (Command::Hello, false) => match header.admission {
                Some(adm) => self.on_hello(conn, adm),
                None => self.reject(
                    conn,
                    crate::wire::RejectReason::InvalidDescriptor,
                    "hello without admission",
                ),
            },
            // We dialed and said hello: only admit or reject may answer. A hello back
            // would skip the checks of the RID and generation we expect.
            (Command::Hello, true) => {
                tracing::warn!(conn = conn.id(), "hello in answer to our dial: refused");
                self.refuse_dial(conn, "hello in answer to a dial");
            }
            (Command::Admit, true) => match header.admission {
                Some(adm) => self.on_admit(conn, adm),
                None => self.refuse_dial(conn, "admit without admission"),
            },
            (Command::Admit, false) => {
                tracing::warn!(
                    conn = conn.id(),
                    "admit on a connection we did not dial; closing"
                );
                self.connection_lost(conn.id(), "unexpected admit");
            }
            (Command::Reject, true) => self.on_reject(conn, header),
            (Command::Reject, false) => {
                self.connection_lost(conn.id(), "unexpected reject");
            }
            (other, _) => {
                tracing::warn!(conn = conn.id(), command = ?other, "message before admission dropped");
                if matches!(
                    lock(&self.conns).get(&conn.id()).map(|s| &s.phase),
                    Some(Phase::AwaitHello)
                ) {
                    self.reject(
                        conn,
                        crate::wire::RejectReason::InvalidDescriptor,
                        "expected hello",
                    );
                }
            }
        }
    }

    fn on_malformed(&self, conn: &Arc<dyn Connection>, error: WireError, dialed: bool) {
        tracing::warn!(conn = conn.id(), reason = %error.reason, "protocol_error");
        let admitted = matches!(
            lock(&self.conns).get(&conn.id()).map(|s| &s.phase),
            Some(Phase::Ready { .. })
        );
        let is_request = error.command.is_some_and(Command::is_request);
        match (admitted, error.correlation) {
            (true, Some(correlation)) if is_request => {
                let err = Error::new(ErrorKind::ProtocolError, error.reason);
                self.reply(
                    &ReplyRoute {
                        conn: conn.clone(),
                        correlation,
                    },
                    Err(err),
                );
            }
            (true, _) => {}
            // Garbage from a server we dialed: nothing to reject, the dial failed.
            (false, _) if dialed => self.refuse_dial(conn, "malformed answer to our dial"),
            (false, _) => {
                lock(&self.conns)
                    .entry(conn.id())
                    .or_insert_with(|| ConnState {
                        conn: conn.clone(),
                        phase: Phase::AwaitHello,
                        liveness: None,
                        on_close: None,
                        opened: Instant::now(),
                        inflight: Arc::default(),
                        waiting_sends: Arc::default(),
                    });
                self.reject(
                    conn,
                    crate::wire::RejectReason::InvalidDescriptor,
                    &error.reason,
                );
            }
        }
    }

    fn on_reply(&self, conn_id: ConnId, correlation: u64, outcome: ReplyOutcome) {
        let result = match outcome {
            ReplyOutcome::Ok(payload) => Ok(payload),
            ReplyOutcome::Failed { kind, detail } => Err(Error::new(
                ErrorKind::from_code(kind).unwrap_or(ErrorKind::InternalFailure),
                detail,
            )),
        };
        if !self.pending.complete(correlation, conn_id, result) {
            tracing::debug!(correlation, conn = conn_id, "late reply discarded");
        }
    }

    /// An application command from an admitted peer: the node-wide admission checks, then
    /// the route registered for the command.
    fn on_call(&self, sender: ReadySender, call: CallMessage) {
        let rid = sender.link.rid().clone();
        let request = call.command.is_request();
        let refuse = |node: &MeshNode, err: Error| {
            if request {
                let route = ReplyRoute {
                    conn: sender.link.conn().clone(),
                    correlation: call.head.correlation,
                };
                node.reply(&route, Err(err));
            }
        };
        if !self.is_running() {
            if !request {
                tracing::warn!(peer = %rid, packet = %call.head.packet, "drop: send arrived during shutdown");
            }
            return refuse(
                self,
                Error::new(ErrorKind::ShuttingDown, "the target node is shutting down"),
            );
        }
        let Some(route) = self.dispatcher.route(call.command) else {
            tracing::warn!(peer = %rid, command = ?call.command, "no_handler: no route for the command");
            return refuse(
                self,
                Error::new(
                    ErrorKind::NotFound,
                    format!("this node has no route for {:?}", call.command),
                ),
            );
        };
        // One peer cannot occupy the node: past its share of concurrent handler calls, a
        // request is answered at once and a send is dropped.
        let cap = self.settings.limits.max_inflight_per_connection;
        let Some(permit) = CountPermit::take(sender.inflight.clone(), cap) else {
            tracing::warn!(peer = %rid, packet = %call.head.packet, "capacity_exceeded: too many handler calls in flight for this connection");
            return refuse(
                self,
                Error::new(
                    ErrorKind::CapacityExceeded,
                    "too many requests in flight on this connection",
                ),
            );
        };
        let Some(node) = self.me.upgrade() else {
            return;
        };
        route.deliver(InboundCall::new(node, sender.link, call, permit));
    }

    /// Sends the terminal reply for a request on the connection it came from, without
    /// waiting (a peer that stops reading loses the connection after the send timeout).
    pub(crate) fn reply(&self, route: &ReplyRoute, result: crate::Result<Bytes>) {
        let frames = crate::wire::encode_reply(route.correlation, &reply_outcome(result));
        self.send_bounded(&route.conn, frames, "reply");
    }
}

/// The admitted connection a message came from.
struct ReadySender {
    link: PeerLink,
    /// Its handler calls still running.
    inflight: Arc<AtomicUsize>,
}

/// Polls a future once without a task; `None` when it has to wait. A future that returns
/// pending re-registers its real waker when its task polls it again.
pub(crate) fn poll_once<F: std::future::Future + Unpin>(future: &mut F) -> Option<F::Output> {
    let mut cx = std::task::Context::from_waker(futures::task::noop_waker_ref());
    match std::pin::Pin::new(future).poll(&mut cx) {
        std::task::Poll::Ready(output) => Some(output),
        std::task::Poll::Pending => None,
    }
}
