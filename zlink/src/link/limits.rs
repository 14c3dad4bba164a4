//! Limits every ZMTP connection and listener enforces.

use std::time::Duration;

/// Per-connection and per-listener limits. Inbound sizes are checked from each frame's
/// header, before anything is allocated for it; the excess closes that connection only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkLimits {
    /// Largest complete inbound message (all frames). Default 16 MiB.
    pub max_message: usize,
    /// Most frames in one inbound message. Default 8 (zlink messages have at most 3).
    pub max_frames: usize,
    /// From accept (or connect) to a finished zlink admission: greeting, security
    /// handshake and hello. Default 5 s.
    pub handshake_timeout: Duration,
    /// Most open connections per listener; more are refused at accept. Default 4096.
    pub max_connections: usize,
    /// Most connections per listener that have not finished admission. Default 256.
    pub max_pending: usize,
    /// Most messages waiting in one connection's send queue. Default 8192.
    pub send_queue_messages: usize,
    /// Most bytes waiting in one connection's send queue. Default 64 MiB (a message
    /// larger than this waits for the queue to be empty).
    pub send_queue_bytes: usize,
    /// Most inbound handler calls running at once for one connection; a request beyond it
    /// is answered `CapacityExceeded`. Default 1024.
    pub max_inflight_per_connection: usize,
}

impl Default for LinkLimits {
    fn default() -> Self {
        LinkLimits {
            max_message: 16 << 20,
            max_frames: 8,
            handshake_timeout: Duration::from_secs(5),
            max_connections: 4096,
            max_pending: 256,
            send_queue_messages: 8192,
            send_queue_bytes: 64 << 20,
            max_inflight_per_connection: 1024,
        }
    }
}

impl LinkLimits {
    /// Every value that is not usable, described.
    pub(crate) fn violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut positive = |name: &str, value: usize| {
            if value == 0 {
                out.push(format!("link limit {name} must be > 0"));
            }
        };
        positive("max_message", self.max_message);
        positive("max_connections", self.max_connections);
        positive("max_pending", self.max_pending);
        positive("send_queue_messages", self.send_queue_messages);
        positive("send_queue_bytes", self.send_queue_bytes);
        positive(
            "max_inflight_per_connection",
            self.max_inflight_per_connection,
        );
        if self.max_frames < 3 {
            out.push(format!(
                "link limit max_frames must be at least 3 (a zlink message has up to 3 frames), got {}",
                self.max_frames
            ));
        }
        if self.handshake_timeout.is_zero() {
            out.push("link limit handshake_timeout must be > 0".into());
        }
        out
    }
}
