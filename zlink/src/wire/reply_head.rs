//! The fixed binary head of a terminal reply (command 20).
//!
//! ```text
//! offset  size  field
//!  0      5     prefix 5A 4D 03 14 00
//!  5      8     correlation, u64 big-endian (non-zero)
//! 13      8     operation, u64 big-endian: the request's, echoed (a reply whose
//!               operation is not the pending request's completes nothing)
//! 21      1     status: FF = ok, 0..=12 = the ErrorKind number
//! 22      2     detail length, u16 big-endian (0 when ok)
//! 24      ...   detail (UTF-8)
//! 24+n    1     refusal, only when the prefix's flags byte is 01: why the framework
//!               refused (1 = stale route, 2 = connection lost); nothing after
//! ```
//!
//! An ok reply is followed by exactly one payload frame (possibly empty); an error reply by
//! none. The flags byte is 00, or 01 on an error reply that carries a refusal.

use bytes::{BufMut, Bytes, BytesMut};

use super::{Command, PREFIX_LEN};

pub(crate) const REPLY_FIXED_LEN: usize = 24;
/// Status byte of a successful reply.
pub(crate) const STATUS_OK: u8 = 0xFF;
/// Reply flag: a refusal byte follows the detail.
pub(crate) const FLAG_REFUSAL: u8 = 0x01;
/// Longest error detail a reply carries; longer detail is cut at a character boundary.
pub const MAX_DETAIL_BYTES: usize = 4096;

/// A reply's outcome as it travels: the payload, or an error kind number with detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyOutcome {
    /// The handler's encoded reply.
    Ok(Bytes),
    /// An [`ErrorKind`](crate::ErrorKind) number (0..=12) and its detail.
    Failed {
        /// The error kind number.
        kind: u8,
        /// What happened.
        detail: String,
        /// A [`Refusal`](crate::Refusal) number, when the framework refused the call.
        refusal: Option<u8>,
    },
}

fn cut(detail: &str) -> &str {
    if detail.len() <= MAX_DETAIL_BYTES {
        return detail;
    }
    let mut end = MAX_DETAIL_BYTES;
    while !detail.is_char_boundary(end) {
        end -= 1;
    }
    &detail[..end]
}

/// Writes a reply head.
pub(crate) fn encode_reply_head(
    (correlation, operation): (u64, u64),
    status: u8,
    detail: &str,
    refusal: Option<u8>,
) -> Bytes {
    let detail = cut(detail);
    let flags = if refusal.is_some() { FLAG_REFUSAL } else { 0 };
    let mut head = BytesMut::with_capacity(REPLY_FIXED_LEN + detail.len() + 1);
    head.put_slice(&super::prefix(Command::Reply, flags));
    head.put_u64(correlation);
    head.put_u64(operation);
    head.put_u8(status);
    head.put_u16(detail.len() as u16);
    head.put_slice(detail.as_bytes());
    if let Some(refusal) = refusal {
        head.put_u8(refusal);
    }
    head.freeze()
}

/// A decoded reply head.
pub(crate) struct ReplyHead {
    pub(crate) correlation: u64,
    pub(crate) operation: u64,
    pub(crate) status: u8,
    pub(crate) detail: String,
    pub(crate) refusal: Option<u8>,
}

/// Reads a reply head with prefix flags `flags`: the correlation, the echoed operation, the
/// status byte, the detail and the refusal.
pub(crate) fn decode_reply_head(
    head: &[u8],
    flags: u8,
) -> Result<ReplyHead, (String, Option<u64>)> {
    if head.len() < REPLY_FIXED_LEN {
        return Err((
            format!(
                "reply head of {} bytes is shorter than {REPLY_FIXED_LEN}",
                head.len()
            ),
            None,
        ));
    }
    let mut c = [0u8; 8];
    c.copy_from_slice(&head[PREFIX_LEN..PREFIX_LEN + 8]);
    let correlation = u64::from_be_bytes(c);
    let reported = (correlation != 0).then_some(correlation);
    let fail = |reason: &str| (reason.to_string(), reported);
    if correlation == 0 {
        return Err(fail("correlation must be non-zero"));
    }
    let mut o = [0u8; 8];
    o.copy_from_slice(&head[13..21]);
    let operation = u64::from_be_bytes(o);
    let status = head[21];
    let detail_len = usize::from(u16::from_be_bytes([head[22], head[23]]));
    if flags & !FLAG_REFUSAL != 0 {
        return Err(fail(&format!("undefined flags {flags:#04x} on Reply")));
    }
    let refused = flags & FLAG_REFUSAL != 0;
    let detail_end = REPLY_FIXED_LEN + detail_len;
    if head.len() != detail_end + usize::from(refused) {
        return Err(fail("reply head length does not match its detail length"));
    }
    if status != STATUS_OK && status > 12 {
        return Err(fail("unknown error kind"));
    }
    if status == STATUS_OK && (detail_len != 0 || refused) {
        return Err(fail("detail or refusal on an ok reply"));
    }
    let refusal = match refused.then(|| head[detail_end]) {
        Some(code) if crate::Refusal::from_code(code).is_none() => {
            return Err(fail(&format!("unknown refusal {code}")))
        }
        refusal => refusal,
    };
    let detail = std::str::from_utf8(&head[REPLY_FIXED_LEN..detail_end])
        .map_err(|_| fail("reply detail is not UTF-8"))?
        .to_string();
    Ok(ReplyHead {
        correlation,
        operation,
        status,
        detail,
        refusal,
    })
}
