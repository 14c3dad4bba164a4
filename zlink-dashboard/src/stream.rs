//! `/api/stream`: what the page shows, pushed over Server-Sent Events at most once a
//! second while the page is open: the node's status and health, the events of its status
//! stream since the last update, and the loss counter. Each update's SSE `id` is the
//! sequence of the last event in it, so a reconnecting browser resumes with
//! `Last-Event-ID` from there.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde::Serialize;
use tokio::time::{interval, Interval, MissedTickBehavior};
use zlink::telemetry::{NodeEvent, Observer};

use crate::figures::{Figures, SurfaceFigures};
use crate::process::{ProcessFigures, ProcessMeter};
use crate::Dashboard;

/// How often the page is updated, at most.
pub const UPDATE_EVERY: Duration = Duration::from_secs(1);
/// Events carried by one update at most (the rest follow in the next ones).
const EVENTS_PER_UPDATE: usize = 512;
/// Updates between two reads of the mesh's nodes from the Location Store.
const NODES_EVERY: u64 = 5;

/// One update of the page.
#[derive(Serialize)]
struct Update {
    status: zlink::RuntimeStatus,
    health: zlink::Health,
    events: Vec<NodeEvent>,
    /// Events this page's stream lost (it fell behind the node's queue, or resumed past
    /// what the node retained).
    lost: u64,
    /// Calls per second and p99 per surface since the last update, when the dashboard
    /// was given the Prometheus handle.
    calls: Option<Vec<SurfaceFigures>>,
    /// This process's CPU and memory.
    process: Option<ProcessFigures>,
    /// The mesh's nodes as the Location Store has them, every few updates (`None` in
    /// between, and without a store).
    nodes: Option<Vec<zlink::object::recovery::NodeRecord>>,
}

/// What one open page's stream carries from one update to the next.
struct Watch {
    dashboard: Dashboard,
    observer: Observer,
    tick: Interval,
    last: u64,
    figures: Option<Figures>,
    process: ProcessMeter,
    updates: u64,
}

pub(crate) async fn stream(
    State(dashboard): State<Dashboard>,
    headers: HeaderMap,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let mut tick = interval(UPDATE_EVERY);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let watch = Watch {
        observer: dashboard.operator.observe_after(after),
        figures: dashboard.metrics.as_ref().map(|_| Figures::default()),
        dashboard,
        tick,
        last: after,
        process: ProcessMeter::default(),
        updates: 0,
    };
    let updates = futures::stream::unfold(watch, |mut watch| async move {
        watch.tick.tick().await;
        let event = watch.update().await;
        Some((Ok(event), watch))
    });
    Sse::new(updates).keep_alive(KeepAlive::default())
}

impl Watch {
    /// The next update: everything that happened since the last one.
    async fn update(&mut self) -> Event {
        let mut events = Vec::new();
        while events.len() < EVENTS_PER_UPDATE {
            let Some(observed) = self.observer.try_next() else {
                break;
            };
            self.last = observed.event.sequence;
            events.push(observed.event);
        }
        let operator = &self.dashboard.operator;
        let calls = match (&mut self.figures, &self.dashboard.metrics) {
            (Some(figures), Some(handle)) => Some(figures.update(&handle.render(), operator.rid())),
            _ => None,
        };
        // The store is read on the first update and every few after it.
        let nodes = if self.updates.is_multiple_of(NODES_EVERY) {
            operator.nodes().await.ok()
        } else {
            None
        };
        self.updates += 1;
        let update = Update {
            status: operator.status(),
            health: operator.health(),
            events,
            lost: self.observer.lost(),
            calls,
            process: self.process.update(),
            nodes,
        };
        Event::default()
            .event("update")
            .id(self.last.to_string())
            .json_data(update)
            .unwrap_or_else(|e| Event::default().event("error").data(e.to_string()))
    }
}
