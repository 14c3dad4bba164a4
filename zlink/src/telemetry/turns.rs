//! What an object's turns cost: how long messages waited in the mailbox, how deep the
//! mailbox was when a turn started, turns that ran long, and how long activations took.
//! Registered only when a recorder is installed (then each message reads the clock
//! twice): without one nothing here exists.

use std::time::{Duration, Instant};

use metrics::{Counter, Histogram};

use super::{names, NodeLabels, ObjectClass};

/// A turn that runs at least this long is counted (and logged at warn).
pub const LONG_TURN: Duration = Duration::from_secs(1);

/// The turn instruments of one node, by kind (Spot, Actor).
pub(crate) struct TurnMeter {
    waits: [Histogram; 2],
    depths: [Histogram; 2],
    long: [Counter; 2],
    activations: [Histogram; 2],
}

impl TurnMeter {
    /// The instruments of the node labelled `labels`.
    pub(crate) fn new(labels: &NodeLabels) -> Self {
        let by_kind = |name: &'static str| {
            ObjectClass::ALL
                .map(|kind| metrics::histogram!(name, labels.with(&[("kind", kind.as_str())])))
        };
        TurnMeter {
            waits: by_kind(names::MAILBOX_WAIT),
            depths: by_kind(names::MAILBOX_DEPTH),
            long: ObjectClass::ALL.map(|kind| {
                metrics::counter!(names::LONG_TURNS, labels.with(&[("kind", kind.as_str())]))
            }),
            activations: by_kind(names::ACTIVATION_DURATION),
        }
    }

    /// A message queued at `since` starts its turn now.
    pub(crate) fn waited(&self, kind: ObjectClass, since: Instant) {
        self.waits[kind as usize].record(since.elapsed().as_secs_f64());
    }

    /// A turn starts with `queued` more jobs waiting behind it.
    pub(crate) fn depth(&self, kind: ObjectClass, queued: usize) {
        self.depths[kind as usize].record(queued as f64);
    }

    /// A turn that started at `started` ended; `true` when it ran long (and was counted).
    pub(crate) fn turn_ended(&self, kind: ObjectClass, started: Instant) -> bool {
        let long = started.elapsed() >= LONG_TURN;
        if long {
            self.long[kind as usize].increment(1);
        }
        long
    }

    /// A creation started at `started` made its object.
    pub(crate) fn activated(&self, kind: ObjectClass, started: Instant) {
        self.activations[kind as usize].record(started.elapsed().as_secs_f64());
    }
}
