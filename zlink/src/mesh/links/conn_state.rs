//! What [`Links`](super::Links) keeps per connection.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::link::{Connection, Liveness};
use crate::mesh::peer_table::PeerLink;

/// Where a connection is in its life.
pub(crate) enum Phase {
    /// Accepted; waiting for the initiator's hello.
    AwaitHello,
    /// We initiated and sent hello; waiting for admit or reject.
    AwaitAdmit {
        expected_rid: Option<String>,
        expected_generation: Option<u64>,
        /// Set once the dialer has registered the connection and sent its hello.
        outcome: Option<oneshot::Sender<HandshakeOutcome>>,
    },
    /// Admitted: identity proven.
    Ready { link: PeerLink },
    /// Refused: the reject is on its way and the connection closes; nothing more it
    /// sends is looked at.
    Rejected,
}

/// What the dialer learns from its handshake.
pub(crate) enum HandshakeOutcome {
    Admitted { rid: String },
    Refused { peer_rid: Option<String> },
}

/// One connection's state.
pub(crate) struct ConnState {
    pub(crate) conn: Arc<dyn Connection>,
    pub(crate) phase: Phase,
    pub(crate) liveness: Option<Liveness>,
    pub(crate) on_close: Option<oneshot::Sender<()>>,
    /// When the connection was first seen; an accepted connection that never completes
    /// its handshake is closed after the handshake timeout of the link limits (the ZMTP
    /// engine enforces it from accept; this covers any transport).
    pub(crate) opened: Instant,
    /// Inbound handler calls of this connection still running.
    pub(crate) inflight: Arc<AtomicUsize>,
    /// Control records and replies waiting for room in this connection's send queue.
    pub(crate) waiting_sends: Arc<AtomicUsize>,
}

impl ConnState {
    pub(crate) fn new(conn: Arc<dyn Connection>, phase: Phase) -> Self {
        ConnState {
            conn,
            phase,
            liveness: None,
            on_close: None,
            opened: Instant::now(),
            inflight: Arc::default(),
            waiting_sends: Arc::default(),
        }
    }
}

/// A connection's phase as seen from outside the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PhaseKind {
    Unknown,
    AwaitHello,
    /// Dialed by us; `registered` once the dialer has sent its hello.
    AwaitAdmit {
        registered: bool,
    },
    Ready,
    Rejected,
}

impl Phase {
    pub(crate) fn kind(&self) -> PhaseKind {
        match self {
            Phase::AwaitHello => PhaseKind::AwaitHello,
            Phase::AwaitAdmit { outcome, .. } => PhaseKind::AwaitAdmit {
                registered: outcome.is_some(),
            },
            Phase::Ready { .. } => PhaseKind::Ready,
            Phase::Rejected => PhaseKind::Rejected,
        }
    }
}
