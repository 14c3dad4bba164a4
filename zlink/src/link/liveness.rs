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
    deadline: Instant,
    timings: LivenessTimings,
}

impl Liveness {
    /// Starts the deadline now (at admission).
    pub fn new(timings: LivenessTimings, now: Instant) -> Self {
        Liveness {
            outstanding: None,
            deadline: now + timings.deadline,
            timings,
        }
    }

    /// Periodic check at `now`.
    pub fn tick(&mut self, now: Instant) -> ProbeAction {
        if now >= self.deadline {
            return ProbeAction::Expired;
        }
        // Random, so a peer cannot ack a probe before it was sent.
        let id = *self
            .outstanding
            .get_or_insert_with(|| rand::random::<u64>().max(1));
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

    fn sent(action: ProbeAction) -> u64 {
        match action {
            ProbeAction::Send(id) => id,
            ProbeAction::Expired => panic!("expired too early"),
        }
    }

    #[test]
    fn liveness_resends_the_same_outstanding_probe_id() {
        let t0 = Instant::now();
        let mut l = Liveness::new(timings(), t0);
        let id = sent(l.tick(t0));
        assert_eq!(l.tick(t0 + Duration::from_secs(5)), ProbeAction::Send(id));
    }

    #[test]
    fn probe_ids_are_random() {
        let t0 = Instant::now();
        let ids: std::collections::HashSet<u64> = (0..64)
            .map(|_| sent(Liveness::new(timings(), t0).tick(t0)))
            .collect();
        assert!(ids.len() > 60, "probe ids repeat: {ids:?}");
        assert!(!ids.contains(&0));
    }

    #[test]
    fn liveness_only_matching_ack_resets_deadline() {
        let t0 = Instant::now();
        let mut l = Liveness::new(timings(), t0);
        let id = sent(l.tick(t0));
        assert!(!l.ack(id.wrapping_add(1), t0 + Duration::from_secs(10)));
        assert_eq!(l.tick(t0 + Duration::from_secs(15)), ProbeAction::Expired);
        let mut l = Liveness::new(timings(), t0);
        let first = sent(l.tick(t0));
        assert!(l.ack(first, t0 + Duration::from_secs(10)));
        assert!(
            !l.ack(first, t0 + Duration::from_secs(11)),
            "duplicate ack has no effect"
        );
        assert_ne!(sent(l.tick(t0 + Duration::from_secs(20))), first);
        assert_eq!(l.tick(t0 + Duration::from_secs(25)), ProbeAction::Expired);
    }
}
