//! Outbound connections: connect, handshake, wait for the end, back off, repeat. Each
//! attempt is a new connection with a new handshake; nothing is reused. Manual peers dial
//! for the node's whole life; peers found in the Location Store dial until discovery
//! cancels them.

use std::sync::Arc;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::inbound::NodeEvents;
use super::node::{lock, ConnState, HandshakeOutcome, MeshNode, Phase};
use crate::config::PeerSpec;
use crate::link::reconnect_delay;
use crate::wire::{Command, ControlHeader};

/// Where a dialer connects and who it expects to find there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DialTarget {
    pub(crate) endpoint: String,
    pub(crate) expected_rid: Option<String>,
    /// Set for peers found in the Location Store: the handshake must show this lifecycle.
    pub(crate) expected_generation: Option<u64>,
    /// The peer's CURVE key (from its descriptor or the manual peer spec).
    pub(crate) server_key: Option<crate::link::CurvePublicKey>,
}

impl From<PeerSpec> for DialTarget {
    fn from(peer: PeerSpec) -> Self {
        DialTarget {
            endpoint: peer.endpoint,
            expected_rid: peer.expected_rid,
            expected_generation: None,
            server_key: peer.server_key,
        }
    }
}

impl MeshNode {
    /// Dials `peer` until `cancel` (a child of the node's own cancellation).
    pub(crate) fn spawn_dialer(self: &Arc<Self>, peer: DialTarget, cancel: CancellationToken) {
        let me = Arc::downgrade(self);
        self.background.spawn(async move {
            let mut known_rid = peer.expected_rid.clone();
            loop {
                let Some(node) = me.upgrade() else { return };
                let round = node.dial_once(&peer, &mut known_rid);
                let keep_going = tokio::select! {
                    _ = cancel.cancelled() => false,
                    _ = round => true,
                };
                drop(node);
                if !keep_going {
                    return;
                }
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(reconnect_delay()) => {}
                }
            }
        });
    }

    /// One connection lifetime: returns when it could not be made or has ended.
    async fn dial_once(&self, peer: &DialTarget, known_rid: &mut Option<String>) {
        // Both sides may list each other: while the peer is admitted over its own
        // connection, there is nothing to dial.
        if let Some(rid) = known_rid.as_deref() {
            let mut events = self.peers.subscribe();
            while self.peers.link(rid).is_some() {
                super::peer_table::next_event(&mut events).await;
            }
        }
        let events = Arc::new(NodeEvents::dialed(self.me.clone()));
        let Some(security) = self.settings.security.client(peer.server_key) else {
            return tracing::warn!(endpoint = %peer.endpoint, "not dialing: this node runs CURVE and the peer's public key is unknown");
        };
        let options = crate::link::ConnectOptions {
            limits: self.link_limits(),
            security,
        };
        let conn = match self
            .settings
            .transport
            .connect(&peer.endpoint, events, options)
            .await
        {
            Ok(conn) => conn,
            Err(e) => {
                tracing::debug!(endpoint = %peer.endpoint, error = %e, "connect failed");
                return;
            }
        };
        let (outcome_tx, outcome_rx) = oneshot::channel();
        let (closed_tx, closed_rx) = oneshot::channel();
        let registered = {
            let mut conns = lock(&self.conns);
            // Frames the server sent before this point may already have made a state:
            // anything but the placeholder of an untouched dial means it misbehaved.
            let untouched = match conns.get(&conn.id()).map(|s| &s.phase) {
                None => true,
                Some(Phase::AwaitAdmit { outcome: None, .. }) => true,
                Some(_) => false,
            };
            if untouched {
                conns.insert(
                    conn.id(),
                    ConnState {
                        conn: conn.clone(),
                        phase: Phase::AwaitAdmit {
                            expected_rid: peer.expected_rid.clone(),
                            expected_generation: peer.expected_generation,
                            outcome: Some(outcome_tx),
                        },
                        liveness: None,
                        on_close: Some(closed_tx),
                        opened: tokio::time::Instant::now(),
                        inflight: Arc::default(),
                        waiting_sends: Arc::default(),
                    },
                );
            }
            untouched
        };
        // A connection that ended before it was registered would never report it.
        if !registered || conn.is_closed() {
            tracing::warn!(endpoint = %peer.endpoint, "dialed connection ended or misbehaved before our hello");
            self.connection_lost(conn.id(), "ended before hello");
            conn.close();
            return;
        }
        let hello = ControlHeader {
            admission: Some(self.admission()),
            ..ControlHeader::default()
        };
        self.send_control(&conn, Command::Hello, hello);
        match tokio::time::timeout(self.settings.limits.handshake_timeout, outcome_rx).await {
            Ok(Ok(HandshakeOutcome::Admitted { rid })) => {
                *known_rid = Some(rid);
                let _ = closed_rx.await;
            }
            Ok(Ok(HandshakeOutcome::Refused { peer_rid })) => {
                if peer_rid.is_some() {
                    *known_rid = peer_rid;
                }
                self.connection_lost(conn.id(), "handshake refused");
            }
            _ => {
                tracing::warn!(endpoint = %peer.endpoint, "handshake did not complete in time");
                self.connection_lost(conn.id(), "handshake timeout");
            }
        }
    }
}
