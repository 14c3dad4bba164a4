//! The MeshNode state shared by its tasks.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::dispatch::Dispatcher;
use super::peer_table::{PeerStatus, PeerTable};
use crate::call::PendingTable;
use crate::channel::ChannelRegistry;
use crate::config::Settings;
use crate::link::{ConnId, Connection, Frames, Listener, Liveness, TrySendError};
use crate::wire::{Admission, Command, ControlHeader, Envelope, PROTOCOL_MAJOR};

pub(crate) const RUNNING: u8 = 0;
pub(crate) const SHUTTING_DOWN: u8 = 1;
pub(crate) const STOPPED: u8 = 2;

/// Where a connection is in its life.
pub(crate) enum Phase {
    /// Accepted; waiting for the initiator's hello.
    AwaitHello,
    /// We initiated and sent hello; waiting for admit or reject.
    AwaitAdmit {
        expected_rid: Option<String>,
        expected_generation: Option<u64>,
        outcome: Option<oneshot::Sender<HandshakeOutcome>>,
    },
    /// Admitted: identity proven.
    Ready { link: super::peer_table::PeerLink },
    /// Refused: the reject is on its way and the connection closes; nothing more it
    /// sends is looked at.
    Rejected,
}

/// What the dialer learns from its handshake.
pub(crate) enum HandshakeOutcome {
    Admitted { rid: String },
    Refused { peer_rid: Option<String> },
}

pub(crate) struct ConnState {
    pub(crate) conn: Arc<dyn Connection>,
    pub(crate) phase: Phase,
    pub(crate) liveness: Option<Liveness>,
    pub(crate) on_close: Option<oneshot::Sender<()>>,
    /// When the connection was first seen; an accepted connection that never completes
    /// its handshake is closed after the handshake timeout of the link limits (the ZMTP
    /// engine enforces it from accept; this covers any transport).
    pub(crate) opened: tokio::time::Instant,
    /// Inbound handler calls of this connection still running.
    pub(crate) inflight: Arc<std::sync::atomic::AtomicUsize>,
    /// Control records and replies waiting for room in this connection's send queue.
    pub(crate) waiting_sends: Arc<std::sync::atomic::AtomicUsize>,
}

/// Most infrastructure sends that may wait for one connection's full queue at once.
const MAX_WAITING_SENDS: usize = 16;

/// One RouteMesh member.
pub(crate) struct MeshNode {
    pub(crate) me: Weak<MeshNode>,
    pub(crate) settings: Settings,
    pub(crate) registry: Arc<ChannelRegistry>,
    pub(crate) revision: AtomicU64,
    pub(crate) endpoint: Mutex<String>,
    pub(crate) state: AtomicU8,
    pub(crate) conns: Mutex<HashMap<ConnId, ConnState>>,
    /// Admitted peers, readiness, weights and candidate snapshots.
    pub(crate) peers: PeerTable,
    /// Outstanding requests of this node, ended by reply, loss, deadline or shutdown.
    pub(crate) pending: Arc<PendingTable>,
    /// Which subsystem receives each application command.
    pub(crate) dispatcher: Dispatcher,
    pub(crate) listener: Mutex<Option<Box<dyn Listener>>>,
    /// Inbound handler work (drained on shutdown up to the grace deadline).
    pub(crate) work: TaskTracker,
    /// Background tasks: dialers, liveness, sends of control messages.
    pub(crate) background: TaskTracker,
    pub(crate) cancel: CancellationToken,
    /// Location Store use (owner lease, automatic discovery), when a store is registered.
    pub(crate) discovery: Option<super::discovery::Discovery>,
    /// The process's RouteMesh node, for a ClientServer node (handlers see its runtime);
    /// empty for the RouteMesh node itself.
    pub(crate) owner: Weak<MeshNode>,
    /// The ClientServer nodes next to this RouteMesh node.
    pub(crate) client_server: Mutex<super::client_server::ClientServerSet>,
    /// The fanout publishers and subscribers of this process.
    pub(crate) fanout: Mutex<super::fanout::FanoutSet>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl MeshNode {
    pub(crate) fn new(
        settings: Settings,
        owner: Weak<MeshNode>,
        lease: Option<Arc<crate::store::OwnerLease>>,
    ) -> Arc<MeshNode> {
        let registry = Arc::new(ChannelRegistry::new(&settings.channels));
        let configured: Vec<String> = settings
            .peers
            .iter()
            .filter_map(|p| p.expected_rid.clone())
            .collect();
        let local_max = match settings.max_message {
            0 => settings.limits.max_message,
            own => own,
        };
        Arc::new_cyclic(|me| MeshNode {
            me: me.clone(),
            dispatcher: Dispatcher::default(),
            registry,
            revision: AtomicU64::new(1),
            endpoint: Mutex::new(String::new()),
            state: AtomicU8::new(RUNNING),
            conns: Mutex::new(HashMap::new()),
            peers: PeerTable::new(configured, local_max),
            pending: Arc::new(PendingTable::default()),
            listener: Mutex::new(None),
            work: TaskTracker::new(),
            background: TaskTracker::new(),
            cancel: CancellationToken::new(),
            discovery: settings
                .discovery
                .clone()
                .map(|d| super::discovery::Discovery::new(d, lease)),
            owner,
            client_server: Mutex::new(Default::default()),
            fanout: Mutex::new(Default::default()),
            settings,
        })
    }

    pub(crate) fn is_running(&self) -> bool {
        self.state.load(Ordering::Acquire) == RUNNING
    }

    pub(crate) fn endpoint(&self) -> String {
        lock(&self.endpoint).clone()
    }

    /// The limits of this node's connections, with its own message size cap.
    pub(crate) fn link_limits(&self) -> crate::link::LinkLimits {
        // 0 is "no cap of its own" (ClientServer roles): the link limit still applies.
        let max_message = match self.settings.max_message {
            0 => self.settings.limits.max_message,
            own => own,
        };
        crate::link::LinkLimits {
            max_message,
            ..self.settings.limits
        }
    }

    pub(crate) fn rid(&self) -> &str {
        &self.settings.rid
    }

    /// The node whose runtime handlers see: the RouteMesh node of this process.
    pub(crate) fn runtime_node(&self) -> Option<Arc<MeshNode>> {
        self.owner.upgrade().or_else(|| self.me.upgrade())
    }

    pub(crate) fn topology(&self) -> crate::config::Topology {
        self.settings.topology
    }

    /// This node's admission record as of now.
    pub(crate) fn admission(&self) -> Admission {
        Admission {
            mesh_name: self.settings.mesh_name.clone(),
            rid: self.settings.rid.clone(),
            generation: self.settings.generation,
            revision: self.revision.load(Ordering::Acquire),
            protocol: PROTOCOL_MAJOR,
            endpoint: lock(&self.endpoint).clone(),
            channels: self.registry.server_weights(),
            max_message: Some(self.link_limits().max_message as u64),
        }
    }

    pub(crate) fn peer_statuses(&self) -> Vec<PeerStatus> {
        self.peers.statuses()
    }

    /// Sends a control message without blocking the caller (infrastructure traffic never
    /// waits behind application work).
    pub(crate) fn send_control(
        &self,
        conn: &Arc<dyn Connection>,
        command: Command,
        header: ControlHeader,
    ) {
        let frames = Envelope::control(command, header).encode();
        self.send_bounded(conn, frames, "control");
    }

    /// Queues infrastructure frames (control records, replies) without making the caller
    /// wait. A peer that does not drain its queue within the send timeout loses the
    /// connection: nothing waits on it forever.
    pub(crate) fn send_bounded(
        &self,
        conn: &Arc<dyn Connection>,
        frames: Frames,
        what: &'static str,
    ) {
        let frames = match conn.try_send(frames) {
            Ok(()) => return,
            Err(TrySendError::Closed) => {
                return tracing::debug!(conn = conn.id(), what, "send dropped: connection closed")
            }
            Err(TrySendError::Full(frames)) => frames,
        };
        let queued = {
            let conn = conn.clone();
            async move { conn.send(frames).await }
        };
        // Each waiting send holds its frames: a connection whose queue stays full gets only
        // a few, then it is given up.
        let waiting = lock(&self.conns)
            .get(&conn.id())
            .map(|s| s.waiting_sends.clone());
        let Some(waiting) =
            waiting.and_then(|w| super::count_permit::CountPermit::take(w, MAX_WAITING_SENDS))
        else {
            tracing::warn!(
                conn = conn.id(),
                what,
                "send_queue_full: peer is not reading; closing the connection"
            );
            return self.connection_lost(conn.id(), "peer stopped reading");
        };
        let conn = conn.clone();
        let me = self.me.clone();
        let within = self.settings.send_timeout;
        self.background.spawn(async move {
            let _waiting = waiting;
            match tokio::time::timeout(within, queued).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => {
                    tracing::debug!(conn = conn.id(), what, "send dropped: connection closed")
                }
                Err(_) => {
                    tracing::warn!(
                        conn = conn.id(),
                        what,
                        "send_timeout: peer is not reading; closing the connection"
                    );
                    if let Some(node) = me.upgrade() {
                        node.connection_lost(conn.id(), "peer stopped reading");
                    } else {
                        conn.close();
                    }
                }
            }
        });
    }

    /// Everything that must happen when a connection ends, whatever the cause. Idempotent.
    pub(crate) fn connection_lost(&self, conn_id: ConnId, reason: &'static str) {
        let state = lock(&self.conns).remove(&conn_id);
        let Some(mut state) = state else { return };
        if let Some(rid) = self.peers.remove_conn(conn_id) {
            tracing::info!(peer = %rid, conn = conn_id, reason, "peer not ready");
        }
        if let Phase::AwaitAdmit { outcome, .. } = &mut state.phase {
            if let Some(tx) = outcome.take() {
                let _ = tx.send(HandshakeOutcome::Refused { peer_rid: None });
            }
        }
        self.pending.fail_connection(conn_id);
        if let Some(tx) = state.on_close.take() {
            let _ = tx.send(());
        }
        state.conn.close();
    }
}
