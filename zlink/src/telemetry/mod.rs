//! A node's metrics, through the [`metrics`] facade: the application installs the recorder
//! it wants (Prometheus, StatsD, its own), before it starts its nodes; with none installed
//! every instrument is a no-op.
//!
//! Every name is `zlink_<surface>_<name>`, with its unit in the name, and is listed in
//! [`names`]. Every instrument carries the labels `mesh` and `rid` of the node that records
//! it (several nodes may share a process), plus closed labels of its own (`surface`,
//! `kind`, `outcome`, `reason`): an object ID, a packet name or a session never becomes a
//! label, so the number of series stays bounded.
//!
//! [`describe`] gives each instrument its unit and help text in the installed recorder;
//! [`DURATION_BUCKETS_SECONDS`] are the histogram bounds the examples and the dashboard give
//! their Prometheus exporter, so histograms of different nodes aggregate.

mod calls;
mod events;
mod labels;
mod links;
pub mod names;
mod objects;
mod peers;
mod sessions;
mod store;
mod turns;

pub(crate) use calls::{CallMeter, CallTimer};
pub(crate) use events::EventHub;
pub use events::{
    Happened, HostState, NodeEvent, Observed, Observer, OBSERVER_QUEUE, RETAINED_EVENTS,
};
pub use labels::{CallKind, Outcome, Surface};
pub(crate) use links::{Dropped, LinkMeter};
pub use objects::ObjectClass;
pub(crate) use objects::{
    CreationOutcome, FollowCounters, MoveOutcome, ObjectMeter, RouteCacheCounters, LOST_REASONS,
};
pub(crate) use peers::PeerMeter;
pub(crate) use sessions::SessionMeter;
pub(crate) use store::{lease_lateness, StoreMeter, StoreOp};
pub(crate) use turns::TurnMeter;
pub use turns::LONG_TURN;

use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};

/// Upper bounds, in seconds, of the buckets of every `*_seconds` histogram: 50 µs to 30 s.
pub const DURATION_BUCKETS_SECONDS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Upper bounds of the mailbox depth histogram
/// ([`names::MAILBOX_DEPTH`]): give them to that metric alone (Prometheus:
/// `set_buckets_for_metric`).
pub const DEPTH_BUCKETS: &[f64] = &[
    0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 4096.0,
];

/// What kind of instrument a name is.
#[derive(Clone, Copy)]
enum Instrument {
    Gauge,
    Counter,
    Histogram,
}

/// Every zlink instrument: its kind, name, unit and help text.
const DESCRIPTIONS: &[(Instrument, &str, Unit, &str)] = &[
    (Instrument::Gauge, names::CALLS_IN_FLIGHT, Unit::Count, "Calls this node's application has started and not yet seen end, by surface."),
    (Instrument::Counter, names::CALLS, Unit::Count, "Calls this node's application made, by surface, kind and outcome (cancelled: the caller dropped the call)."),
    (Instrument::Histogram, names::CALL_DURATION, Unit::Seconds, "How long a request took from the caller's side, by surface and outcome."),
    (Instrument::Gauge, names::PEERS, Unit::Count, "This node's peers: configured, connected (admitted) and ready."),
    (Instrument::Gauge, names::OBJECTS_OWNED, Unit::Count, "Spots and Actors this node owns, by kind (its Entry Spot aside)."),
    (Instrument::Counter, names::CREATIONS, Unit::Count, "Creations this node attempted, by kind and outcome."),
    (Instrument::Counter, names::RELOCATIONS, Unit::Count, "Moves this node started as the source, by kind and outcome."),
    (Instrument::Histogram, names::RELOCATION_DURATION, Unit::Seconds, "How long a move took from its start to its outcome, by kind and outcome."),
    (Instrument::Counter, names::STORE_OPERATIONS, Unit::Count, "This node's Location Store calls, by operation and outcome (failed: an error, or given up on)."),
    (Instrument::Histogram, names::STORE_OPERATION_DURATION, Unit::Seconds, "How long a Location Store call took, by operation."),
    (Instrument::Histogram, names::LEASE_RENEWAL_LATENESS, Unit::Seconds, "How late the owner lease's keeper woke for a renewal, after the interval it slept."),
    (Instrument::Counter, names::FOLLOW_RELAYED, Unit::Count, "Messages this node relayed by Message Follow to Spots and Actors that moved away."),
    (Instrument::Gauge, names::SESSIONS_OPEN, Unit::Count, "STREAM sessions open on this node's listeners."),
    (Instrument::Counter, names::SESSIONS_CLOSED, Unit::Count, "STREAM sessions that ended, by reason."),
    (Instrument::Counter, names::SESSION_BYTES, Unit::Bytes, "Bytes of STREAM sessions' packets, by direction (received, sent)."),
    (Instrument::Counter, names::RELOCATION_BYTES, Unit::Bytes, "Bytes moves carried (state and queued messages), by kind, counted on the node they left."),
    (Instrument::Histogram, names::RELOCATION_PAUSE, Unit::Seconds, "The pause a move's callers saw: from the seal until the target took over, by kind."),
    (Instrument::Counter, names::RECLAIMS, Unit::Count, "Objects this node's reclaims released or left in place (refused), by outcome."),
    (Instrument::Counter, names::DROPPED_MESSAGES, Unit::Count, "RouteMesh messages this node dropped on arrival, by reason (oversize, malformed, no_handler); a request among them is answered with the error."),
    (Instrument::Counter, names::LINK_BYTES, Unit::Bytes, "Bytes of RouteMesh messages, by direction (received, sent)."),
    (Instrument::Counter, names::LINK_ADMISSIONS, Unit::Count, "Peers admitted on RouteMesh connections, by security (null, curve): each a completed handshake."),
    (Instrument::Counter, names::LINK_REFUSALS, Unit::Count, "RouteMesh admissions this node refused, by reason."),
    (Instrument::Counter, names::SELECTION_FAILURES, Unit::Count, "Channel calls that found no server to select, by reason (no_member: no ready peer serves the channel; draining: all at weight 0 or tried)."),
    (Instrument::Counter, names::FOLLOW_NOTICES, Unit::Count, "Follow notices this node sent to senders that used a moved object's old route."),
    (Instrument::Counter, names::FOLLOW_BARRIERS, Unit::Count, "Barriers this node sent ahead of follow notices."),
    (Instrument::Counter, names::ROUTE_CACHE_LOOKUPS, Unit::Count, "Route cache lookups of this node's callers, by outcome (hit, miss: an authority read follows)."),
    (Instrument::Histogram, names::MAILBOX_WAIT, Unit::Seconds, "How long a message waited in its Spot's or Actor's mailbox before its turn, by kind."),
    (Instrument::Histogram, names::MAILBOX_DEPTH, Unit::Count, "Jobs waiting in a Spot's or Actor's mailbox when one of its queued turns started, by kind."),
    (Instrument::Counter, names::LONG_TURNS, Unit::Count, "Turns that ran for 1 s or more, by kind (each is also logged at warn)."),
    (Instrument::Histogram, names::ACTIVATION_DURATION, Unit::Seconds, "How long creating (activating) a Spot or Actor took on the node that made it, by kind."),
    (Instrument::Counter, names::LOST_ONE_WAYS, Unit::Count, "One-way messages this node accepted and could not deliver, by reason (each is also logged at warn)."),
];

/// Gives every zlink instrument its unit and help text in the recorder installed now
/// (a node does this when it starts; calling it again does no harm).
pub fn describe() {
    for &(instrument, name, unit, help) in DESCRIPTIONS {
        match instrument {
            Instrument::Gauge => describe_gauge!(name, unit, help),
            Instrument::Counter => describe_counter!(name, unit, help),
            Instrument::Histogram => describe_histogram!(name, unit, help),
        }
    }
}

/// Whether a recorder is installed. The facade's stand-in for none is its zero-sized no-op
/// recorder; a recorder that keeps figures has a size.
fn recording() -> bool {
    metrics::with_recorder(|recorder| std::mem::size_of_val(recorder) != 0)
}

/// The labels every instrument of one node carries.
#[derive(Debug, Clone)]
pub(crate) struct NodeLabels {
    mesh: metrics::SharedString,
    rid: metrics::SharedString,
}

impl NodeLabels {
    /// The labels of the node `rid` of `mesh`.
    pub(crate) fn new(mesh: &str, rid: &str) -> Self {
        NodeLabels {
            mesh: mesh.to_string().into(),
            rid: rid.to_string().into(),
        }
    }

    /// These labels followed by `more`.
    pub(crate) fn with(&self, more: &[(&'static str, &'static str)]) -> Vec<metrics::Label> {
        let mut labels = Vec::with_capacity(2 + more.len());
        labels.push(metrics::Label::new("mesh", self.mesh.clone()));
        labels.push(metrics::Label::new("rid", self.rid.clone()));
        labels.extend(more.iter().map(|(k, v)| metrics::Label::new(*k, *v)));
        labels
    }
}

/// Every instrument of one node.
pub(crate) struct Instruments {
    /// The application's outgoing calls; `None` when no recorder was installed when the
    /// node started (then a call reads no clock and touches no instrument).
    pub(crate) calls: Option<CallMeter>,
    /// The Spots and Actors it owns, creates and moves.
    pub(crate) objects: std::sync::Arc<ObjectMeter>,
    /// Its peers.
    pub(crate) peers: std::sync::Arc<PeerMeter>,
    /// Its STREAM sessions.
    pub(crate) sessions: std::sync::Arc<SessionMeter>,
    /// Its status stream.
    pub(crate) events: std::sync::Arc<EventHub>,
    /// Its RouteMesh connections.
    pub(crate) links: std::sync::Arc<LinkMeter>,
    /// What its objects' turns cost; `None` without a recorder.
    pub(crate) turns: Option<std::sync::Arc<TurnMeter>>,
}

impl Instruments {
    /// The instruments of the node `rid` of `mesh`, registered in the recorder installed now.
    pub(crate) fn new(mesh: &str, rid: &str) -> Self {
        describe();
        let labels = NodeLabels::new(mesh, rid);
        Instruments {
            calls: recording().then(|| CallMeter::new(&labels)),
            objects: std::sync::Arc::new(ObjectMeter::new(&labels)),
            peers: std::sync::Arc::new(PeerMeter::new(&labels)),
            sessions: std::sync::Arc::new(SessionMeter::new(&labels)),
            events: std::sync::Arc::default(),
            links: std::sync::Arc::new(LinkMeter::new(&labels)),
            turns: recording().then(|| std::sync::Arc::new(TurnMeter::new(&labels))),
        }
    }
}

#[cfg(test)]
mod tests {
    use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString};

    /// A recorder that keeps something (so it has a size), as every real one does.
    struct Keeping(std::sync::atomic::AtomicU64);

    impl Recorder for Keeping {
        fn describe_counter(&self, _: KeyName, _: Option<metrics::Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<metrics::Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<metrics::Unit>, _: SharedString) {}
        fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Counter::noop()
        }
        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }
        fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::noop()
        }
    }

    #[test]
    fn calls_are_timed_only_when_a_recorder_is_installed() {
        // This test process installs no global recorder.
        assert!(!super::recording());
        assert!(super::Instruments::new("m", "r").calls.is_none());
        let keeping = Keeping(std::sync::atomic::AtomicU64::new(0));
        metrics::with_local_recorder(&keeping, || {
            assert!(super::recording());
            assert!(super::Instruments::new("m", "r").calls.is_some());
        });
    }
}
