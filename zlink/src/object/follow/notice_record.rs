//! The follow notice (command 50): the relaying node tells a message's sender that the
//! object moved, and which route it moved from and to.

use serde::{Deserialize, Serialize};

use crate::object::authority::{OwnerFence, OwnerRoute};
use crate::{Error, ErrorKind, Result};

/// Relaying node to the original sender: the object moved (command 50). The sender drops
/// its cached route only if it is exactly `source`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FollowNotice {
    /// `'s'` for a Spot, `'a'` for an Actor, and the ID.
    pub(crate) kind: char,
    pub(crate) id: String,
    /// The route the sender used, and the one the message was relayed to.
    pub(crate) source_fence: OwnerFence,
    pub(crate) source_route: OwnerRoute,
    pub(crate) target_fence: OwnerFence,
    pub(crate) target_route: OwnerRoute,
    /// Relays of the message so far (1..=8).
    pub(crate) hops: u8,
    /// The relay queue when the message joined it: its messages (this one included) and
    /// their bytes.
    pub(crate) queued_messages: u64,
    pub(crate) queued_bytes: u64,
    /// The relayed message's operation identity, as its sender gave it (non-zero).
    pub(crate) operation: u64,
    /// The correlation its reply goes back under (0: a one-way send).
    pub(crate) reply_correlation: u64,
}

/// A malformed record of the object layer: `ProtocolError` naming `what` and why.
pub(crate) fn protocol(what: &str, detail: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::ProtocolError, format!("{what}: {detail}"))
}

/// `ProtocolError` for a record's owner fence with a zero generation.
pub(crate) fn check_fence(what: &str, fence: &OwnerFence) -> Result<()> {
    if fence.object_generation == 0 || fence.owner_generation == 0 || fence.lease_generation == 0 {
        return Err(protocol(what, "a zero generation"));
    }
    Ok(())
}

impl FollowNotice {
    pub(crate) fn encode(&self) -> Result<bytes::Bytes> {
        crate::wire::cbor_encode(self)
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        let notice: FollowNotice =
            crate::wire::cbor_decode(bytes).map_err(|e| protocol("a follow notice", e))?;
        check_fence("a follow notice", &notice.source_fence)?;
        check_fence("a follow notice", &notice.target_fence)?;
        if !(1..=super::MAX_FOLLOW_HOPS).contains(&notice.hops) {
            return Err(protocol("a follow notice", "hops outside 1..=8"));
        }
        if notice.source_fence.object_generation != notice.target_fence.object_generation
            || notice.target_fence.owner_generation <= notice.source_fence.owner_generation
        {
            return Err(protocol(
                "a follow notice",
                "the target is not a later owner of the same incarnation",
            ));
        }
        if !matches!(notice.kind, 's' | 'a') {
            return Err(protocol("a follow notice", "an unknown object kind"));
        }
        if notice.operation == 0 {
            return Err(protocol("a follow notice", "a zero operation"));
        }
        if notice.queued_messages == 0 {
            return Err(protocol(
                "a follow notice",
                "a relay queue without the message it reports",
            ));
        }
        Ok(notice)
    }
}
