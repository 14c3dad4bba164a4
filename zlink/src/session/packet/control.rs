//! Control packets (kind Control, Raw codec, no sequence, metadata or flow): the
//! heartbeat pair and the notice a side sends before it closes the session.

use bytes::{BufMut, Bytes, BytesMut};

/// A heartbeat probe; the other side answers [`HEARTBEAT_PONG`].
pub(crate) const HEARTBEAT_PING: &str = "$zlink.heartbeat.ping";
/// The answer to [`HEARTBEAT_PING`].
pub(crate) const HEARTBEAT_PONG: &str = "$zlink.heartbeat.pong";
/// The closing notice: `version = 1 | close_reason u8 | diag_len u16 (0..=512) | diag`.
pub(crate) const SESSION_CLOSING: &str = "session-closing";

const CLOSING_VERSION: u8 = 1;
/// Longest diagnostic a closing notice carries.
pub(crate) const MAX_DIAGNOSTIC_BYTES: usize = 512;

/// Why a session ended, as the closing notice and [`on_disconnected`] say it.
///
/// [`on_disconnected`]: crate::session::Session::on_disconnected
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[repr(u8)]
pub enum CloseReason {
    /// The client closed the connection, or asked to.
    ClientClose = 1,
    /// No application packet arrived for the listener's idle timeout.
    IdleTimeout = 2,
    /// Nothing at all arrived for the heartbeat timeout.
    HeartbeatTimeout = 3,
    /// The server is draining or stopping, or the application closed the session.
    ServerDrain = 4,
    /// The client broke the packet format or a limit (an oversized message).
    ProtocolError = 5,
    /// The connection failed, or the client stopped reading what it is sent.
    TransportError = 6,
}

impl CloseReason {
    /// Its `reason` label (`zlink_session_closed_total`).
    pub(crate) const fn label(self) -> &'static str {
        match self {
            CloseReason::ClientClose => "client_close",
            CloseReason::IdleTimeout => "idle_timeout",
            CloseReason::HeartbeatTimeout => "heartbeat_timeout",
            CloseReason::ServerDrain => "server_drain",
            CloseReason::ProtocolError => "protocol_error",
            CloseReason::TransportError => "transport_error",
        }
    }

    /// Its place in the closed set of reasons (its wire code less one).
    pub(crate) const fn index(self) -> usize {
        self as usize - 1
    }

    #[cfg(test)]
    pub(crate) fn from_code(code: u8) -> Option<CloseReason> {
        Some(match code {
            1 => CloseReason::ClientClose,
            2 => CloseReason::IdleTimeout,
            3 => CloseReason::HeartbeatTimeout,
            4 => CloseReason::ServerDrain,
            5 => CloseReason::ProtocolError,
            6 => CloseReason::TransportError,
            _ => return None,
        })
    }
}

/// A decoded closing notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClosingNotice {
    pub(crate) reason: CloseReason,
    pub(crate) diagnostic: String,
}

impl ClosingNotice {
    /// The payload, with the diagnostic cut to 512 bytes at a character boundary.
    pub(crate) fn encode(reason: CloseReason, diagnostic: &str) -> Bytes {
        let mut cut = diagnostic.len().min(MAX_DIAGNOSTIC_BYTES);
        while !diagnostic.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut out = BytesMut::with_capacity(4 + cut);
        out.put_u8(CLOSING_VERSION);
        out.put_u8(reason as u8);
        out.put_u16(cut as u16);
        out.put_slice(&diagnostic.as_bytes()[..cut]);
        out.freeze()
    }

    #[cfg(test)]
    pub(crate) fn decode(payload: &[u8]) -> Result<ClosingNotice, String> {
        let [version, reason, len_hi, len_lo, diagnostic @ ..] = payload else {
            return Err("a closing notice is at least 4 bytes".into());
        };
        if *version != CLOSING_VERSION {
            return Err(format!("closing notice version {version} (1 is spoken)"));
        }
        let reason = CloseReason::from_code(*reason)
            .ok_or_else(|| format!("close reason {reason} is undefined (1..=6)"))?;
        let len = usize::from(u16::from_be_bytes([*len_hi, *len_lo]));
        if len > MAX_DIAGNOSTIC_BYTES || len != diagnostic.len() {
            return Err(format!(
                "the diagnostic declares {len} bytes, {} follow (at most {MAX_DIAGNOSTIC_BYTES})",
                diagnostic.len()
            ));
        }
        let diagnostic = String::from_utf8_lossy(diagnostic).into_owned();
        Ok(ClosingNotice { reason, diagnostic })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closing_notice_round_trips_and_cuts_its_diagnostic_at_512_bytes() {
        let long = "é".repeat(400);
        let payload = ClosingNotice::encode(CloseReason::HeartbeatTimeout, &long);
        let notice = ClosingNotice::decode(&payload).expect("decodable");
        assert_eq!(notice.reason, CloseReason::HeartbeatTimeout);
        assert_eq!(notice.diagnostic.len(), 512);
    }

    #[test]
    fn close_reasons_are_numbered_one_to_six() {
        for code in 1..=6 {
            assert_eq!(CloseReason::from_code(code).map(|r| r as u8), Some(code));
        }
        assert_eq!(CloseReason::from_code(0), None);
        assert_eq!(CloseReason::from_code(7), None);
        assert!(ClosingNotice::decode(&[1, 9, 0, 0]).is_err());
        assert!(ClosingNotice::decode(&[1, 1, 0, 5, b'x']).is_err());
    }
}
