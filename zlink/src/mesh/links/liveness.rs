//! The liveness ticker of one node's links: probes every ready connection, closes expired
//! ones and accepted connections that never finished their handshake.

use std::sync::Weak;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Links;
use crate::wire::{Command, ControlHeader};

pub(super) async fn run(links: Weak<Links>, interval: Duration, cancel: CancellationToken) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let Some(links) = links.upgrade() else { return };
        let super::LivenessRound { probes, expired } = links.liveness_round(Instant::now());
        for (conn, probe) in probes {
            let header = ControlHeader {
                probe,
                ..ControlHeader::default()
            };
            links.send_control(&conn, Command::LivenessProbe, header);
        }
        for id in expired {
            tracing::warn!(
                conn = id,
                "peer_deadline_expired: no liveness ack or handshake in time"
            );
            links.lost(id, "liveness or handshake deadline expired");
        }
    }
}
