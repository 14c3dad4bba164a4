//! Inbound dispatch: decode, admission checks, then handler work or infrastructure.

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
pub(crate) struct NodeEvents(pub(crate) Weak<MeshNode>);

impl LinkEvents for NodeEvents {
    fn on_frames(&self, conn: &Arc<dyn Connection>, frames: Frames) {
        if let Some(node) = self.0.upgrade() {
            node.on_frames(conn, frames);
        }
    }

    fn on_closed(&self, conn: ConnId) {
        if let Some(node) = self.0.upgrade() {
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
    fn on_frames(&self, conn: &Arc<dyn Connection>, frames: Frames) {
        let max = self.settings.max_message;
        if max > 0 {
            let size: usize = frames.iter().map(|f| f.len()).sum();
            if size > max {
                return self.on_oversize(conn, &frames, size);
            }
        }
        let envelope = match Envelope::decode(&frames) {
            Ok(e) => e,
            Err(e) => return self.on_malformed(conn, e),
        };
        let ready_rid = {
            let mut conns = lock(&self.conns);
            let state = conns.entry(conn.id()).or_insert_with(|| ConnState {
                conn: conn.clone(),
                phase: Phase::AwaitHello,
                liveness: None,
                on_close: None,
                opened: Instant::now(),
            });
            match &state.phase {
                Phase::Ready { rid } => Some(rid.clone()),
                _ => None,
            }
        };
        let Some(rid) = ready_rid else {
            return self.on_unadmitted(conn, envelope);
        };
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
                    self.on_update(conn.id(), &rid, adm);
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
                    &rid,
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
        match envelope.command {
            Command::Hello => match envelope.header.admission {
                Some(adm) => self.on_hello(conn, adm),
                None => self.reject(
                    conn,
                    crate::wire::RejectReason::InvalidDescriptor,
                    "hello without admission",
                ),
            },
            Command::Admit => {
                if let Some(adm) = envelope.header.admission {
                    self.on_admit(conn, adm);
                }
            }
            Command::Reject => self.on_reject(conn, envelope.header),
            other => {
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

    fn on_malformed(&self, conn: &Arc<dyn Connection>, error: WireError) {
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
            (false, _) => {
                lock(&self.conns)
                    .entry(conn.id())
                    .or_insert_with(|| ConnState {
                        conn: conn.clone(),
                        phase: Phase::AwaitHello,
                        liveness: None,
                        on_close: None,
                        opened: Instant::now(),
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
        rid: &str,
        command: Command,
        header: Header,
        metadata: crate::wire::Metadata,
        payload: Bytes,
    ) {
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
        let ctx = HandlerContext {
            runtime: Runtime::from_node(runtime_node),
            channel: dispatch.channel,
            source_rid: dispatch.source_rid,
            metadata,
            deadline: header
                .deadline_ms
                .map(|ms| Instant::now() + std::time::Duration::from_millis(ms)),
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
            return self.finish(conn, is_request, correlation, result);
        }
        let conn = conn.clone();
        let cancel = self.cancel.clone();
        self.work.spawn(async move {
            let result = tokio::select! {
                r = work => r,
                _ = cancel.cancelled() => Err(Error::new(ErrorKind::ShuttingDown, "handler stopped by shutdown")),
            };
            node.finish(&conn, is_request, correlation, result);
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
    /// waiting (used where no task is at hand).
    pub(crate) fn send_reply(
        &self,
        conn: &Arc<dyn Connection>,
        correlation: u64,
        result: crate::Result<Bytes>,
    ) {
        let frames = reply_frames(correlation, result);
        let mut queued = {
            let conn = conn.clone();
            Box::pin(async move { conn.send(frames).await })
        };
        match poll_once(&mut queued) {
            Some(Ok(())) => return,
            Some(Err(_)) => {
                return tracing::debug!(
                    conn = conn.id(),
                    correlation,
                    "reply dropped: connection closed"
                )
            }
            None => {}
        }
        let conn = conn.clone();
        self.background.spawn(async move {
            if queued.await.is_err() {
                tracing::debug!(
                    conn = conn.id(),
                    correlation,
                    "reply dropped: connection closed"
                );
            }
        });
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
