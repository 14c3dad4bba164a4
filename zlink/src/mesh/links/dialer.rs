//! Outbound connections: connect, handshake, wait for the end, back off, repeat. Each
//! attempt is a new connection with a new handshake; nothing is reused. Manual peers dial
//! for the node's whole life; peers found in the Location Store dial until discovery
//! cancels them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::conn_state::HandshakeOutcome;
use super::events::NodeEvents;
use super::Links;
use crate::link::reconnect_delay;
use crate::link::warn_limit::{WarnLimit, WARN_WINDOW};
use crate::mesh::peer_table::next_event;
use crate::mesh::PeerSpec;
use crate::sync::LockUnpoisoned;
use crate::wire::{Command, ControlHeader};

/// The longest wait between two attempts at a peer that keeps refusing our handshake.
const MAX_REFUSED_BACKOFF: Duration = Duration::from_secs(5);

/// How many dial failures an error message names.
const FAILURES_NAMED: usize = 3;

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

/// Why one attempt at a peer did not end in a connection.
#[derive(Debug, Clone)]
struct Failure {
    reason: String,
    /// The peer refused us (a key, a trust set, its admission): the same attempt will
    /// fail again until someone changes a configuration.
    refused: bool,
}

/// The last failure of each dialer that is not connected, by endpoint.
#[derive(Default)]
pub(super) struct DialFailures {
    by_endpoint: Mutex<BTreeMap<String, Noted>>,
    warnings: WarnLimit,
}

struct Noted {
    rid: Option<String>,
    failure: Failure,
    attempts: u64,
    since: Instant,
}

impl DialFailures {
    fn note(&self, target: &DialTarget, failure: &Failure) {
        let mut noted = self.by_endpoint.lock_unpoisoned();
        let entry = noted
            .entry(target.endpoint.clone())
            .or_insert_with(|| Noted {
                rid: target.expected_rid.clone(),
                failure: failure.clone(),
                attempts: 0,
                since: Instant::now(),
            });
        entry.failure = failure.clone();
        entry.attempts += 1;
        drop(noted);
        if !failure.refused {
            return tracing::debug!(endpoint = %target.endpoint, error = %failure.reason, "connect failed");
        }
        // Refusals repeat until someone fixes a key: one WARN per peer per window.
        if let Some(repeats) = self.warnings.admit(&target.endpoint) {
            tracing::warn!(
                endpoint = %target.endpoint,
                peer = ?target.expected_rid,
                error = %failure.reason,
                repeats_since_last_warn = repeats,
                window_s = WARN_WINDOW.as_secs(),
                "dial refused; retrying with a growing backoff"
            );
        }
    }

    fn connected(&self, endpoint: &str) {
        if self
            .by_endpoint
            .lock_unpoisoned()
            .remove(endpoint)
            .is_some()
        {
            self.warnings.clear(endpoint);
        }
    }

    fn forget(&self, endpoint: &str) {
        self.by_endpoint.lock_unpoisoned().remove(endpoint);
    }

    /// The first few failures, one line each.
    pub(super) fn describe(&self) -> Vec<String> {
        let noted = self.by_endpoint.lock_unpoisoned();
        let mut lines: Vec<String> = noted
            .iter()
            .take(FAILURES_NAMED)
            .map(|(endpoint, n)| {
                let peer = n
                    .rid
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default();
                format!(
                    "dialing {endpoint}{peer}: {} ({} attempt(s) in {:.1} s)",
                    n.failure.reason,
                    n.attempts,
                    n.since.elapsed().as_secs_f64()
                )
            })
            .collect();
        if noted.len() > FAILURES_NAMED {
            lines.push(format!(
                "and {} more peer(s) not connected",
                noted.len() - FAILURES_NAMED
            ));
        }
        lines
    }
}

/// The wait after `refusals` refusals in a row: the usual 100..199 ms, doubled for each
/// refusal after the first, up to [`MAX_REFUSED_BACKOFF`].
fn backoff(refusals: u32) -> Duration {
    let doubling = 2u32.saturating_pow(refusals.saturating_sub(1).min(10));
    (reconnect_delay() * doubling).min(MAX_REFUSED_BACKOFF)
}

/// Dials `target` until `cancel`.
pub(super) async fn run(links: Weak<Links>, target: DialTarget, cancel: CancellationToken) {
    let mut known_rid = target.expected_rid.clone();
    let mut refusals = 0u32;
    loop {
        let Some(strong) = links.upgrade() else {
            return;
        };
        let outcome = tokio::select! {
            _ = cancel.cancelled() => None,
            failure = dial_once(&strong, &target, &mut known_rid) => Some(failure),
        };
        let Some(failure) = outcome else {
            strong.dial_failures.forget(&target.endpoint);
            return;
        };
        match &failure {
            Some(failure) => {
                strong.dial_failures.note(&target, failure);
                refusals = if failure.refused { refusals + 1 } else { 0 };
            }
            None => refusals = 0,
        }
        drop(strong);
        tokio::select! {
            _ = cancel.cancelled() => {
                if let Some(links) = links.upgrade() {
                    links.dial_failures.forget(&target.endpoint);
                }
                return;
            }
            _ = tokio::time::sleep(backoff(refusals)) => {}
        }
    }
}

/// One connection lifetime: returns when it could not be made (and why) or has ended.
async fn dial_once(
    links: &Arc<Links>,
    target: &DialTarget,
    known_rid: &mut Option<String>,
) -> Option<Failure> {
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
        return Some(Failure {
            reason: "not dialing: this node runs CURVE and the peer's public key is unknown \
                     (give it with PeerSpec::server_key)"
                .to_string(),
            refused: true,
        });
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
            return Some(Failure {
                refused: matches!(e, crate::link::LinkError::Refused { .. }),
                reason: e.to_string(),
            })
        }
    };
    let (outcome_tx, outcome_rx) = oneshot::channel();
    let (closed_tx, closed_rx) = oneshot::channel();
    let registered = links.register_dial(&conn, target, outcome_tx, closed_tx);
    // A connection that ended before it was registered would never report it.
    if !registered || conn.is_closed() {
        links.lost(conn.id(), "ended before hello");
        conn.close();
        return Some(Failure {
            reason: "the connection ended or misbehaved before our hello".to_string(),
            refused: false,
        });
    }
    let hello = ControlHeader {
        admission: Some(links.identity().admission()),
        ..ControlHeader::default()
    };
    links.send_control(&conn, Command::Hello, hello);
    let handshake_timeout = settings.limits.handshake_timeout;
    match tokio::time::timeout(handshake_timeout, outcome_rx).await {
        Ok(Ok(HandshakeOutcome::Admitted { rid })) => {
            links.dial_failures.connected(&target.endpoint);
            *known_rid = Some(rid);
            let _ = closed_rx.await;
            None
        }
        Ok(Ok(HandshakeOutcome::Refused { peer_rid })) => {
            if peer_rid.is_some() {
                *known_rid = peer_rid;
            }
            links.lost(conn.id(), "handshake refused");
            Some(Failure {
                reason: "the peer's admission refused our hello (see its log for why)".to_string(),
                refused: true,
            })
        }
        _ => {
            links.lost(conn.id(), "handshake timeout");
            Some(Failure {
                reason: "the zlink handshake did not complete in time".to_string(),
                refused: false,
            })
        }
    }
}
