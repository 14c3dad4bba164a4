//! STREAM sessions: how many a node holds open, and why the closed ones closed.

use std::sync::OnceLock;

use metrics::{Counter, Gauge};

use super::{names, NodeLabels};

/// How many reasons a session can close for (the session layer's closed set).
const CLOSE_REASONS: usize = 6;

/// The session instruments of one node.
pub(crate) struct SessionMeter {
    labels: NodeLabels,
    open: Gauge,
    closed: [OnceLock<Counter>; CLOSE_REASONS],
    received: Counter,
    sent: Counter,
}

impl SessionMeter {
    pub(crate) fn new(labels: &NodeLabels) -> Self {
        SessionMeter {
            open: metrics::gauge!(names::SESSIONS_OPEN, labels.with(&[])),
            closed: Default::default(),
            received: metrics::counter!(
                names::SESSION_BYTES,
                labels.with(&[("direction", "received")])
            ),
            sent: metrics::counter!(names::SESSION_BYTES, labels.with(&[("direction", "sent")])),
            labels: labels.clone(),
        }
    }

    /// A session opened.
    pub(crate) fn opened(&self) {
        self.open.increment(1.0);
    }

    /// A session ended, for the `index`-th reason of the session layer's closed set,
    /// named `reason`.
    pub(crate) fn closed(&self, index: usize, reason: &'static str) {
        self.open.decrement(1.0);
        if let Some(counter) = self.closed.get(index) {
            counter
                .get_or_init(|| {
                    metrics::counter!(
                        names::SESSIONS_CLOSED,
                        self.labels.with(&[("reason", reason)])
                    )
                })
                .increment(1);
        }
    }

    /// A packet of `bytes` arrived from a client.
    pub(crate) fn received(&self, bytes: usize) {
        self.received.increment(bytes as u64);
    }

    /// `bytes` were written to a client.
    pub(crate) fn sent(&self, bytes: usize) {
        self.sent.increment(bytes as u64);
    }
}
