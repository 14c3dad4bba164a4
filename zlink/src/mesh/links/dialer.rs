//! Outbound connections: connect, handshake, wait for the end, back off, repeat. Each
//! attempt is a new connection with a new handshake; nothing is reused. Manual peers dial
//! for the node's whole life; peers found in the Location Store dial until discovery
//! cancels them.

use std::sync::{Arc, Weak};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::conn_state::HandshakeOutcome;
use super::events::NodeEvents;
use super::Links;
use crate::link::reconnect_delay;
use crate::mesh::peer_table::next_event;
use crate::mesh::PeerSpec;
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

/// Dials `target` until `cancel`.
pub(super) async fn run(links: Weak<Links>, target: DialTarget, cancel: CancellationToken) {
    let mut known_rid = target.expected_rid.clone();
    loop {
        let Some(strong) = links.upgrade() else {
            return;
        };
        let keep_going = tokio::select! {
            _ = cancel.cancelled() => false,
            _ = dial_once(&strong, &target, &mut known_rid) => true,
        };
        drop(strong);
        if !keep_going {
            return;
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(reconnect_delay()) => {}
        }
    }
}

/// One connection lifetime: returns when it could not be made or has ended.
async fn dial_once(links: &Arc<Links>, target: &DialTarget, known_rid: &mut Option<String>) {
    // Both sides may list each other: while the peer is admitted over its own connection,
    // there is nothing to dial.
    if let Some(rid) = known_rid.as_deref() {
        let mut events = links.peers().subscribe();
        while links.peers().link(rid).is_some() {
            next_event(&mut events).await;
        }
    }
    let settings = links.settings();
    let Some(security) = settings.security.client(target.server_key) else {
        return tracing::warn!(endpoint = %target.endpoint, "not dialing: this node runs CURVE and the peer's public key is unknown");
    };
    let options = crate::link::ConnectOptions {
        limits: links.limits(),
        security,
    };
    let events = Arc::new(NodeEvents::dialed(Arc::downgrade(links)));
    let conn = match settings
        .transport
        .connect(&target.endpoint, events, options)
        .await
    {
        Ok(conn) => conn,
        Err(e) => {
            tracing::debug!(endpoint = %target.endpoint, error = %e, "connect failed");
            return;
        }
    };
    let (outcome_tx, outcome_rx) = oneshot::channel();
    let (closed_tx, closed_rx) = oneshot::channel();
    let registered = links.register_dial(&conn, target, outcome_tx, closed_tx);
    // A connection that ended before it was registered would never report it.
    if !registered || conn.is_closed() {
        tracing::warn!(endpoint = %target.endpoint, "dialed connection ended or misbehaved before our hello");
        links.lost(conn.id(), "ended before hello");
        conn.close();
        return;
    }
    let hello = ControlHeader {
        admission: Some(links.identity().admission()),
        ..ControlHeader::default()
    };
    links.send_control(&conn, Command::Hello, hello);
    let handshake_timeout = settings.limits.handshake_timeout;
    match tokio::time::timeout(handshake_timeout, outcome_rx).await {
        Ok(Ok(HandshakeOutcome::Admitted { rid })) => {
            *known_rid = Some(rid);
            let _ = closed_rx.await;
        }
        Ok(Ok(HandshakeOutcome::Refused { peer_rid })) => {
            if peer_rid.is_some() {
                *known_rid = peer_rid;
            }
            links.lost(conn.id(), "handshake refused");
        }
        _ => {
            tracing::warn!(endpoint = %target.endpoint, "handshake did not complete in time");
            links.lost(conn.id(), "handshake timeout");
        }
    }
}
