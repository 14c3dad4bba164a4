//! The node-wide liveness ticker: probes every ready connection, closes expired ones.

use std::sync::Arc;

use tokio::time::Instant;

use super::node::{lock, MeshNode};
use crate::link::ProbeAction;
use crate::wire::{Command, ControlHeader};

impl MeshNode {
    pub(crate) fn spawn_liveness(self: &Arc<Self>) {
        let me = Arc::downgrade(self);
        let cancel = self.cancel.clone();
        let interval = self.settings.liveness.probe_interval;
        self.background.spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = ticker.tick() => {}
                }
                let Some(node) = me.upgrade() else { return };
                node.liveness_round(Instant::now());
            }
        });
    }

    fn liveness_round(&self, now: Instant) {
        let handshake_timeout = self.settings.limits.handshake_timeout;
        let mut probes = Vec::new();
        let mut expired = Vec::new();
        for (id, state) in lock(&self.conns).iter_mut() {
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
        for (conn, probe) in probes {
            self.send_control(
                &conn,
                Command::LivenessProbe,
                ControlHeader {
                    probe,
                    ..ControlHeader::default()
                },
            );
        }
        for id in expired {
            tracing::warn!(
                conn = id,
                "peer_deadline_expired: no liveness ack or handshake in time"
            );
            self.connection_lost(id, "liveness or handshake deadline expired");
        }
    }
}
