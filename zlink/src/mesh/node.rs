//! The MeshNode state shared by its tasks.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use tokio::sync::{oneshot, Notify};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::peers::{Peer, PeerStatus};
use super::SmoothWeighted;
use crate::call::PendingTable;
use crate::channel::ChannelRegistry;
use crate::config::Settings;
use crate::link::{ConnId, Connection, Frames, Listener, Liveness};
use crate::wire::{Admission, Command, Envelope, Header, PROTOCOL_MAJOR};

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
    Ready { rid: String },
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
    pub(crate) registry: ChannelRegistry,
    pub(crate) revision: AtomicU64,
    pub(crate) endpoint: Mutex<String>,
    pub(crate) state: AtomicU8,
    pub(crate) conns: Mutex<HashMap<ConnId, ConnState>>,
    pub(crate) peers: RwLock<HashMap<String, Peer>>,
    /// RIDs this node was configured to reach or has seen: node-direct to them waits for
    /// readiness instead of failing `NotFound` at once.
    pub(crate) known_rids: Mutex<std::collections::HashSet<String>>,
    /// The CURVE key that first proved each RID (seed 000 §2.3 security identity).
    pub(crate) rid_keys: super::key_bindings::KeyBindings,
    pub(crate) selectors: Mutex<HashMap<String, SmoothWeighted>>,
    pub(crate) pending: Arc<PendingTable>,
    pub(crate) peers_changed: Notify,
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
        let registry = ChannelRegistry::new(&settings.channels);
        let known = settings
            .peers
            .iter()
            .filter_map(|p| p.expected_rid.clone())
            .collect();
        Arc::new_cyclic(|me| MeshNode {
            me: me.clone(),
            registry,
            revision: AtomicU64::new(1),
            endpoint: Mutex::new(String::new()),
            state: AtomicU8::new(RUNNING),
            conns: Mutex::new(HashMap::new()),
            peers: RwLock::new(HashMap::new()),
            known_rids: Mutex::new(known),
            rid_keys: Default::default(),
            selectors: Mutex::new(HashMap::new()),
            pending: Arc::new(PendingTable::default()),
            peers_changed: Notify::new(),
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

    pub(crate) fn peers_read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Peer>> {
        self.peers.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn peers_write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Peer>> {
        self.peers.write().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn peer_statuses(&self) -> Vec<PeerStatus> {
        let mut out: Vec<_> = self
            .peers_read()
            .iter()
            .map(|(rid, p)| PeerStatus::of(rid, p))
            .collect();
        out.sort_by(|a, b| a.rid.cmp(&b.rid));
        out
    }

    /// Sends a control message without blocking the caller (infrastructure traffic never
    /// waits behind application work).
    pub(crate) fn send_control(
        &self,
        conn: &Arc<dyn Connection>,
        command: Command,
        header: Header,
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
        let mut queued = {
            let conn = conn.clone();
            Box::pin(async move { conn.send(frames).await })
        };
        match super::inbound::poll_once(&mut queued) {
            Some(Ok(())) => return,
            Some(Err(_)) => {
                return tracing::debug!(conn = conn.id(), what, "send dropped: connection closed")
            }
            None => {}
        }
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
        if let Phase::Ready { rid } = &state.phase {
            let mut peers = self.peers_write();
            if peers.get(rid).is_some_and(|p| p.conn_id() == conn_id) {
                peers.remove(rid);
                drop(peers);
                tracing::info!(peer = %rid, conn = conn_id, reason, "peer not ready");
            }
        }
        if let Phase::AwaitAdmit { outcome, .. } = &mut state.phase {
            if let Some(tx) = outcome.take() {
                let _ = tx.send(HandshakeOutcome::Refused { peer_rid: None });
            }
        }
        self.pending.fail_connection(conn_id);
        self.prune_known_rids();
        if let Some(tx) = state.on_close.take() {
            let _ = tx.send(());
        }
        state.conn.close();
        self.peers_changed.notify_waiters();
    }

    /// RIDs seen once are remembered so node-direct can wait for a reconnect, but a mesh
    /// where every start brings a fresh RID would grow them forever: past a bound, only
    /// configured and connected RIDs are kept (key bindings have their own bound).
    fn prune_known_rids(&self) {
        const KEEP_AT_MOST: usize = 1024;
        let mut known = lock(&self.known_rids);
        if known.len() <= KEEP_AT_MOST {
            return;
        }
        let peers = self.peers_read();
        let configured: Vec<&str> = self
            .settings
            .peers
            .iter()
            .filter_map(|p| p.expected_rid.as_deref())
            .collect();
        known.retain(|rid| peers.contains_key(rid) || configured.contains(&rid.as_str()));
    }
}
