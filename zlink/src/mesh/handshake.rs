//! Admission: hello, admit, reject and update.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::time::Instant;

use super::node::{lock, HandshakeOutcome, MeshNode, Phase};
use crate::link::{Connection, Liveness};
use crate::wire::{Admission, Command, ControlHeader, RejectReason, PROTOCOL_MAJOR};

impl MeshNode {
    /// Checks a peer's admission record against ours.
    fn check_admission(&self, adm: &Admission) -> Result<(), RejectReason> {
        if adm.protocol != PROTOCOL_MAJOR {
            return Err(RejectReason::ProtocolVersionUnsupported);
        }
        if adm.mesh_name != self.settings.mesh_name {
            return Err(RejectReason::TopologyMismatch);
        }
        // A ClientServer client and server of one process share its RID.
        let own_rid =
            self.topology() == crate::config::Topology::RouteMesh && adm.rid == self.settings.rid;
        if adm.rid.is_empty() || adm.rid.len() > 255 || own_rid {
            return Err(RejectReason::IdentityMismatch);
        }
        if adm.generation == 0 || adm.revision == 0 {
            return Err(RejectReason::InvalidDescriptor);
        }
        Ok(())
    }

    /// A RID belongs to the CURVE key that first proved it (and, with discovery, to the
    /// key its descriptor publishes): another key claiming it is refused.
    fn key_conflict(&self, rid: &str, conn: &Arc<dyn Connection>) -> Option<String> {
        let key = conn.peer_key()?;
        if let Some(bound) = self.peers.bound_key(rid) {
            if bound != key {
                return Some(format!(
                    "rid {rid} is bound to another CURVE key than {key}"
                ));
            }
        }
        // A manual peer's configured key, and a member's published key, are authoritative.
        let configured = self
            .settings
            .peers
            .iter()
            .filter(|p| p.expected_rid.as_deref() == Some(rid))
            .find_map(|p| p.server_key);
        match configured.or_else(|| self.published_key(rid)) {
            Some(expected) if expected != key => Some(format!(
                "rid {rid} belongs to CURVE key {expected}, the connection proved {key}"
            )),
            _ => None,
        }
    }

    /// Whether `rid` is admitted on a connection other than `conn_id`.
    fn admitted_elsewhere(&self, rid: &str, conn_id: u64) -> bool {
        self.peers.admitted_elsewhere(rid, conn_id)
    }

    pub(crate) fn reject(&self, conn: &Arc<dyn Connection>, reason: RejectReason, detail: &str) {
        tracing::warn!(conn = conn.id(), ?reason, detail, "admission rejected");
        // The reason only: a reject must not tell an unadmitted stranger who we are.
        let header = ControlHeader {
            reject: Some(reason),
            ..ControlHeader::default()
        };
        if let Some(state) = lock(&self.conns).get_mut(&conn.id()) {
            state.phase = Phase::Rejected;
        }
        self.send_control(conn, Command::Reject, header);
        // Close after the reject has been queued.
        let conn = conn.clone();
        let me = self.me.clone();
        self.background.spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            if let Some(node) = me.upgrade() {
                node.connection_lost(conn.id(), "rejected");
            }
        });
    }

    /// Acceptor side: a hello arrived.
    pub(crate) fn on_hello(&self, conn: &Arc<dyn Connection>, adm: Admission) {
        if !self.is_running() {
            return self.reject(conn, RejectReason::RuntimeNotServing, "shutting down");
        }
        if let Err(reason) = self.check_admission(&adm) {
            let detail = format!("peer {} mesh {:?}", adm.rid, adm.mesh_name);
            return self.reject(conn, reason, &detail);
        }
        if let Some(detail) = self.key_conflict(&adm.rid, conn) {
            return self.reject(conn, RejectReason::IdentityMismatch, &detail);
        }
        if self.admitted_elsewhere(&adm.rid, conn.id()) {
            let detail = format!("rid {} already has a live connection", adm.rid);
            return self.reject(conn, RejectReason::DuplicateConnection, &detail);
        }
        if let Some(detail) = self.stale_by_discovery(&adm) {
            return self.reject(conn, RejectReason::LifecycleGenerationStale, &detail);
        }
        if let Err((reason, detail)) = self.mark_ready(conn, adm) {
            return self.reject(conn, reason, &detail);
        }
        let header = ControlHeader {
            admission: Some(self.admission()),
            ..ControlHeader::default()
        };
        self.send_control(conn, Command::Admit, header);
    }

    /// Initiator side: admit arrived.
    pub(crate) fn on_admit(&self, conn: &Arc<dyn Connection>, adm: Admission) {
        let expectation = match &lock(&self.conns).get(&conn.id()).map(|s| &s.phase) {
            // `outcome` is set once the dialer has registered the connection and sent its
            // hello: an admit before that answers nothing.
            Some(Phase::AwaitAdmit {
                expected_rid,
                expected_generation,
                outcome: Some(_),
            }) => Some((expected_rid.clone(), *expected_generation)),
            _ => None,
        };
        let Some((expected, expected_generation)) = expectation else {
            tracing::warn!(conn = conn.id(), "admit before our hello: refused");
            return self.refuse_dial(conn, "admit before hello");
        };
        let refused = if let Err(reason) = self.check_admission(&adm) {
            Some(format!("{reason:?}"))
        } else if expected.as_ref().is_some_and(|e| e != &adm.rid) {
            Some(format!("expected rid {expected:?}, peer is {}", adm.rid))
        } else if expected_generation.is_some_and(|g| g != adm.generation) {
            Some(format!(
                "expected lifecycle generation {expected_generation:?} of {}, peer has {}",
                adm.rid, adm.generation
            ))
        } else if let Some(detail) = self.key_conflict(&adm.rid, conn) {
            Some(detail)
        } else if self.admitted_elsewhere(&adm.rid, conn.id()) {
            Some(format!("rid {} already has a live connection", adm.rid))
        } else {
            None
        };
        if let Some(detail) = refused {
            tracing::warn!(conn = conn.id(), peer = %adm.rid, detail, "admit refused locally");
            self.finish_dial(
                conn.id(),
                HandshakeOutcome::Refused {
                    peer_rid: Some(adm.rid),
                },
            );
            return self.connection_lost(conn.id(), "identity mismatch");
        }
        // mark_ready also reports the admission to the waiting dialer.
        if let Err((_, detail)) = self.mark_ready(conn, adm) {
            tracing::warn!(conn = conn.id(), detail, "admit refused locally");
            self.refuse_dial(conn, "identity taken meanwhile");
        }
    }

    pub(crate) fn on_reject(&self, conn: &Arc<dyn Connection>, header: ControlHeader) {
        let peer_rid = header.admission.map(|a| a.rid);
        tracing::warn!(conn = conn.id(), reason = ?header.reject, peer = ?peer_rid, "peer rejected our hello");
        self.finish_dial(conn.id(), HandshakeOutcome::Refused { peer_rid });
        self.connection_lost(conn.id(), "rejected by peer");
    }

    /// Our dial was answered with something other than admit or reject: refused.
    pub(crate) fn refuse_dial(&self, conn: &Arc<dyn Connection>, why: &'static str) {
        self.finish_dial(conn.id(), HandshakeOutcome::Refused { peer_rid: None });
        self.connection_lost(conn.id(), why);
        // Also when the dialer has not registered it yet (no state to close it by).
        conn.close();
    }

    /// The key `rid` publishes in its Location Store descriptor, when discovery knows it.
    fn published_key(&self, rid: &str) -> Option<crate::link::CurvePublicKey> {
        self.discovery()?.member_key(rid)
    }

    fn finish_dial(&self, conn_id: u64, outcome: HandshakeOutcome) {
        let tx = match lock(&self.conns).get_mut(&conn_id).map(|s| &mut s.phase) {
            Some(Phase::AwaitAdmit { outcome, .. }) => outcome.take(),
            _ => None,
        };
        if let Some(tx) = tx {
            let _ = tx.send(outcome);
        }
    }

    /// Admits `conn` as `adm.rid`: the peer table claims the RID (and binds its key), then
    /// the connection turns ready; the loser of a race for one RID gets `Err`.
    fn mark_ready(
        &self,
        conn: &Arc<dyn Connection>,
        adm: Admission,
    ) -> Result<(), (RejectReason, String)> {
        let generation = adm.generation;
        let link = self.peers.admit(conn, adm)?;
        let dialer = {
            let mut conns = lock(&self.conns);
            match conns.get_mut(&conn.id()) {
                Some(state) => {
                    let dialer = match &mut state.phase {
                        Phase::AwaitAdmit { outcome, .. } => outcome.take(),
                        _ => None,
                    };
                    state.phase = Phase::Ready { link: link.clone() };
                    state.liveness = Some(Liveness::new(self.settings.liveness, Instant::now()));
                    Some(dialer)
                }
                None => None,
            }
        };
        let Some(dialer) = dialer else {
            // The connection ended meanwhile: give the RID back.
            self.peers.remove_conn(conn.id());
            return Err((RejectReason::RuntimeNotServing, "connection closed".into()));
        };
        conn.admitted();
        let rid = link.rid().to_string();
        if let Some(tx) = dialer {
            let _ = tx.send(HandshakeOutcome::Admitted { rid: rid.clone() });
        }
        tracing::info!(peer = %rid, generation, conn = conn.id(), "peer ready");
        Ok(())
    }

    /// Sets a server channel's weight and tells every ready peer.
    pub(crate) fn set_weight(&self, channel: &str, weight: u32) -> crate::Result<()> {
        if weight > crate::config::MAX_WEIGHT {
            return Err(crate::Error::InvalidArgument(format!(
                "weight {weight} is outside 0..={}",
                crate::config::MAX_WEIGHT
            )));
        }
        if !self.registry.set_weight(channel, weight) {
            return Err(crate::Error::new(
                crate::ErrorKind::NotConfigured,
                format!("channel {channel} has no Server role on this node"),
            ));
        }
        self.revision.fetch_add(1, Ordering::AcqRel);
        let header = ControlHeader {
            admission: Some(self.admission()),
            ..ControlHeader::default()
        };
        for link in self.peers.links() {
            self.send_control(link.conn(), Command::Update, header.clone());
        }
        if let Some(discovery) = self.discovery() {
            // The new revision also goes into the published descriptor.
            discovery.wake.notify_one();
        }
        tracing::info!(channel, weight, "channel weight changed");
        Ok(())
    }
}
