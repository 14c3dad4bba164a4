//! One-way messages this node accepted (from a local caller, a peer, or a relay) and then
//! could not deliver. A one-way has no reply, so its sender never hears of the loss: each
//! one is counted by reason, shown in `status()`, and logged once, with its object.
//!
//! The seed allows a few of these (a follow chain past 8 hops, an expired follow route, a
//! full queue or hold, an object that closed); none is ever silent.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::Serialize;

use crate::address::ObjectKey;
use crate::telemetry::ObjectMeter;
use crate::Error;

/// Why an accepted one-way was not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LostReason {
    /// It had been relayed by Message Follow 8 times already.
    FollowHops,
    /// It arrived on a route this node no longer owns (the follow route expired, or the
    /// object closed, or it never was here).
    NotOwner,
    /// The object's queue, or its hold during a move, was full.
    Full,
    /// The new owner could not be reached to relay it.
    TargetUnreachable,
    /// It was sent to an earlier incarnation than the one that moved.
    OtherIncarnation,
    /// The object's type has no handler for it.
    NoHandler,
    /// The object closed, or the node stopped, before it ran.
    Stopped,
    /// It was to activate an Instance Spot, and that activation failed (its node died,
    /// or every node serving the type refused).
    ActivationFailed,
}

const REASONS: usize = crate::telemetry::LOST_REASONS;

impl LostReason {
    fn index(self) -> usize {
        self as usize
    }

    /// Its `reason` label (`zlink_object_lost_one_ways_total`).
    const fn label(self) -> &'static str {
        match self {
            LostReason::FollowHops => "follow_hops",
            LostReason::NotOwner => "not_owner",
            LostReason::Full => "full",
            LostReason::TargetUnreachable => "target_unreachable",
            LostReason::OtherIncarnation => "other_incarnation",
            LostReason::NoHandler => "no_handler",
            LostReason::Stopped => "stopped",
            LostReason::ActivationFailed => "activation_failed",
        }
    }
}

/// The one-ways this node lost since it started, by reason (see `RuntimeStatus`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LostOneWays {
    /// Relayed 8 times already (the seed's Message Follow hop limit).
    pub follow_hops: u64,
    /// Arrived on a route this node no longer owns (the follow route expired, or the
    /// object closed).
    pub not_owner: u64,
    /// The object's queue, or its hold during a move, was full.
    pub full: u64,
    /// The new owner could not be reached to relay it.
    pub target_unreachable: u64,
    /// Sent to an earlier incarnation than the one that moved.
    pub other_incarnation: u64,
    /// The object's type has no handler for it.
    pub no_handler: u64,
    /// The object closed, or the node stopped, before it ran.
    pub stopped: u64,
    /// It was to activate an Instance Spot, and the activation failed after the one-way
    /// completed (the node activating it died, or no node could).
    pub activation_failed: u64,
}

impl LostOneWays {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.follow_hops
            + self.not_owner
            + self.full
            + self.target_unreachable
            + self.other_incarnation
            + self.no_handler
            + self.stopped
            + self.activation_failed
    }
}

/// The counters of one node.
pub(crate) struct LostSends {
    counts: [AtomicU64; REASONS],
    meter: Arc<ObjectMeter>,
}

impl Default for LostSends {
    fn default() -> Self {
        LostSends::metered(Arc::new(ObjectMeter::unregistered()))
    }
}

impl LostSends {
    /// Counters that also count into `meter`'s instrument.
    pub(crate) fn metered(meter: Arc<ObjectMeter>) -> Self {
        LostSends {
            counts: Default::default(),
            meter,
        }
    }

    /// Counts one lost one-way `packet` for `key`, and logs it.
    pub(crate) fn record(&self, key: &ObjectKey, packet: &str, reason: LostReason, error: &Error) {
        self.counts[reason.index()].fetch_add(1, Ordering::Relaxed);
        self.meter.lost_one_way(reason.index(), reason.label());
        tracing::warn!(object = %key, packet, reason = ?reason, error = %error, "an accepted one-way message was lost");
    }

    /// What was counted so far.
    pub(crate) fn snapshot(&self) -> LostOneWays {
        let n = |reason: LostReason| self.counts[reason.index()].load(Ordering::Relaxed);
        LostOneWays {
            follow_hops: n(LostReason::FollowHops),
            not_owner: n(LostReason::NotOwner),
            full: n(LostReason::Full),
            target_unreachable: n(LostReason::TargetUnreachable),
            other_incarnation: n(LostReason::OtherIncarnation),
            no_handler: n(LostReason::NoHandler),
            stopped: n(LostReason::Stopped),
            activation_failed: n(LostReason::ActivationFailed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::ActorId;
    use crate::ErrorKind;

    #[test]
    fn each_loss_is_counted_under_its_reason() {
        let lost = LostSends::default();
        let key = ObjectKey::from(&ActorId::new("a").unwrap());
        let e = Error::new(ErrorKind::Unavailable, "x");
        lost.record(&key, "P", LostReason::FollowHops, &e);
        lost.record(&key, "P", LostReason::FollowHops, &e);
        lost.record(&key, "P", LostReason::Stopped, &e);
        let seen = lost.snapshot();
        assert_eq!((seen.follow_hops, seen.stopped, seen.total()), (2, 1, 3));
    }
}
