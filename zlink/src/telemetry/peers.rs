//! The mesh as one node sees it: its peers, configured, connected and ready.

use metrics::Gauge;

use super::{names, NodeLabels};

/// The peer instruments of one node.
pub(crate) struct PeerMeter {
    configured: Gauge,
    connected: Gauge,
    ready: Gauge,
}

impl PeerMeter {
    pub(crate) fn new(labels: &NodeLabels) -> Self {
        let gauge =
            |state: &'static str| metrics::gauge!(names::PEERS, labels.with(&[("state", state)]));
        PeerMeter {
            configured: gauge("configured"),
            connected: gauge("connected"),
            ready: gauge("ready"),
        }
    }

    /// A meter that records nothing (a table outside a node).
    pub(crate) fn unregistered() -> Self {
        PeerMeter {
            configured: Gauge::noop(),
            connected: Gauge::noop(),
            ready: Gauge::noop(),
        }
    }

    /// How many peers are configured, connected (admitted, ready or not) and ready now.
    pub(crate) fn counted(&self, configured: usize, connected: usize, ready: usize) {
        self.configured.set(configured as f64);
        self.connected.set(connected as f64);
        self.ready.set(ready as f64);
    }
}
