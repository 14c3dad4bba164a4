//! Idle eviction of Instance Spots (reference §2.9): with InstanceSpotIdleTimeout above 0,
//! an Instance Spot that stayed idle that long (nothing queued, running or lent, no timer
//! armed, its first message done, not moving) is closed with
//! [`ClosingReason::IdleEvicted`] and its authority released, as an explicit close would.
//! Its state is not kept: the next call with Instance intent activates a new incarnation.
//! User and Entry Spots are never evicted.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::authority::{AuthorityState, ObjectShape};
use super::closing;
use super::core::ObjectCore;
use super::follow::Departures;
use super::lifecycle::ClosingReason;
use super::live_object::LiveObject;
use super::owner_link::route_fence;
use crate::address::ObjectKey;

/// The most Instance Spots one sweep looks at; the next sweep goes on after them.
const SWEEP_BATCH: usize = 64;

/// Where one Instance Spot's idleness stands: the incarnation and work mark last seen,
/// and since when.
struct Seen {
    generation: u64,
    mark: u64,
    since: Instant,
}

/// Starts the sweeper, when `timeout` is above 0.
pub(super) fn watch(core: &Arc<ObjectCore>, timeout: Duration) {
    if timeout.is_zero() {
        return;
    }
    let every = (timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let weak: Weak<ObjectCore> = Arc::downgrade(core);
    let cancel = core.env.cancel().clone();
    core.env.tracker().spawn(async move {
        let mut seen: HashMap<ObjectKey, Seen> = HashMap::new();
        let mut cursor = 0usize;
        let mut ticker = tokio::time::interval(every);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = cancel.cancelled() => return,
            }
            let Some(core) = weak.upgrade() else { return };
            cursor = sweep(&core, timeout, &mut seen, cursor).await;
        }
    });
}

/// Looks at up to [`SWEEP_BATCH`] Instance Spots from `cursor` on, and evicts those idle
/// for `timeout`. Returns where the next sweep starts.
async fn sweep(
    core: &Arc<ObjectCore>,
    timeout: Duration,
    seen: &mut HashMap<ObjectKey, Seen>,
    cursor: usize,
) -> usize {
    let mut instances: Vec<Arc<LiveObject>> = core
        .registry
        .all()
        .into_iter()
        .filter(|live| live.object_type.instance)
        .collect();
    instances.sort_by(|a, b| a.key.id.cmp(&b.key.id));
    seen.retain(|key, _| instances.iter().any(|live| &live.key == key));
    if instances.is_empty() {
        return 0;
    }
    let start = cursor % instances.len();
    let now = Instant::now();
    let batch: Vec<Arc<LiveObject>> = instances
        .iter()
        .cycle()
        .skip(start)
        .take(SWEEP_BATCH.min(instances.len()))
        .cloned()
        .collect();
    for live in &batch {
        let Some(mark) = idle_mark(&core.departures, live) else {
            seen.remove(&live.key);
            continue;
        };
        let generation = live.generation();
        let entry = seen.entry(live.key.clone()).or_insert(Seen {
            generation,
            mark,
            since: now,
        });
        if entry.generation != generation || entry.mark != mark {
            *entry = Seen {
                generation,
                mark,
                since: now,
            };
            continue;
        }
        if now.duration_since(entry.since) < timeout {
            continue;
        }
        seen.remove(&live.key);
        tracing::info!(object = %live.key, idle_for = ?timeout, "evicting an idle Instance Spot");
        if let Err(e) =
            closing::close(core, &live.key, generation, ClosingReason::IdleEvicted).await
        {
            tracing::debug!(object = %live.key, error = %e, "an idle Instance Spot was not evicted");
        }
    }
    start + batch.len()
}

/// `live`'s work mark when it may be evicted now.
fn idle_mark(departures: &Departures, live: &LiveObject) -> Option<u64> {
    let authority = live.authority();
    let record = &authority.record;
    let settled = record.shape == ObjectShape::InstanceSpot
        && record.state == AuthorityState::Ready
        && record.activation.is_none()
        && departures
            .get(&live.key, &route_fence(&record.fence))
            .is_none();
    settled.then(|| live.idle_mark()).flatten()
}
