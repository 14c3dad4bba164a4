//! The application's outgoing calls: in flight, counted by outcome, and a request's time.

use std::sync::OnceLock;
use std::time::Instant;

use metrics::{Counter, Gauge, Histogram};

use super::labels::{CallKind, Outcome, Surface, OUTCOMES};
use super::{names, NodeLabels};
use crate::Error;

const SURFACES: usize = Surface::ALL.len();

/// The call instruments of one node. A series is registered the first time it is used, so
/// a scrape shows only the surfaces and outcomes that happened.
pub(crate) struct CallMeter {
    labels: NodeLabels,
    in_flight: [Gauge; SURFACES],
    totals: [[[OnceLock<Counter>; OUTCOMES]; 2]; SURFACES],
    durations: [[OnceLock<Histogram>; OUTCOMES]; SURFACES],
}

impl CallMeter {
    pub(crate) fn new(labels: &NodeLabels) -> Self {
        CallMeter {
            in_flight: Surface::ALL.map(|surface| {
                metrics::gauge!(
                    names::CALLS_IN_FLIGHT,
                    labels.with(&[("surface", surface.as_str())])
                )
            }),
            totals: Default::default(),
            durations: Default::default(),
            labels: labels.clone(),
        }
    }

    /// A call to `surface` starts now.
    pub(crate) fn start(&self, surface: Surface, kind: CallKind) -> CallTimer<'_> {
        self.in_flight[surface.index()].increment(1.0);
        CallTimer {
            meter: self,
            surface,
            kind,
            // A send's time is how long its queue took to accept it: not measured.
            started: (kind == CallKind::Request).then(Instant::now),
            ended: false,
        }
    }

    fn end(&self, surface: Surface, kind: CallKind, outcome: Outcome, started: Option<Instant>) {
        let s = surface.index();
        self.in_flight[s].decrement(1.0);
        self.totals[s][kind.index()][outcome.index()]
            .get_or_init(|| {
                metrics::counter!(
                    names::CALLS,
                    self.labels.with(&[
                        ("surface", surface.as_str()),
                        ("kind", kind.as_str()),
                        ("outcome", outcome.as_str()),
                    ])
                )
            })
            .increment(1);
        if let Some(started) = started {
            self.durations[s][outcome.index()]
                .get_or_init(|| {
                    metrics::histogram!(
                        names::CALL_DURATION,
                        self.labels
                            .with(&[("surface", surface.as_str()), ("outcome", outcome.as_str()),])
                    )
                })
                .record(started.elapsed().as_secs_f64());
        }
    }
}

/// One call on its way: ended with its result, or, dropped before, as `cancelled`.
pub(crate) struct CallTimer<'a> {
    meter: &'a CallMeter,
    surface: Surface,
    kind: CallKind,
    started: Option<Instant>,
    ended: bool,
}

impl CallTimer<'_> {
    /// The call ended with `result`.
    pub(crate) fn end<T>(&mut self, result: &Result<T, Error>) {
        if !std::mem::replace(&mut self.ended, true) {
            let outcome = Outcome::of(result);
            self.meter
                .end(self.surface, self.kind, outcome, self.started);
        }
    }
}

impl Drop for CallTimer<'_> {
    fn drop(&mut self) {
        if !self.ended {
            self.ended = true;
            self.meter
                .end(self.surface, self.kind, Outcome::Cancelled, self.started);
        }
    }
}
