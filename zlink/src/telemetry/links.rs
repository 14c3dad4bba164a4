//! What crosses a node's RouteMesh connections: bytes in and out, admissions refused by
//! reason, and connections admitted by security (NULL or CURVE).

use std::sync::OnceLock;

use metrics::Counter;

use super::{names, NodeLabels};

/// Admission refusal reasons there are (the wire's `RejectReason`s).
const REFUSAL_REASONS: usize = 12;

/// One node's link instruments.
pub(crate) struct LinkMeter {
    labels: NodeLabels,
    received: Counter,
    sent: Counter,
    admitted: [Counter; 2],
    refused: [OnceLock<Counter>; REFUSAL_REASONS],
    dropped: [Counter; 3],
}

/// Why an inbound RouteMesh message was dropped (a request is answered with the error).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Dropped {
    /// Over the node's message size cap.
    Oversize = 0,
    /// It did not decode (a protocol error).
    Malformed = 1,
    /// No handler serves its packet.
    NoHandler = 2,
}

impl LinkMeter {
    /// The instruments of the node labelled `labels`.
    pub(crate) fn new(labels: &NodeLabels) -> Self {
        let bytes = |direction: &'static str| {
            metrics::counter!(names::LINK_BYTES, labels.with(&[("direction", direction)]))
        };
        let admitted = |security: &'static str| {
            metrics::counter!(
                names::LINK_ADMISSIONS,
                labels.with(&[("security", security)])
            )
        };
        let dropped = |reason: &'static str| {
            metrics::counter!(names::DROPPED_MESSAGES, labels.with(&[("reason", reason)]))
        };
        LinkMeter {
            dropped: [
                dropped("oversize"),
                dropped("malformed"),
                dropped("no_handler"),
            ],
            received: bytes("received"),
            sent: bytes("sent"),
            admitted: [admitted("null"), admitted("curve")],
            refused: Default::default(),
            labels: labels.clone(),
        }
    }

    /// `bytes` of one message arrived.
    pub(crate) fn received(&self, bytes: usize) {
        self.received.increment(bytes as u64);
    }

    /// `bytes` of one message were queued to a peer.
    pub(crate) fn sent(&self, bytes: usize) {
        self.sent.increment(bytes as u64);
    }

    /// An inbound message was dropped for `reason`.
    pub(crate) fn dropped(&self, reason: Dropped) {
        self.dropped[reason as usize].increment(1);
    }

    /// A peer was admitted, over CURVE or not.
    pub(crate) fn admitted(&self, curve: bool) {
        self.admitted[usize::from(curve)].increment(1);
    }

    /// An admission was refused: reason number `code` (the wire's), labelled `reason`.
    pub(crate) fn refused(&self, code: usize, reason: &'static str) {
        if let Some(counter) = self.refused.get(code) {
            counter
                .get_or_init(|| {
                    metrics::counter!(
                        names::LINK_REFUSALS,
                        self.labels.with(&[("reason", reason)])
                    )
                })
                .increment(1);
        }
    }
}
