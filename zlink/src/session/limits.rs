//! [`StreamLimits`]: the bounds of one STREAM listener's sessions, and their defaults.

use std::time::Duration;

use super::packet::DEFAULT_MAX_MESSAGE_SIZE;

/// The bounds of one listener's sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamLimits {
    /// Largest inbound message, header and payload (the 6-byte prefix not counted).
    /// A larger one closes its session, never partially delivered. `0`: no cap of the
    /// framework's (memory still follows the bytes received, not the declared size).
    pub max_message_size: usize,
    /// Sessions open at once; one more connection is told `ServerDrain` and closed.
    pub max_sessions: usize,
    /// Bytes queued for one client before a sender waits.
    pub outbound_bytes: usize,
    /// How long a send to a client waits for room before the session is closed
    /// (`TransportError`: the client does not read).
    pub send_timeout: Duration,
    /// How often the server sends `$zlink.heartbeat.ping` (zero: never).
    pub heartbeat_interval: Duration,
    /// A session from which nothing arrived for this long is closed
    /// (`HeartbeatTimeout`); zero: never.
    pub heartbeat_timeout: Duration,
    /// A session from which no application packet arrived for this long is closed
    /// (`IdleTimeout`); zero (the default): never.
    pub idle_timeout: Duration,
    /// Packets read ahead of the session's lane; then reading waits.
    pub lane_depth: usize,
    /// How long a binding sealed for its Actor's move waits for the new route (command
    /// 44) before the session ends (SessionRelocationSealTimeout, seed 000 §3.3).
    pub relocation_seal_timeout: Duration,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            max_sessions: DEFAULT_MAX_SESSIONS,
            outbound_bytes: DEFAULT_OUTBOUND_BYTES,
            send_timeout: Duration::from_secs(1),
            heartbeat_interval: Duration::from_secs(10),
            heartbeat_timeout: Duration::from_secs(30),
            idle_timeout: Duration::ZERO,
            lane_depth: 16,
            relocation_seal_timeout: Duration::from_secs(10),
        }
    }
}

/// Sessions one listener holds at once by default.
pub const DEFAULT_MAX_SESSIONS: usize = 20_000;
/// Bytes queued for one client by default.
pub const DEFAULT_OUTBOUND_BYTES: usize = 256 * 1024;
