//! The accepting side: caps on open and on not-yet-admitted connections, one handshake
//! deadline from accept, and a ROUTER (or PUB) role toward every accepted peer.

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::connection::{Delivery, Setup, ZmtpConnection};
use super::curve::CookieKey;
use super::handshake::{self, HandshakeError, Side, SocketType};
use crate::link::security::ServerSecurity;
use crate::link::warn_limit::WarnLimit;
use crate::link::LinkLimits;

/// Open and pending connection counts of one listener.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    open: AtomicUsize,
    pending: AtomicUsize,
    refused: AtomicU64,
}

impl Counts {
    /// Connections currently open (admitted or not).
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// Connections refused at accept because a cap was reached.
    pub(crate) fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

const PENDING: u8 = 0;
const ADMITTED: u8 = 1;
const RELEASED: u8 = 2;

/// One accepted connection's share of the counts; every transition happens once.
pub(crate) struct Slot {
    counts: Arc<Counts>,
    state: AtomicU8,
}

impl Slot {
    fn take(counts: &Arc<Counts>, limits: &LinkLimits) -> Option<Slot> {
        if counts.open.load(Ordering::Acquire) >= limits.max_connections
            || counts.pending.load(Ordering::Acquire) >= limits.max_pending
        {
            return None;
        }
        counts.open.fetch_add(1, Ordering::AcqRel);
        counts.pending.fetch_add(1, Ordering::AcqRel);
        Some(Slot {
            counts: counts.clone(),
            state: AtomicU8::new(PENDING),
        })
    }

    /// The connection finished admission: it no longer counts as pending.
    pub(crate) fn admitted(&self) {
        if self
            .state
            .compare_exchange(PENDING, ADMITTED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.counts.pending.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// The connection ended.
    pub(crate) fn release(&self) {
        match self.state.swap(RELEASED, Ordering::AcqRel) {
            PENDING => {
                self.counts.pending.fetch_sub(1, Ordering::AcqRel);
                self.counts.open.fetch_sub(1, Ordering::AcqRel);
            }
            ADMITTED => {
                self.counts.open.fetch_sub(1, Ordering::AcqRel);
            }
            _ => {}
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.release();
    }
}

/// What the accept loop needs.
pub(crate) struct AcceptConfig {
    pub(crate) limits: LinkLimits,
    pub(crate) security: ServerSecurity,
    pub(crate) socket_type: SocketType,
    /// ZMTP minor version to greet with.
    pub(crate) minor: u8,
}

/// Called with each connection whose handshake succeeded.
pub(crate) type OnEstablished = Box<dyn Fn(Arc<ZmtpConnection>) + Send + Sync>;

/// Accepts until `cancel`; every connection is a child of `cancel`.
pub(crate) async fn accept_loop(
    socket: TcpListener,
    config: AcceptConfig,
    counts: Arc<Counts>,
    cancel: CancellationToken,
    delivery: Arc<dyn Fn() -> Delivery + Send + Sync>,
    on_established: OnEstablished,
) {
    let config = Arc::new(config);
    let cookie = Arc::new(CookieKey::generate());
    let on_established = Arc::new(on_established);
    let mut last_refusal_log: Option<Instant> = None;
    // A peer retrying a refused handshake is one WARN per window, not one per attempt.
    let refusals = Arc::new(WarnLimit::default());
    loop {
        let accepted = tokio::select! {
            _ = cancel.cancelled() => return,
            accepted = socket.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors and similar: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(slot) = Slot::take(&counts, &config.limits) else {
            counts.refused.fetch_add(1, Ordering::Relaxed);
            if last_refusal_log.is_none_or(|at| at.elapsed() >= Duration::from_secs(1)) {
                last_refusal_log = Some(Instant::now());
                tracing::warn!(%peer, open = counts.open(), refused = counts.refused(), "connection_refused: listener at its connection cap");
            }
            drop(stream);
            continue;
        };
        let admit_by = Instant::now() + config.limits.handshake_timeout;
        let config = config.clone();
        let cookie = cookie.clone();
        let cancel = cancel.clone();
        let delivery = delivery.clone();
        let on_established = on_established.clone();
        let refusals = refusals.clone();
        tokio::spawn(async move {
            let established = tokio::select! {
                _ = cancel.cancelled() => return,
                done = tokio::time::timeout_at(admit_by, handshake_accepted(stream, &config, &cookie)) => done,
            };
            let (stream, established) = match established {
                Ok(Ok(done)) => done,
                // A peer that hung up mid-handshake (a dialer cancelled at shutdown, a
                // port probe) is routine; anything it sent that was wrong is not.
                Ok(Err(HandshakeError::Io(e))) => {
                    return tracing::debug!(%peer, error = %e, "zmtp peer left during the handshake")
                }
                Ok(Err(e)) => return log_refusal(&refusals, peer, &e),
                Err(_) => {
                    return tracing::warn!(%peer, "handshake_timeout: zmtp handshake not finished in time")
                }
            };
            let conn = ZmtpConnection::spawn(
                stream,
                established,
                Setup {
                    limits: config.limits,
                    delivery: delivery(),
                    parent: Some(cancel),
                    slot: Some(slot),
                    admit_by: Some(admit_by),
                },
            );
            on_established(conn);
        });
    }
}

async fn handshake_accepted(
    mut stream: TcpStream,
    config: &AcceptConfig,
    cookie: &CookieKey,
) -> Result<(TcpStream, handshake::Established), handshake::HandshakeError> {
    let side = Side::Server {
        security: &config.security,
        cookie,
    };
    let established = handshake::run(&mut stream, side, config.socket_type, config.minor).await?;
    Ok((stream, established))
}

/// One WARN per refused client key (or per peer address and reason) per window, naming
/// the key and how many refusals the line stands for.
fn log_refusal(refusals: &WarnLimit, peer: std::net::SocketAddr, error: &HandshakeError) {
    let key = match error {
        HandshakeError::Untrusted(client_key) => format!("key {client_key}"),
        other => format!("{} {other}", peer.ip()),
    };
    let Some(repeats) = refusals.admit(&key) else {
        return;
    };
    match error {
        HandshakeError::Untrusted(client_key) => tracing::warn!(
            %peer,
            %client_key,
            repeats_since_last_warn = repeats,
            "zmtp handshake refused: client key not in this listener's trust set"
        ),
        other => tracing::warn!(
            %peer,
            error = %other,
            repeats_since_last_warn = repeats,
            "zmtp handshake refused"
        ),
    }
}
