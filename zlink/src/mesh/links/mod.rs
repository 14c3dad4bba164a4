//! Links: one node's connections. It owns the connection table (phase, liveness, per
//! connection caps), the listener, the dialers and the liveness ticker, and carries every
//! connection through the handshake to the [`PeerTable`]. What an admitted connection
//! delivers goes to the pending table (replies) or the [`Dispatcher`] (application
//! commands). Ending a connection, whatever the cause, goes through [`Links::lost`].

mod admission;
mod conn_state;
mod dialer;
mod events;
mod inbound;
mod liveness;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use bytes::Bytes;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::conn_state::{ConnState, HandshakeOutcome, Phase, PhaseKind};
pub(crate) use self::dialer::DialTarget;
use super::count_permit::CountPermit;
use super::dispatch::{reply_outcome, Dispatcher, ReplyOut, ReplyRoute};
use super::identity::NodeIdentity;
use super::peer_table::{PeerLink, PeerTable};
use super::policy::RolePolicy;
use super::work::HandlerWork;
use super::MeshSettings;
use crate::call::PendingTable;
use crate::link::{
    ConnId, Connection, CurvePublicKey, Frames, LinkLimits, Listener, Liveness, ProbeAction,
    TrySendError,
};
use crate::sync::LockUnpoisoned;
use crate::telemetry::LinkMeter;
use crate::wire::trace_context::TracePropagation;
use crate::wire::{Admission, Command, ControlHeader, Envelope};
use crate::{Error, ErrorKind, Result};

/// Most infrastructure sends that may wait for one connection's full queue at once.
const MAX_WAITING_SENDS: usize = 16;

/// What the Location Store says about members, as the handshake needs it.
pub(crate) trait Membership: Send + Sync + 'static {
    /// Why a hello from this admission is refused by the store's view (a member known with
    /// another generation, or one whose lease is gone); `None` lets it through.
    fn refuses(&self, admission: &Admission) -> Option<String>;
    /// The CURVE key `rid` publishes, when it is a live member with one.
    fn published_key(&self, rid: &str) -> Option<CurvePublicKey>;
}

/// The admitted connection a message came from.
pub(crate) struct ReadySender {
    pub(crate) link: PeerLink,
    /// Its handler calls still running.
    pub(crate) inflight: Arc<std::sync::atomic::AtomicUsize>,
}

/// What one liveness round found.
#[derive(Default)]
struct LivenessRound {
    /// Probes to send: the connection and the probe id.
    probes: Vec<(Arc<dyn Connection>, u64)>,
    /// Connections past their liveness or handshake deadline.
    expired: Vec<ConnId>,
}

/// One node's connections.
pub(crate) struct Links {
    me: Weak<Links>,
    identity: Arc<NodeIdentity>,
    policy: RolePolicy,
    settings: Arc<MeshSettings>,
    conns: Mutex<HashMap<ConnId, ConnState>>,
    listener: Mutex<Option<Box<dyn Listener>>>,
    peers: Arc<PeerTable>,
    pending: Arc<PendingTable>,
    dispatcher: Arc<Dispatcher>,
    work: Arc<HandlerWork>,
    /// Bytes, admissions and refusals of its connections.
    pub(crate) meter: Arc<LinkMeter>,
    membership: OnceLock<Weak<dyn Membership>>,
    /// Why the dialers that are not connected failed last.
    dial_failures: dialer::DialFailures,
    /// Dialers, liveness, delayed closes and sends waiting for queue room.
    background: TaskTracker,
    cancel: CancellationToken,
    /// One-way sends dropped because they arrived while this node stops: the first is a
    /// warning, the rest (every peer keeps sending until it hears) debug lines.
    dropped_while_stopping: std::sync::atomic::AtomicU64,
}

/// The parts a [`Links`] works with.
pub(crate) struct LinkParts {
    pub(crate) identity: Arc<NodeIdentity>,
    pub(crate) policy: RolePolicy,
    pub(crate) settings: Arc<MeshSettings>,
    pub(crate) peers: Arc<PeerTable>,
    pub(crate) pending: Arc<PendingTable>,
    pub(crate) dispatcher: Arc<Dispatcher>,
    pub(crate) work: Arc<HandlerWork>,
    pub(crate) meter: Arc<LinkMeter>,
    pub(crate) cancel: CancellationToken,
}

impl Links {
    /// Counts a one-way send dropped as it arrived while this node stops; `true` for the
    /// first (the one worth a warning).
    pub(crate) fn dropped_while_stopping(&self) -> bool {
        self.dropped_while_stopping
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            == 0
    }

    pub(crate) fn new(parts: LinkParts) -> Arc<Links> {
        Arc::new_cyclic(|me| Links {
            me: me.clone(),
            identity: parts.identity,
            policy: parts.policy,
            settings: parts.settings,
            conns: Mutex::new(HashMap::new()),
            listener: Mutex::new(None),
            dial_failures: dialer::DialFailures::default(),
            peers: parts.peers,
            pending: parts.pending,
            dispatcher: parts.dispatcher,
            work: parts.work,
            meter: parts.meter,
            membership: OnceLock::new(),
            background: TaskTracker::new(),
            cancel: parts.cancel,
            dropped_while_stopping: std::sync::atomic::AtomicU64::new(0),
        })
    }

    pub(crate) fn identity(&self) -> &NodeIdentity {
        &self.identity
    }

    pub(crate) fn policy(&self) -> &RolePolicy {
        &self.policy
    }

    pub(crate) fn settings(&self) -> &MeshSettings {
        &self.settings
    }

    pub(crate) fn peers(&self) -> &PeerTable {
        &self.peers
    }

    pub(crate) fn pending(&self) -> &PendingTable {
        &self.pending
    }

    pub(crate) fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
    }

    pub(crate) fn work(&self) -> &Arc<HandlerWork> {
        &self.work
    }

    /// The node's own cancellation (dialers and tasks of its links end with it).
    pub(crate) fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Connects the store's view of members to the handshake (set once).
    pub(crate) fn set_membership(&self, membership: Weak<dyn Membership>) {
        let _ = self.membership.set(membership);
    }

    pub(crate) fn membership(&self) -> Option<Arc<dyn Membership>> {
        self.membership.get()?.upgrade()
    }

    /// The limits of this node's connections, with its own message size cap.
    pub(crate) fn limits(&self) -> LinkLimits {
        LinkLimits {
            max_message: self.identity.max_message(),
            ..self.settings.limits
        }
    }

    /// Binds the listener (when the node has one), then starts liveness and the manual
    /// dialers.
    pub(crate) async fn start(self: &Arc<Self>) -> Result<()> {
        let settings = &self.settings;
        if !settings.listen.is_empty() {
            let events = Arc::new(events::NodeEvents::accepted(Arc::downgrade(self)));
            let listener = settings
                .transport
                .listen(
                    &settings.listen,
                    events,
                    crate::link::ListenOptions {
                        limits: self.limits(),
                        security: settings.security.server(),
                    },
                )
                .await
                .map_err(|e| {
                    Error::new(
                        ErrorKind::Unavailable,
                        format!("cannot listen on {}: {e}", settings.listen),
                    )
                })?;
            self.identity.set_endpoint(crate::link::advertised(
                &listener.endpoint(),
                settings.advertise_host.as_deref(),
            ));
            *self.listener.lock_unpoisoned() = Some(listener);
        }
        self.background.spawn(liveness::run(
            Arc::downgrade(self),
            settings.liveness.probe_interval,
            self.cancel.clone(),
        ));
        for peer in settings.peers.clone() {
            self.dial(peer.into(), self.cancel.child_token());
        }
        Ok(())
    }

    /// Dials `target` until `cancel` (a child of the node's own cancellation), redoing
    /// the handshake after every loss.
    pub(crate) fn dial(self: &Arc<Self>, target: DialTarget, cancel: CancellationToken) {
        self.background
            .spawn(dialer::run(Arc::downgrade(self), target, cancel));
    }

    /// Why dialed peers are not connected, one line each (at most a few), for errors
    /// that would otherwise only say that no peer is ready.
    pub(crate) fn dial_failures(&self) -> Vec<String> {
        self.dial_failures.describe()
    }

    /// Runs `task` with the links' background work (waited for at shutdown).
    pub(crate) fn spawn_background(
        &self,
        task: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        self.background.spawn(task);
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

    /// Sends the terminal reply for a request on the connection it came from, without
    /// waiting (a peer that stops reading loses the connection after the send timeout).
    pub(crate) fn reply(&self, route: &ReplyRoute, result: Result<Bytes>) {
        let frames =
            crate::wire::encode_reply((route.correlation, route.operation), &reply_outcome(result));
        self.send_bounded(&route.conn, frames, "reply");
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
        self.meter.sent(frames.iter().map(Bytes::len).sum());
        let frames = match conn.try_send(frames) {
            Ok(()) => return,
            Err(TrySendError::Closed) => {
                return tracing::debug!(conn = conn.id(), what, "send dropped: connection closed")
            }
            Err(TrySendError::Full(frames)) => frames,
        };
        // Each waiting send holds its frames: a connection whose queue stays full gets only
        // a few, then it is given up.
        let waiting = self
            .conns
            .lock_unpoisoned()
            .get(&conn.id())
            .map(|s| s.waiting_sends.clone());
        let Some(waiting) = waiting.and_then(|w| CountPermit::take(w, MAX_WAITING_SENDS)) else {
            tracing::warn!(
                conn = conn.id(),
                what,
                "send_queue_full: peer is not reading; closing the connection"
            );
            return self.lost(conn.id(), "peer stopped reading");
        };
        let conn = conn.clone();
        let me = self.me.clone();
        let within = self.settings.send_timeout;
        self.background.spawn(async move {
            let _waiting = waiting;
            match tokio::time::timeout(within, conn.send(frames)).await {
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
                    match me.upgrade() {
                        Some(links) => links.lost(conn.id(), "peer stopped reading"),
                        None => conn.close(),
                    }
                }
            }
        });
    }

    /// Everything that must happen when a connection ends, whatever the cause. Idempotent.
    pub(crate) fn lost(&self, conn_id: ConnId, reason: &'static str) {
        let state = self.conns.lock_unpoisoned().remove(&conn_id);
        let Some(mut state) = state else { return };
        // Closed first: a request queued from here on is refused by the connection, so
        // none can slip in after its pending entries were failed.
        state.conn.close();
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
    }

    /// How many connections the listener holds open (0 without a listener).
    pub(crate) fn open_connections(&self) -> usize {
        self.listener
            .lock_unpoisoned()
            .as_ref()
            .map_or(0, |l| l.open_connections())
    }

    /// Closes every connection and the listener.
    pub(crate) fn close_all(&self, reason: &'static str) {
        let conns: Vec<ConnId> = self.conns.lock_unpoisoned().keys().copied().collect();
        for id in conns {
            self.lost(id, reason);
        }
        if let Some(listener) = self.listener.lock_unpoisoned().take() {
            listener.close();
        }
    }

    /// Waits until another caller has closed and drained the background work.
    pub(crate) async fn wait_closed(&self) {
        self.background.wait().await;
    }

    /// Waits for every background task of these links to end (after cancellation).
    pub(crate) async fn wait_background(&self) {
        self.background.close();
        self.background.wait().await;
    }

    /// The connection's state for a message that arrived on it: the ready sender when it
    /// is admitted. A connection seen for the first time is registered (accepted: waiting
    /// for hello; dialed but not registered by its dialer yet: nothing it says can be an
    /// admit to our hello).
    fn ready_sender(&self, conn: &Arc<dyn Connection>, dialed: bool) -> Option<ReadySender> {
        let mut conns = self.conns.lock_unpoisoned();
        let state = conns.entry(conn.id()).or_insert_with(|| {
            let phase = if dialed {
                Phase::AwaitAdmit {
                    expected_rid: None,
                    expected_generation: None,
                    outcome: None,
                }
            } else {
                Phase::AwaitHello
            };
            ConnState::new(conn.clone(), phase)
        });
        match &state.phase {
            Phase::Ready { link } => Some(ReadySender {
                link: link.clone(),
                inflight: state.inflight.clone(),
            }),
            _ => None,
        }
    }

    /// Registers an accepted connection that is not in the table yet.
    fn ensure_accepted(&self, conn: &Arc<dyn Connection>) {
        self.conns
            .lock_unpoisoned()
            .entry(conn.id())
            .or_insert_with(|| ConnState::new(conn.clone(), Phase::AwaitHello));
    }

    fn phase(&self, conn: ConnId) -> PhaseKind {
        self.conns
            .lock_unpoisoned()
            .get(&conn)
            .map_or(PhaseKind::Unknown, |s| s.phase.kind())
    }

    /// What a dial expects of the admit: the RID and lifecycle generation, when the
    /// dialer registered the connection.
    fn dial_expectation(&self, conn: ConnId) -> Option<(Option<String>, Option<u64>)> {
        match self.conns.lock_unpoisoned().get(&conn).map(|s| &s.phase) {
            Some(Phase::AwaitAdmit {
                expected_rid,
                expected_generation,
                outcome: Some(_),
            }) => Some((expected_rid.clone(), *expected_generation)),
            _ => None,
        }
    }

    fn set_rejected(&self, conn: ConnId) {
        if let Some(state) = self.conns.lock_unpoisoned().get_mut(&conn) {
            state.phase = Phase::Rejected;
        }
    }

    /// Reports the handshake's end to the waiting dialer, if any.
    fn finish_dial(&self, conn: ConnId, outcome: HandshakeOutcome) {
        let tx = match self
            .conns
            .lock_unpoisoned()
            .get_mut(&conn)
            .map(|s| &mut s.phase)
        {
            Some(Phase::AwaitAdmit { outcome, .. }) => outcome.take(),
            _ => None,
        };
        if let Some(tx) = tx {
            let _ = tx.send(outcome);
        }
    }

    /// Turns `conn` ready as `link` and starts its liveness; the waiting dialer's sender
    /// comes back. `None` when the connection ended meanwhile.
    fn set_ready(
        &self,
        conn: ConnId,
        link: PeerLink,
    ) -> Option<Option<oneshot::Sender<HandshakeOutcome>>> {
        let mut conns = self.conns.lock_unpoisoned();
        let state = conns.get_mut(&conn)?;
        let dialer = match &mut state.phase {
            Phase::AwaitAdmit { outcome, .. } => outcome.take(),
            _ => None,
        };
        state.phase = Phase::Ready { link };
        state.liveness = Some(Liveness::new(self.settings.liveness, Instant::now()));
        Some(dialer)
    }

    fn ack_probe(&self, conn: ConnId, probe: u64) {
        if let Some(l) = self
            .conns
            .lock_unpoisoned()
            .get_mut(&conn)
            .and_then(|s| s.liveness.as_mut())
        {
            l.ack(probe, Instant::now());
        }
    }

    /// Registers a connection the dialer made, before its hello. False when frames the
    /// server sent first already made a state other than an untouched dial's: it
    /// misbehaved.
    fn register_dial(
        &self,
        conn: &Arc<dyn Connection>,
        target: &DialTarget,
        outcome: oneshot::Sender<HandshakeOutcome>,
        on_close: oneshot::Sender<()>,
    ) -> bool {
        let mut conns = self.conns.lock_unpoisoned();
        let untouched = matches!(
            conns.get(&conn.id()).map(|s| s.phase.kind()),
            None | Some(PhaseKind::AwaitAdmit { registered: false })
        );
        if untouched {
            let mut state = ConnState::new(
                conn.clone(),
                Phase::AwaitAdmit {
                    expected_rid: target.expected_rid.clone(),
                    expected_generation: target.expected_generation,
                    outcome: Some(outcome),
                },
            );
            state.on_close = Some(on_close);
            conns.insert(conn.id(), state);
        }
        untouched
    }

    /// One liveness round: probes to send, and connections whose liveness or handshake
    /// deadline has passed.
    fn liveness_round(&self, now: Instant) -> LivenessRound {
        let handshake_timeout = self.settings.limits.handshake_timeout;
        let mut round = LivenessRound::default();
        let LivenessRound { probes, expired } = &mut round;
        for (id, state) in self.conns.lock_unpoisoned().iter_mut() {
            let Some(liveness) = state.liveness.as_mut() else {
                if now.duration_since(state.opened) >= handshake_timeout {
                    expired.push(*id);
                }
                continue;
            };
            match liveness.tick(now) {
                ProbeAction::Send(probe) => probes.push((state.conn.clone(), probe)),
                ProbeAction::Expired => expired.push(*id),
            }
        }
        round
    }
}

#[cfg(test)]
pub(crate) mod tests;

impl ReplyOut for Links {
    fn reply(&self, route: &ReplyRoute, result: Result<Bytes>) {
        Links::reply(self, route, result)
    }

    fn work(&self) -> &Arc<HandlerWork> {
        Links::work(self)
    }

    fn identity(&self) -> &NodeIdentity {
        &self.identity
    }

    fn trace_propagation(&self) -> Option<&dyn TracePropagation> {
        self.settings.trace_propagation.as_deref()
    }

    fn dropped(&self, reason: crate::telemetry::Dropped) {
        self.meter.dropped(reason);
    }
}
