//! Probe/ack liveness for one connection.

use std::time::Duration;
use tokio::time::Instant;

/// Liveness timing. The defaults (probe every 5 s, 15 s deadline) are fixed for
/// applications; only tests may shorten them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LivenessTimings {
    /// How often a probe is sent (or re-sent).
    pub probe_interval: Duration,
    /// How long a connection may go without a matching ack.
    pub deadline: Duration,
}

impl Default for LivenessTimings {
    fn default() -> Self {
        LivenessTimings {
            probe_interval: Duration::from_secs(5),
            deadline: Duration::from_secs(15),
        }
    }
}

/// What the periodic check decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeAction {
    /// Send a probe with this id (new, or the outstanding one again).
    Send(u64),
    /// The deadline passed: the connection is dead.
    Expired,
}

/// Liveness state of one admitted connection: at most one outstanding probe id; only the
/// ack of that id resets the deadline.
#[derive(Debug)]
pub struct Liveness {
    outstanding: Option<u64>,
    next_id: u64,
    deadline: Instant,
    timings: LivenessTimings,
}

impl Liveness {
    /// Starts the deadline now (at admission).
    pub fn new(timings: LivenessTimings, now: Instant) -> Self {
        Liveness {
            outstanding: None,
            next_id: 1,
            deadline: now + timings.deadline,
            timings,
        }
    }

    /// Periodic check at `now`.
    pub fn tick(&mut self, now: Instant) -> ProbeAction {
        if now >= self.deadline {
            return ProbeAction::Expired;
        }
        let id = *self.outstanding.get_or_insert_with(|| {
            let id = self.next_id;
            self.next_id += 1;
            id
        });
        ProbeAction::Send(id)
    }

    /// An ack arrived. Returns whether it matched the outstanding probe (and so reset the
    /// deadline).
    pub fn ack(&mut self, id: u64, now: Instant) -> bool {
        if self.outstanding == Some(id) {
            self.outstanding = None;
            self.deadline = now + self.timings.deadline;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timings() -> LivenessTimings {
        LivenessTimings {
            probe_interval: Duration::from_secs(5),
            deadline: Duration::from_secs(15),
        }
    }

    #[test]
    fn liveness_resends_the_same_outstanding_probe_id() {
        let t0 = Instant::now();
        let mut l = Liveness::new(timings(), t0);
        assert_eq!(l.tick(t0), ProbeAction::Send(1));
        assert_eq!(l.tick(t0 + Duration::from_secs(5)), ProbeAction::Send(1));
    }

    #[test]
    fn liveness_only_matching_ack_resets_deadline() {
        let t0 = Instant::now();
        let mut l = Liveness::new(timings(), t0);
        assert_eq!(l.tick(t0), ProbeAction::Send(1));
        assert!(!l.ack(7, t0 + Duration::from_secs(10)));
        assert_eq!(l.tick(t0 + Duration::from_secs(15)), ProbeAction::Expired);
        let mut l = Liveness::new(timings(), t0);
        l.tick(t0);
        assert!(l.ack(1, t0 + Duration::from_secs(10)));
        assert!(
            !l.ack(1, t0 + Duration::from_secs(11)),
            "duplicate ack has no effect"
        );
        assert_eq!(l.tick(t0 + Duration::from_secs(20)), ProbeAction::Send(2));
        assert_eq!(l.tick(t0 + Duration::from_secs(25)), ProbeAction::Expired);
    }
}
