//! One STREAM listener: its accept loop, the cap on open sessions, and the sessions it
//! runs. Draining refuses new connections and closes the open ones with `ServerDrain`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::connection::Connection;
use super::limits::StreamLimits;
use super::packet::{
    encode_packet, CloseReason, ClosingNotice, PacketReader, StreamCodec, WireKind, WirePacket,
    SESSION_CLOSING,
};
use super::peer::{SessionId, SessionPeer};
use super::session_type::SessionFactory;
use super::settings::{StreamListener, StreamTransport};
use super::table::PacketTable;
use super::tls::TlsIdentity;
use super::transport::StreamSink;
use crate::handle::WeakHandle;
use crate::link::warn_limit::WarnLimit;
use crate::mesh::Drained;
use crate::telemetry::Happened;
use crate::{Error, ErrorKind, Result};

/// How long a refused connection has for its handshake and its closing notice.
const REFUSAL_DEADLINE: Duration = Duration::from_secs(2);

/// A running listener.
pub(crate) struct RunningListener {
    pub(crate) name: String,
    /// Where clients connect (the advertised host, the bound port).
    pub(crate) endpoint: String,
    transport: StreamTransport,
    tls: Option<TlsIdentity>,
    limits: StreamLimits,
    factory: Arc<dyn SessionFactory>,
    table: Arc<PacketTable>,
    handle: WeakHandle,
    /// What the node's sessions share: the object layer and the index pushes find them by.
    shared: SessionShared,
    sessions: Mutex<HashMap<SessionId, Arc<SessionPeer>>>,
    tasks: TaskTracker,
    stop_accepting: CancellationToken,
    counters: Counters,
    warn: WarnLimit,
}

#[derive(Default)]
struct Counters {
    accepted: AtomicU64,
    refused: AtomicU64,
}

impl RunningListener {
    /// Binds `spec`'s endpoint and starts accepting.
    pub(crate) async fn start(
        spec: StreamListener,
        handle: WeakHandle,
        shared: SessionShared,
    ) -> Result<Arc<Self>> {
        let (Some(address), Some(transport), Some(factory)) = (
            spec.address(),
            spec.transport(),
            spec.factories.first().cloned(),
        ) else {
            return Err(Error::InvalidArgument(format!(
                "stream listener {:?} was not validated",
                spec.name
            )));
        };
        let socket = bind(address).await.map_err(|e| {
            Error::new(
                ErrorKind::Unavailable,
                format!("stream listener {:?} cannot bind {address}: {e}", spec.name),
            )
        })?;
        let local_addr = socket.local_addr().map_err(|e| {
            Error::new(
                ErrorKind::Unavailable,
                format!("stream listener {:?}: {e}", spec.name),
            )
        })?;
        let scheme = match (transport, spec.tls.is_some()) {
            (StreamTransport::Tcp, false) => "tcp",
            (StreamTransport::Tcp, true) => "tls",
            (StreamTransport::WebSocket, false) => "ws",
            (StreamTransport::WebSocket, true) => "wss",
        };
        let bound = format!("{scheme}://{local_addr}");
        let endpoint = crate::link::advertised(&bound, spec.advertise_host.as_deref());
        let listener = Arc::new(RunningListener {
            name: spec.name,
            endpoint,
            transport,
            tls: spec.tls,
            limits: spec.limits,
            table: Arc::new(PacketTable::new(factory.packets())),
            factory,
            handle,
            shared,
            sessions: Mutex::new(HashMap::new()),
            tasks: TaskTracker::new(),
            stop_accepting: CancellationToken::new(),
            counters: Counters::default(),
            warn: WarnLimit::default(),
        });
        tracing::info!(listener = %listener.name, endpoint = %listener.endpoint, "stream listener started");
        tokio::spawn(listener.clone().accept_loop(socket));
        Ok(listener)
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<SessionPeer>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes the open session `id` with `ServerDrain`; false when none is open.
    pub(crate) fn disconnect(&self, id: SessionId) -> bool {
        let Some(peer) = self.sessions().get(&id).cloned() else {
            return false;
        };
        peer.close(CloseReason::ServerDrain, "disconnected by an operator");
        tracing::info!(listener = %self.name, session = %id, "session disconnected by an operator");
        true
    }

    /// Sessions open now.
    pub(crate) fn open_sessions(&self) -> usize {
        self.sessions().len()
    }

    /// Connections accepted and refused (over the cap) since the start.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.counters.accepted.load(Ordering::Relaxed),
            self.counters.refused.load(Ordering::Relaxed),
        )
    }

    async fn accept_loop(self: Arc<Self>, socket: TcpListener) {
        loop {
            let accepted = tokio::select! {
                _ = self.stop_accepting.cancelled() => break,
                accepted = socket.accept() => accepted,
            };
            match accepted {
                Ok((stream, remote)) => self.admit(stream, remote),
                Err(e) => {
                    // Out of descriptors and the like: wait a little rather than spin.
                    if let Some(repeats) = self.warn.admit("accept") {
                        tracing::warn!(listener = %self.name, error = %e, repeats, "stream listener cannot accept");
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn admit(self: &Arc<Self>, stream: TcpStream, remote: SocketAddr) {
        let _ = stream.set_nodelay(true);
        let Some(handle) = self.handle.upgrade() else {
            return;
        };
        let open = self.open_sessions();
        if open >= self.limits.max_sessions {
            self.counters.refused.fetch_add(1, Ordering::Relaxed);
            if let Some(repeats) = self.warn.admit("cap") {
                tracing::warn!(listener = %self.name, open, repeats, %remote, "stream listener at its session cap: connection refused");
            }
            let detail = format!(
                "the listener holds its cap of {} sessions",
                self.limits.max_sessions
            );
            self.tasks
                .spawn(refuse(stream, self.transport, self.tls.clone(), detail));
            return;
        }
        self.counters.accepted.fetch_add(1, Ordering::Relaxed);
        let peer = Arc::new(SessionPeer::new(
            &self.name,
            Some(remote),
            stream.local_addr().ok(),
            &self.limits,
            self.shared.objects.clone(),
        ));
        self.sessions().insert(peer.id, peer.clone());
        self.shared.index.insert(&peer);
        let meter = handle.node().instruments().sessions.clone();
        let events = handle.node().instruments().events.clone();
        meter.opened();
        events.emit(|| Happened::SessionOpened {
            listener: self.name.to_string(),
            session: peer.id.get(),
        });
        let connection = Connection {
            peer: peer.clone(),
            session: self.factory.make(),
            table: self.table.clone(),
            limits: self.limits.clone(),
            handle,
        };
        let listener = self.clone();
        let transport = self.transport;
        let max = self.limits.max_message_size;
        let tls = self.tls.clone();
        let connection = async move {
            match tls {
                None => serve(transport, connection, stream, max).await,
                // Boxed, like the WebSocket path: a TLS stream's state is kilobytes, and
                // inline it would size every plain session's task too.
                Some(tls) => {
                    Box::pin(async {
                        match tls.accept(stream).await {
                            Ok(stream) => serve(transport, connection, stream, max).await,
                            Err(diagnostic) => {
                                tracing::debug!(listener = %listener.name, session = %peer.id, %remote, diagnostic, "TLS client refused");
                                peer.close(CloseReason::ProtocolError, &diagnostic);
                                peer.ended.cancel();
                            }
                        }
                    })
                    .await
                }
            }
            listener.sessions().remove(&peer.id);
            listener.shared.index.remove(&peer);
            // A session that ended without a closing notice lost its connection.
            let reason = peer
                .outbound
                .closing()
                .unwrap_or(CloseReason::TransportError);
            meter.closed(reason.index(), reason.label());
            events.emit(|| Happened::SessionClosed {
                listener: listener.name.to_string(),
                session: peer.id.get(),
                reason: reason.label(),
            });
        };
        self.tasks.spawn(connection);
    }

    /// Stops accepting and closes every session with `ServerDrain`; waits for them at
    /// most `grace`.
    pub(crate) async fn drain(&self, grace: Duration) -> Drained {
        self.stop_accepting.cancel();
        let open: Vec<_> = self.sessions().values().cloned().collect();
        for peer in open {
            peer.close(CloseReason::ServerDrain, "the server is shutting down");
        }
        self.tasks.close();
        match tokio::time::timeout(grace, self.tasks.wait()).await {
            Ok(()) => Drained::Finished,
            Err(_) => Drained::GraceEnded,
        }
    }

    /// Ends every session now.
    pub(crate) async fn stop(&self) {
        self.stop_accepting.cancel();
        let open: Vec<_> = self.sessions().values().cloned().collect();
        for peer in open {
            peer.close(CloseReason::ServerDrain, "the server stopped");
            peer.ended.cancel();
        }
        self.tasks.close();
        self.tasks.wait().await;
    }
}

/// Tells a connection over the cap why, in its own transport (after the TLS handshake,
/// after the WebSocket upgrade), and closes it; all within [`REFUSAL_DEADLINE`].
async fn refuse(
    stream: TcpStream,
    transport: StreamTransport,
    tls: Option<TlsIdentity>,
    detail: String,
) {
    let notice = WirePacket::new(
        WireKind::Control,
        StreamCodec::Raw,
        SESSION_CLOSING,
        ClosingNotice::encode(CloseReason::ServerDrain, &detail),
    );
    let Ok(notice) = encode_packet(&notice) else {
        return;
    };
    let _ = tokio::time::timeout(REFUSAL_DEADLINE, async {
        match tls {
            None => refuse_on(transport, stream, notice, &detail).await,
            Some(tls) => {
                if let Ok(stream) = tls.accept(stream).await {
                    refuse_on(transport, stream, notice, &detail).await;
                }
            }
        }
    })
    .await;
}

async fn refuse_on<S>(transport: StreamTransport, mut stream: S, notice: bytes::Bytes, detail: &str)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use tokio::io::AsyncWriteExt;
    match transport {
        StreamTransport::Tcp => {
            let _ = stream.write_all(&notice).await;
            let _ = stream.shutdown().await;
        }
        StreamTransport::WebSocket => {
            super::websocket::refuse(stream, notice, CloseReason::ServerDrain, detail).await;
        }
    }
}

/// What every listener of a node shares.
#[derive(Clone)]
pub(crate) struct SessionShared {
    pub(crate) objects: Option<std::sync::Weak<crate::object::ObjectServer>>,
    pub(crate) index: Arc<super::session_index::SessionIndex>,
}

/// Connections the kernel completes before the accept loop takes them (capped by the
/// system's `somaxconn`). A burst of reconnecting clients, after a restart say, overflows
/// a short queue, and each dropped handshake costs its client a one-second retry.
const ACCEPT_BACKLOG: u32 = 4096;

async fn bind(address: &str) -> std::io::Result<TcpListener> {
    let addr = tokio::net::lookup_host(address)
        .await?
        .next()
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the host resolves to no address",
            )
        })?;
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(ACCEPT_BACKLOG)
}

/// Runs one connection's packets over `stream` (TCP or TLS) as its transport says.
async fn serve<S>(transport: StreamTransport, connection: Connection, stream: S, max: usize)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    match transport {
        StreamTransport::Tcp => {
            let (read, write) = tokio::io::split(stream);
            connection
                .run(PacketReader::new(read, max), StreamSink::new(write))
                .await;
        }
        StreamTransport::WebSocket => Box::pin(super::websocket::run(connection, stream)).await,
    }
}
