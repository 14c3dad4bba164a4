//! The transport trait boundary.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

use super::security::{ClientSecurity, CurvePublicKey, ServerSecurity};
use super::LinkLimits;

/// One multipart message.
pub type Frames = Vec<Bytes>;

/// Identifies one physical connection for its whole life; never reused.
pub type ConnId = u64;

static NEXT_CONN_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh connection id, unique within the process.
pub fn next_conn_id() -> ConnId {
    NEXT_CONN_ID.fetch_add(1, Ordering::Relaxed)
}

/// Transport failures. They never cross the public API as such: the mesh maps them to
/// `Unavailable` or `DeadlineExceeded`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// The endpoint string is not valid for this transport.
    #[error("bad endpoint {0}")]
    BadEndpoint(String),
    /// Connecting or binding failed.
    #[error("connect/bind failed: {0}")]
    Io(String),
    /// The connection is closed.
    #[error("connection closed")]
    Closed,
    /// The peer refused the security handshake (or hung up on it), so retrying the same
    /// keys will not help: a key is wrong, or not trusted there.
    #[error("{mechanism} handshake with {endpoint} refused: {reason}")]
    Refused {
        /// Where we dialed.
        endpoint: String,
        /// `CURVE` or `NULL`.
        mechanism: &'static str,
        /// What the peer said, or what its hanging up means.
        reason: String,
    },
}

/// Why [`Connection::try_send`] did not queue a message.
#[derive(Debug)]
pub enum TrySendError {
    /// The queue has no room now; the frames are handed back for a waiting send.
    Full(Frames),
    /// The connection is closed.
    Closed,
}

/// Where a transport delivers what arrives. Calls must not block: the mesh only decodes and
/// hands work to tasks.
pub trait LinkEvents: Send + Sync + 'static {
    /// A message arrived on `conn`.
    fn on_frames(&self, conn: &Arc<dyn Connection>, frames: Frames);
    /// `conn` ended (orderly close, transport error, or [`Connection::close`]). Called at
    /// most once per connection.
    fn on_closed(&self, conn: ConnId);
}

/// One physical, bidirectional connection.
#[async_trait]
pub trait Connection: Send + Sync + 'static {
    /// This connection's id.
    fn id(&self) -> ConnId;
    /// Queues a message for sending. `Ok` means the local queue accepted it; waiting for
    /// queue space is bounded by the caller.
    async fn send(&self, frames: Frames) -> Result<(), LinkError>;
    /// Queues a message only if the queue has room now, without waiting or allocating a
    /// future: the hot path's send. The default says "full" so callers fall back to
    /// [`send`](Connection::send).
    fn try_send(&self, frames: Frames) -> Result<(), TrySendError> {
        Err(TrySendError::Full(frames))
    }
    /// Closes the connection; [`LinkEvents::on_closed`] follows.
    fn close(&self);
    /// Whether the connection has ended (or was closed).
    fn is_closed(&self) -> bool {
        false
    }
    /// The connection finished admission: its handshake deadline no longer applies and it
    /// stops counting against the listener's cap on pending connections.
    fn admitted(&self) {}
    /// The peer's long-term CURVE key, when the connection runs CURVE.
    fn peer_key(&self) -> Option<CurvePublicKey> {
        None
    }
}

/// How a listener accepts connections.
#[derive(Debug, Clone)]
pub struct ListenOptions {
    /// Size, count and time limits.
    pub limits: LinkLimits,
    /// The mechanism and whom it admits.
    pub security: ServerSecurity,
}

impl Default for ListenOptions {
    fn default() -> Self {
        ListenOptions {
            limits: LinkLimits::default(),
            security: ServerSecurity::Null,
        }
    }
}

/// How an outbound connection is made.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Size, count and time limits (the handshake timeout bounds connect + handshake).
    pub limits: LinkLimits,
    /// The mechanism and the server key to expect.
    pub security: ClientSecurity,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            limits: LinkLimits::default(),
            security: ClientSecurity::Null,
        }
    }
}

/// A bound listener.
pub trait Listener: Send + Sync + 'static {
    /// The actual endpoint (port 0 resolved).
    fn endpoint(&self) -> String;
    /// Stops accepting and closes every accepted connection.
    fn close(&self);
    /// Connections accepted and still open (admitted or not), where the transport counts
    /// them.
    fn open_connections(&self) -> usize {
        0
    }
}

/// Opens listeners and outbound connections.
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    /// Binds `endpoint`; every accepted connection reports to `events`.
    async fn listen(
        &self,
        endpoint: &str,
        events: Arc<dyn LinkEvents>,
        options: ListenOptions,
    ) -> Result<Box<dyn Listener>, LinkError>;

    /// Connects to `endpoint` once (no retry); the connection reports to `events`.
    async fn connect(
        &self,
        endpoint: &str,
        events: Arc<dyn LinkEvents>,
        options: ConnectOptions,
    ) -> Result<Arc<dyn Connection>, LinkError>;
}
