//! What one node sent on one route-lane's route (see the `route_cache` module)
//! and has not yet seen arrive: whether a switch to a later owner needs a follow barrier
//! first.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// What this node sent on one lane's route that it has not seen arrive. A later route
/// needs no barrier when everything sent on the old one is known to have arrived: no call
/// on it is under way, and every one-way (or request that ended without its reply) was
/// followed by a request, started after it, whose reply came back on the same ordered
/// route. So a sender of requests only switches at once; one-ways cost one barrier.
#[derive(Debug, Default)]
pub(crate) struct RouteTraffic {
    /// Calls on the route that have not ended.
    in_flight: AtomicUsize,
    /// Bumped by each one-way admitted, and each request that ended without a reply.
    unconfirmed: AtomicU64,
    /// The highest `unconfirmed` value a replied request started at.
    confirmed: AtomicU64,
}

impl RouteTraffic {
    /// One call on the route starts.
    pub(super) fn start(self: &Arc<Self>) -> Sending {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        Sending {
            traffic: Some(self.clone()),
            epoch: self.unconfirmed.load(Ordering::Acquire),
            arrived: false,
        }
    }

    /// Whether everything sent on the route is known to have arrived.
    pub(super) fn settled(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
            && self.confirmed.load(Ordering::Acquire) >= self.unconfirmed.load(Ordering::Acquire)
    }
}

/// One call on a lane's route, until it ends (dropped unended, it counts as unconfirmed).
/// It starts under the cache's lock, as the route is handed out, so a switch never
/// misses a call that is about to send on the old route.
#[derive(Debug)]
pub(crate) struct Sending {
    /// `None`: a call on a route that leads to this node, which is not counted (a switch
    /// away from such a route always sends its barrier, through this node's own move).
    traffic: Option<Arc<RouteTraffic>>,
    epoch: u64,
    arrived: bool,
}

impl Sending {
    /// A call that is not counted.
    pub(super) fn uncounted() -> Self {
        Sending {
            traffic: None,
            epoch: 0,
            arrived: true,
        }
    }

    /// A request's reply came back: it, and everything sent on the route before it
    /// started, arrived.
    pub(crate) fn replied(mut self) {
        if let Some(traffic) = &self.traffic {
            traffic.confirmed.fetch_max(self.epoch, Ordering::AcqRel);
        }
        self.arrived = true;
    }

    /// A send that was refused before it left (nothing of it is on its way).
    pub(crate) fn not_sent(mut self) {
        self.arrived = true;
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        let Some(traffic) = &self.traffic else {
            return;
        };
        if !self.arrived {
            traffic.unconfirmed.fetch_add(1, Ordering::AcqRel);
        }
        traffic.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settled_only_when_nothing_is_under_way_and_every_one_way_was_followed_by_a_reply() {
        let traffic = Arc::new(RouteTraffic::default());
        assert!(traffic.settled(), "nothing sent");
        let request = traffic.start();
        assert!(!traffic.settled(), "a call under way");
        request.replied();
        assert!(traffic.settled());
        drop(traffic.start()); // an admitted one-way
        assert!(!traffic.settled(), "a one-way not yet confirmed");
        traffic.start().not_sent();
        assert!(!traffic.settled(), "a refused send confirms nothing");
        traffic.start().replied();
        assert!(traffic.settled(), "a request started after it was answered");
    }
}
