//! The mesh as one node sees it: its peers, configured, connected and ready.

use metrics::{Counter, Gauge};

use super::{names, NodeLabels};

/// The peer instruments of one node.
pub(crate) struct PeerMeter {
    configured: Gauge,
    connected: Gauge,
    ready: Gauge,
    /// Selections that found no server: no member at all, or none with weight > 0.
    no_member: Counter,
    draining: Counter,
}

impl PeerMeter {
    pub(crate) fn new(labels: &NodeLabels) -> Self {
        let gauge =
            |state: &'static str| metrics::gauge!(names::PEERS, labels.with(&[("state", state)]));
        let failed = |reason: &'static str| {
            metrics::counter!(
                names::SELECTION_FAILURES,
                labels.with(&[("reason", reason)])
            )
        };
        PeerMeter {
            configured: gauge("configured"),
            connected: gauge("connected"),
            ready: gauge("ready"),
            no_member: failed("no_member"),
            draining: failed("draining"),
        }
    }

    /// A meter that records nothing (a table outside a node).
    pub(crate) fn unregistered() -> Self {
        PeerMeter {
            configured: Gauge::noop(),
            connected: Gauge::noop(),
            ready: Gauge::noop(),
            no_member: Counter::noop(),
            draining: Counter::noop(),
        }
    }

    /// How many peers are configured, connected (admitted, ready or not) and ready now.
    pub(crate) fn counted(&self, configured: usize, connected: usize, ready: usize) {
        self.configured.set(configured as f64);
        self.connected.set(connected as f64);
        self.ready.set(ready as f64);
    }

    /// A selection found no server: `no_member` when no ready peer serves the channel.
    pub(crate) fn selection_failed(&self, no_member: bool) {
        match no_member {
            true => self.no_member.increment(1),
            false => self.draining.increment(1),
        }
    }
}
