//! Inbound dispatch: decode, admission checks, then handler work or infrastructure.

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use tokio::time::Instant;

use super::node::{lock, ConnState, MeshNode, Phase};
use crate::channel::{HandlerContext, HandlerGroup, PacketKind};
use crate::host::Runtime;
use crate::link::{ConnId, Connection, Frames, LinkEvents};
use crate::wire::{Command, Envelope, Header, ReplyStatus, WireError};
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

/// The handler target of one application message.
struct Dispatch {
    handlers: Arc<dyn HandlerGroup>,
    kind: Option<PacketKind>,
    channel: Option<String>,
    source_rid: Option<String>,
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
        let ready_rid = {
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
                Phase::Ready { rid } => Some(ReadySender {
                    rid: rid.clone(),
                    inflight: state.inflight.clone(),
                }),
                _ => None,
            }
        };
        let Some(sender) = ready_rid else {
            return self.on_unadmitted(conn, envelope);
        };
        let rid = sender.rid.as_str();
        if !self.accepts(envelope.command) {
            tracing::warn!(peer = %rid, command = ?envelope.command, topology = ?self.topology(), "protocol_error: command not allowed in this direction; closing");
            return self.connection_lost(conn.id(), "command not allowed in this direction");
        }
        let Envelope {
            command,
            header,
            metadata,
            payload,
        } = envelope;
        match command {
            Command::LivenessProbe => {
                let ack = Header {
                    probe: header.probe,
                    ..Header::default()
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
            Command::Reply => self.on_reply(conn.id(), header, payload),
            Command::Update => {
                if let Some(adm) = header.admission {
                    self.on_update(conn.id(), rid, adm);
                }
            }
            Command::Hello | Command::Admit | Command::Reject => {
                tracing::warn!(peer = %rid, ?command, "handshake command on a ready connection ignored");
            }
            // Refused by `accepts` above: fanout events never travel on these connections.
            Command::FanoutEvent => {}
            Command::NodeSend
            | Command::NodeRequest
            | Command::ChannelSend
            | Command::ChannelRequest => {
                let payload = payload.unwrap_or_default();
                self.on_application(
                    conn,
                    &sender,
                    command,
                    header,
                    metadata.unwrap_or_default(),
                    payload,
                );
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
        let head_only: Frames = frames.iter().take(1).cloned().collect();
        let correlation = match Envelope::decode(&head_only) {
            Ok(e) if matches!(e.command, Command::ChannelRequest | Command::NodeRequest) => {
                Some(e.header.correlation)
            }
            Err(e)
                if matches!(
                    e.command,
                    Some(Command::ChannelRequest | Command::NodeRequest)
                ) =>
            {
                e.correlation
            }
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
            self.send_reply(conn, correlation, Err(err));
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
        match (envelope.command, dialed) {
            (Command::Hello, false) => match envelope.header.admission {
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
            (Command::Admit, true) => match envelope.header.admission {
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
            (Command::Reject, true) => self.on_reject(conn, envelope.header),
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
        let is_request = matches!(
            error.command,
            Some(Command::NodeRequest | Command::ChannelRequest)
        );
        match (admitted, error.correlation) {
            (true, Some(correlation)) if is_request => {
                let err = Error::new(ErrorKind::ProtocolError, error.reason);
                self.send_reply(conn, correlation, Err(err));
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

    fn on_reply(&self, conn_id: ConnId, header: Header, payload: Option<Bytes>) {
        let status = header.status.unwrap_or(ReplyStatus {
            error_kind: None,
            detail: String::new(),
        });
        let result = match status.error_kind.and_then(ErrorKind::from_code) {
            None => Ok(payload.unwrap_or_default()),
            Some(kind) => Err(Error::new(kind, status.detail)),
        };
        if !self.pending.complete(header.correlation, conn_id, result) {
            tracing::debug!(
                correlation = header.correlation,
                conn = conn_id,
                "late reply discarded"
            );
        }
    }

    fn dispatch_for(&self, rid: &str, command: Command, header: &Header) -> Option<Dispatch> {
        let packet = header.packet.as_deref().unwrap_or_default();
        match command {
            Command::ChannelSend | Command::ChannelRequest => {
                let channel = header.channel.clone()?;
                let entry = self.registry.servers.get(&channel)?;
                Some(Dispatch {
                    handlers: entry.handlers.clone(),
                    kind: entry.kinds.get(packet).copied(),
                    channel: Some(channel),
                    source_rid: None,
                })
            }
            _ => {
                let (handlers, kinds) = self.settings.node_handlers.as_ref()?;
                Some(Dispatch {
                    handlers: handlers.clone(),
                    kind: kinds.get(packet).copied(),
                    channel: None,
                    source_rid: Some(rid.to_string()),
                })
            }
        }
    }

    fn on_application(
        &self,
        conn: &Arc<dyn Connection>,
        sender: &ReadySender,
        command: Command,
        header: Header,
        metadata: crate::wire::Metadata,
        payload: Bytes,
    ) {
        let rid = sender.rid.as_str();
        let is_request = matches!(command, Command::NodeRequest | Command::ChannelRequest);
        let wanted = if is_request {
            PacketKind::Request
        } else {
            PacketKind::Send
        };
        let packet = header.packet.clone().unwrap_or_default();
        let dispatch = self
            .dispatch_for(rid, command, &header)
            .filter(|d| d.kind == Some(wanted));
        let Some(dispatch) = dispatch else {
            let target = header.channel.as_deref().unwrap_or("node-direct");
            tracing::warn!(peer = %rid, channel = target, packet = %packet, request = is_request, "no_handler");
            if is_request {
                let err = Error::new(
                    ErrorKind::NotFound,
                    format!("no handler for {packet} on {target}"),
                );
                self.send_reply(conn, header.correlation, Err(err));
            }
            return;
        };
        if !self.is_running() {
            if is_request {
                let err = Error::new(ErrorKind::ShuttingDown, "the target node is shutting down");
                self.send_reply(conn, header.correlation, Err(err));
            } else {
                tracing::warn!(peer = %rid, packet = %packet, "drop: send arrived during shutdown");
            }
            return;
        }
        let (Some(node), Some(runtime_node)) = (self.me.upgrade(), self.runtime_node()) else {
            return;
        };
        // One peer cannot occupy the node: past its share of concurrent handler calls, a
        // request is answered at once and a send is dropped.
        let cap = self.settings.limits.max_inflight_per_connection;
        let Some(slot) = super::count_permit::CountPermit::take(sender.inflight.clone(), cap)
        else {
            tracing::warn!(peer = %rid, packet = %packet, "capacity_exceeded: too many handler calls in flight for this connection");
            if is_request {
                let err = Error::new(
                    ErrorKind::CapacityExceeded,
                    "too many requests in flight on this connection",
                );
                self.send_reply(conn, header.correlation, Err(err));
            }
            return;
        };
        let deadline = header
            .deadline_ms
            .map(|ms| Instant::now() + std::time::Duration::from_millis(ms));
        let ctx = HandlerContext {
            runtime: Runtime::from_node(runtime_node),
            channel: dispatch.channel,
            source_rid: dispatch.source_rid,
            metadata,
            deadline,
        };
        let correlation = header.correlation;
        let handlers = dispatch.handlers;
        let mut work: BoxedWork =
            Box::pin(async move { handlers.handle(ctx, &packet, payload).await });
        // Fast path: a handler that completes without waiting is answered right here, so a
        // burst of requests read together leaves as a burst of replies (one socket write
        // instead of one per reply). Anything that waits continues on its own task. A handler
        // that computes for long before its first await delays this connection's reads (and
        // liveness acks) by that long, as any blocking code on a tokio worker would.
        if let Some(result) = poll_once(&mut work) {
            drop(slot);
            return self.finish(conn, is_request, correlation, result);
        }
        let conn = conn.clone();
        let cancel = self.cancel.clone();
        self.work.spawn(async move {
            let result = tokio::select! {
                r = work => Some(r),
                _ = cancel.cancelled() => Some(Err(Error::new(ErrorKind::ShuttingDown, "handler stopped by shutdown"))),
                // The caller has given up by now: stop the handler, drop its reply.
                _ = sleep_until_opt(deadline) => None,
            };
            drop(slot);
            match result {
                Some(result) => node.finish(&conn, is_request, correlation, result),
                None => tracing::debug!(correlation, "handler cancelled: the caller's deadline passed"),
            }
        });
    }

    /// Replies to a request (or logs a send handler's failure).
    fn finish(
        &self,
        conn: &Arc<dyn Connection>,
        is_request: bool,
        correlation: u64,
        result: crate::Result<Bytes>,
    ) {
        if is_request {
            self.send_reply(conn, correlation, result);
        } else if let Err(e) = result {
            tracing::warn!(error = %e, "reply_error: send handler failed");
        }
    }

    /// Sends the terminal reply for a request on the connection it came from, without
    /// waiting (a peer that stops reading loses the connection after the send timeout).
    pub(crate) fn send_reply(
        &self,
        conn: &Arc<dyn Connection>,
        correlation: u64,
        result: crate::Result<Bytes>,
    ) {
        self.send_bounded(conn, reply_frames(correlation, result), "reply");
    }
}

/// The admitted connection a message came from.
struct ReadySender {
    rid: String,
    /// Its handler calls still running.
    inflight: Arc<AtomicUsize>,
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

type BoxedWork = std::pin::Pin<Box<dyn std::future::Future<Output = crate::Result<Bytes>> + Send>>;

/// Polls a future once without a task; `None` when it has to wait. A future that returns
/// pending re-registers its real waker when its task polls it again.
pub(crate) fn poll_once<F: std::future::Future + Unpin>(future: &mut F) -> Option<F::Output> {
    let mut cx = std::task::Context::from_waker(futures::task::noop_waker_ref());
    match std::pin::Pin::new(future).poll(&mut cx) {
        std::task::Poll::Ready(output) => Some(output),
        std::task::Poll::Pending => None,
    }
}

/// The frames of a terminal reply. A reply never carries the request's metadata.
fn reply_frames(correlation: u64, result: crate::Result<Bytes>) -> Frames {
    let (status, payload) = match result {
        Ok(bytes) => (
            ReplyStatus {
                error_kind: None,
                detail: String::new(),
            },
            Some(bytes),
        ),
        Err(e) => {
            let kind = e.kind().unwrap_or(ErrorKind::InternalFailure);
            let detail = match &e {
                Error::Failed { detail, .. } => detail.clone(),
                other => other.to_string(),
            };
            (
                ReplyStatus {
                    error_kind: Some(kind.code()),
                    detail,
                },
                None,
            )
        }
    };
    let envelope = Envelope {
        command: Command::Reply,
        header: Header {
            correlation,
            status: Some(status),
            ..Header::default()
        },
        metadata: None,
        payload,
    };
    envelope.encode()
}
