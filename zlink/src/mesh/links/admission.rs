//! The zlink handshake on one connection: hello, admit, reject. The acceptor checks the
//! initiator's admission record (protocol, MeshName, RID, lifecycle generation, CURVE key,
//! the store's view) and answers admit or reject; the initiator checks the admit against
//! the RID and generation it expected. A reject carries its reason only.

use std::sync::Arc;

use super::conn_state::{HandshakeOutcome, PhaseKind};
use super::Links;
use crate::link::Connection;
use crate::wire::{Admission, Command, ControlHeader, RejectReason, PROTOCOL_MAJOR};

/// Most server channels one peer may advertise: every admission and update rebuilds the
/// candidate snapshots of the channels it names.
pub(crate) const MAX_ADVERTISED_CHANNELS: usize = 1024;

/// How long a reject has to leave before its connection closes.
const REJECT_LINGER: std::time::Duration = std::time::Duration::from_millis(50);

/// Checks a peer's admission record against ours.
fn check_admission(links: &Links, adm: &Admission) -> Result<(), RejectReason> {
    let me = links.identity();
    if adm.protocol != PROTOCOL_MAJOR {
        return Err(RejectReason::ProtocolVersionUnsupported);
    }
    if adm.mesh_name != me.mesh_name() {
        return Err(RejectReason::TopologyMismatch);
    }
    let own_rid = links.policy().refuses_own_rid() && adm.rid == me.rid();
    if adm.rid.is_empty() || adm.rid.len() > 255 || own_rid {
        return Err(RejectReason::IdentityMismatch);
    }
    if adm.generation == 0 || adm.revision == 0 {
        return Err(RejectReason::InvalidDescriptor);
    }
    if adm.channels.len() > MAX_ADVERTISED_CHANNELS {
        return Err(RejectReason::InvalidDescriptor);
    }
    Ok(())
}

/// A RID belongs to the CURVE key that first proved it (and, with discovery, to the key
/// its descriptor publishes): another key claiming it is refused.
fn key_conflict(links: &Links, rid: &str, conn: &Arc<dyn Connection>) -> Option<String> {
    let key = conn.peer_key()?;
    if let Some(bound) = links.peers().bound_key(rid) {
        if bound != key {
            return Some(format!(
                "rid {rid} is bound to another CURVE key than {key}"
            ));
        }
    }
    // A manual peer's configured key, and a member's published key, are authoritative.
    let configured = links
        .settings()
        .peers
        .iter()
        .filter(|p| p.expected_rid.as_deref() == Some(rid))
        .find_map(|p| p.server_key);
    let published = || links.membership().and_then(|m| m.published_key(rid));
    match configured.or_else(published) {
        Some(expected) if expected != key => Some(format!(
            "rid {rid} belongs to CURVE key {expected}, the connection proved {key}"
        )),
        _ => None,
    }
}

/// Refuses an accepted connection: the reject (reason only: it must not tell an
/// unadmitted stranger who we are), then the close.
pub(super) fn reject(
    links: &Links,
    conn: &Arc<dyn Connection>,
    reason: RejectReason,
    detail: &str,
) {
    tracing::warn!(conn = conn.id(), ?reason, detail, "admission rejected");
    links
        .meter
        .refused(u32::from(reason) as usize, reason.label());
    let header = ControlHeader {
        reject: Some(reason),
        ..ControlHeader::default()
    };
    links.set_rejected(conn.id());
    links.send_control(conn, Command::Reject, header);
    let conn = conn.clone();
    let me = links.me.clone();
    links.spawn_background(async move {
        tokio::time::sleep(REJECT_LINGER).await;
        if let Some(links) = me.upgrade() {
            links.lost(conn.id(), "rejected");
        }
    });
}

/// Acceptor side: a hello arrived.
pub(super) fn on_hello(links: &Links, conn: &Arc<dyn Connection>, adm: Admission) {
    if !links.identity().is_running() {
        return reject(
            links,
            conn,
            RejectReason::RuntimeNotServing,
            "shutting down",
        );
    }
    if let Err(reason) = check_admission(links, &adm) {
        let detail = format!("peer {} mesh {:?}", adm.rid, adm.mesh_name);
        return reject(links, conn, reason, &detail);
    }
    if let Some(detail) = key_conflict(links, &adm.rid, conn) {
        return reject(links, conn, RejectReason::IdentityMismatch, &detail);
    }
    if links.peers().admitted_elsewhere(&adm.rid, conn.id()) {
        let detail = format!("rid {} already has a live connection", adm.rid);
        return reject(links, conn, RejectReason::DuplicateConnection, &detail);
    }
    if let Some(detail) = links.membership().and_then(|m| m.refuses(&adm)) {
        return reject(links, conn, RejectReason::LifecycleGenerationStale, &detail);
    }
    if let Err((reason, detail)) = mark_ready(links, conn, adm) {
        return reject(links, conn, reason, &detail);
    }
    let header = ControlHeader {
        admission: Some(links.identity().admission()),
        ..ControlHeader::default()
    };
    links.send_control(conn, Command::Admit, header);
    // Selectable only now: a call picked before the admit was queued would reach the
    // initiator ahead of its admit, and be dropped there.
    links.peers().confirm(conn.id());
}

/// Initiator side: admit arrived.
pub(super) fn on_admit(links: &Links, conn: &Arc<dyn Connection>, adm: Admission) {
    // The dialer registers the connection and then sends its hello: an admit before
    // that answers nothing.
    let Some((expected, expected_generation)) = links.dial_expectation(conn.id()) else {
        tracing::warn!(conn = conn.id(), "admit before our hello: refused");
        return refuse_dial(links, conn, "admit before hello");
    };
    let refused = if let Err(reason) = check_admission(links, &adm) {
        Some(format!("{reason:?}"))
    } else if expected.as_ref().is_some_and(|e| e != &adm.rid) {
        Some(format!("expected rid {expected:?}, peer is {}", adm.rid))
    } else if expected_generation.is_some_and(|g| g != adm.generation) {
        Some(format!(
            "expected lifecycle generation {expected_generation:?} of {}, peer has {}",
            adm.rid, adm.generation
        ))
    } else if let Some(detail) = key_conflict(links, &adm.rid, conn) {
        Some(detail)
    } else if links.peers().admitted_elsewhere(&adm.rid, conn.id()) {
        Some(format!("rid {} already has a live connection", adm.rid))
    } else {
        None
    };
    if let Some(detail) = refused {
        tracing::warn!(conn = conn.id(), peer = %adm.rid, detail, "admit refused locally");
        links.finish_dial(
            conn.id(),
            HandshakeOutcome::Refused {
                peer_rid: Some(adm.rid),
            },
        );
        return links.lost(conn.id(), "identity mismatch");
    }
    // mark_ready also reports the admission to the waiting dialer.
    match mark_ready(links, conn, adm) {
        Ok(()) => {
            links.peers().confirm(conn.id());
        }
        Err((_, detail)) => {
            tracing::warn!(conn = conn.id(), detail, "admit refused locally");
            refuse_dial(links, conn, "identity taken meanwhile");
        }
    }
}

pub(super) fn on_reject(links: &Links, conn: &Arc<dyn Connection>, header: ControlHeader) {
    let peer_rid = header.admission.map(|a| a.rid);
    tracing::warn!(conn = conn.id(), reason = ?header.reject, peer = ?peer_rid, "peer rejected our hello");
    links.finish_dial(conn.id(), HandshakeOutcome::Refused { peer_rid });
    links.lost(conn.id(), "rejected by peer");
}

/// Our dial was answered with something other than admit or reject: refused.
pub(super) fn refuse_dial(links: &Links, conn: &Arc<dyn Connection>, why: &'static str) {
    links.finish_dial(conn.id(), HandshakeOutcome::Refused { peer_rid: None });
    links.lost(conn.id(), why);
    // Also when the dialer has not registered it yet (no state to close it by).
    conn.close();
}

/// Admits `conn` as `adm.rid`: the peer table claims the RID (and binds its key), then
/// the connection turns ready; the loser of a race for one RID gets `Err`.
fn mark_ready(
    links: &Links,
    conn: &Arc<dyn Connection>,
    adm: Admission,
) -> Result<(), (RejectReason, String)> {
    let generation = adm.generation;
    let link = links.peers().admit(conn, adm)?;
    let Some(dialer) = links.set_ready(conn.id(), link.clone()) else {
        // The connection ended meanwhile: give the RID back.
        links.peers().remove_conn(conn.id());
        return Err((RejectReason::RuntimeNotServing, "connection closed".into()));
    };
    conn.admitted();
    links.meter.admitted(conn.peer_key().is_some());
    let rid = link.rid().to_string();
    if let Some(tx) = dialer {
        let _ = tx.send(HandshakeOutcome::Admitted { rid: rid.clone() });
    }
    tracing::info!(rid = %links.identity().rid(), peer = %rid, generation, conn = conn.id(), "peer ready");
    Ok(())
}

/// Whether the connection's phase is one that awaits `hello` (accepted, not yet answered).
pub(super) fn awaits_hello(links: &Links, conn: &Arc<dyn Connection>) -> bool {
    links.phase(conn.id()) == PhaseKind::AwaitHello
}
