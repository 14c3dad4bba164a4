//! Why a CURVE command was refused.

/// A CURVE command that cannot be accepted. Every variant ends the connection.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CurveError {
    /// The body is not the command expected, or has the wrong size or version.
    #[error("malformed CURVE command: {0}")]
    Malformed(&'static str),
    /// A box did not open: wrong key, or the bytes were altered.
    #[error("CURVE box did not open: {0}")]
    Decrypt(&'static str),
    /// A short nonce did not increase: a replayed or reordered command.
    #[error("CURVE short nonce did not increase (replayed or reordered command)")]
    Replay,
    /// A box opened but contradicts this handshake.
    #[error("CURVE handshake mismatch: {0}")]
    Mismatch(&'static str),
    /// The peer offered a key of small order, whose shared secret anyone can compute.
    #[error("CURVE peer key has small order")]
    WeakKey,
    /// A step was called out of order.
    #[error("CURVE handshake step out of order: {0}")]
    State(&'static str),
    /// The peer refused the handshake with an ERROR command.
    #[error("peer sent ERROR: {0}")]
    Peer(String),
}
