//! Spots and Actors: how many a node owns, the creations it made and the moves it started.

use std::sync::OnceLock;
use std::time::Instant;

use metrics::{Counter, Gauge, Histogram};

use super::{names, NodeLabels};

/// A Spot or an Actor, as the `kind` label and the status stream's events name it (the
/// node's Entry Spot is never counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectClass {
    /// A Spot.
    Spot,
    /// An Actor.
    Actor,
}

impl ObjectClass {
    pub(crate) const ALL: [ObjectClass; 2] = [ObjectClass::Spot, ObjectClass::Actor];

    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            ObjectClass::Spot => "spot",
            ObjectClass::Actor => "actor",
        }
    }
}

/// How a creation this node attempted ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CreationOutcome {
    /// Committed: the object runs here.
    Created,
    /// Its `on_create` declined it.
    Rejected,
    /// Another attempt held the ID, or it failed.
    NotCreated,
}

impl CreationOutcome {
    const fn as_str(self) -> &'static str {
        match self {
            CreationOutcome::Created => "created",
            CreationOutcome::Rejected => "rejected",
            CreationOutcome::NotCreated => "not_created",
        }
    }
}

/// How a move this node started ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MoveOutcome {
    /// The target committed: the object runs there.
    Moved,
    /// Given up before relay-ready: it runs on here.
    Cancelled,
    /// Handed over, but the target did not commit: it is unavailable.
    Lost,
}

impl MoveOutcome {
    /// Its label value.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            MoveOutcome::Moved => "moved",
            MoveOutcome::Cancelled => "cancelled",
            MoveOutcome::Lost => "lost",
        }
    }
}

/// How many reasons a one-way can be lost for (the object layer's closed set).
pub(crate) const LOST_REASONS: usize = 8;

/// The object instruments of one node.
pub(crate) struct ObjectMeter {
    labels: NodeLabels,
    owned: [Gauge; 2],
    creations: [[OnceLock<Counter>; 3]; 2],
    moves: [[OnceLock<Counter>; 3]; 2],
    move_durations: [[OnceLock<Histogram>; 3]; 2],
    lost: [OnceLock<Counter>; LOST_REASONS],
}

impl ObjectMeter {
    pub(crate) fn new(labels: &NodeLabels) -> Self {
        ObjectMeter {
            owned: ObjectClass::ALL.map(|kind| {
                metrics::gauge!(
                    names::OBJECTS_OWNED,
                    labels.with(&[("kind", kind.as_str())])
                )
            }),
            creations: Default::default(),
            moves: Default::default(),
            move_durations: Default::default(),
            lost: Default::default(),
            labels: labels.clone(),
        }
    }

    /// A meter that records nothing (a registry outside a node).
    pub(crate) fn unregistered() -> Self {
        ObjectMeter {
            owned: [Gauge::noop(), Gauge::noop()],
            creations: Default::default(),
            moves: Default::default(),
            move_durations: Default::default(),
            lost: Default::default(),
            labels: NodeLabels::new("", ""),
        }
    }

    /// This node owns `by` more (or, negative, fewer) objects of `kind`.
    pub(crate) fn owned(&self, kind: ObjectClass, by: i32) {
        self.owned[kind as usize].increment(f64::from(by));
    }

    /// A creation of an object of `kind` ended with `outcome`.
    pub(crate) fn created(&self, kind: ObjectClass, outcome: CreationOutcome) {
        self.creations[kind as usize][outcome as usize]
            .get_or_init(|| {
                metrics::counter!(
                    names::CREATIONS,
                    self.labels
                        .with(&[("kind", kind.as_str()), ("outcome", outcome.as_str())])
                )
            })
            .increment(1);
    }

    /// A move of an object of `kind`, started at `started`, ended with `outcome`.
    pub(crate) fn moved(&self, kind: ObjectClass, outcome: MoveOutcome, started: Instant) {
        let labels = || {
            self.labels
                .with(&[("kind", kind.as_str()), ("outcome", outcome.as_str())])
        };
        let (k, o) = (kind as usize, outcome as usize);
        self.moves[k][o]
            .get_or_init(|| metrics::counter!(names::RELOCATIONS, labels()))
            .increment(1);
        self.move_durations[k][o]
            .get_or_init(|| metrics::histogram!(names::RELOCATION_DURATION, labels()))
            .record(started.elapsed().as_secs_f64());
    }

    /// An accepted one-way was lost, for the `index`-th reason of the object layer's
    /// closed set, named `reason`.
    pub(crate) fn lost_one_way(&self, index: usize, reason: &'static str) {
        if let Some(counter) = self.lost.get(index) {
            counter
                .get_or_init(|| {
                    metrics::counter!(
                        names::LOST_ONE_WAYS,
                        self.labels.with(&[("reason", reason)])
                    )
                })
                .increment(1);
        }
    }

    /// The counter of messages this node relays by Message Follow.
    /// A move of a `kind` object carried `bytes` and paused its callers since `sealed_at`.
    pub(crate) fn carried(&self, kind: ObjectClass, bytes: usize, sealed_at: Instant) {
        let labels = || self.labels.with(&[("kind", kind.as_str())]);
        metrics::counter!(names::RELOCATION_BYTES, labels()).increment(bytes as u64);
        metrics::histogram!(names::RELOCATION_PAUSE, labels())
            .record(sealed_at.elapsed().as_secs_f64());
    }

    /// A reclaim released `released` objects and left `refused` in place.
    pub(crate) fn reclaimed(&self, released: usize, refused: usize) {
        let counter = |outcome: &'static str| {
            metrics::counter!(names::RECLAIMS, self.labels.with(&[("outcome", outcome)]))
        };
        counter("released").increment(released as u64);
        counter("refused").increment(refused as u64);
    }

    /// The Message Follow counters of this node.
    pub(crate) fn follow(&self) -> FollowCounters {
        FollowCounters {
            relayed: metrics::counter!(names::FOLLOW_RELAYED, self.labels.with(&[])),
            notices: metrics::counter!(names::FOLLOW_NOTICES, self.labels.with(&[])),
            barriers: metrics::counter!(names::FOLLOW_BARRIERS, self.labels.with(&[])),
        }
    }

    /// The route cache's hit and miss counters of this node.
    pub(crate) fn route_cache(&self) -> RouteCacheCounters {
        let counter = |outcome: &'static str| {
            metrics::counter!(
                names::ROUTE_CACHE_LOOKUPS,
                self.labels.with(&[("outcome", outcome)])
            )
        };
        RouteCacheCounters {
            hits: counter("hit"),
            misses: counter("miss"),
        }
    }
}

/// What Message Follow counts on one node.
#[derive(Clone)]
pub(crate) struct FollowCounters {
    /// Messages relayed to a moved object's new owner.
    pub(crate) relayed: Counter,
    /// Follow notices sent to senders that used an old route.
    pub(crate) notices: Counter,
    /// Barriers sent ahead of a notice, so the sender's next message follows the relayed
    /// ones.
    pub(crate) barriers: Counter,
}

impl Default for FollowCounters {
    fn default() -> Self {
        FollowCounters {
            relayed: Counter::noop(),
            notices: Counter::noop(),
            barriers: Counter::noop(),
        }
    }
}

/// Route cache lookups on one node, by outcome.
pub(crate) struct RouteCacheCounters {
    /// Found a route (or a switch in progress).
    pub(crate) hits: Counter,
    /// Found none: an authority read follows.
    pub(crate) misses: Counter,
}

impl Default for RouteCacheCounters {
    fn default() -> Self {
        RouteCacheCounters {
            hits: Counter::noop(),
            misses: Counter::noop(),
        }
    }
}
