//! Logical Multicast (seed 003 §5.1): events among Spots over a RouteMesh channel. A Spot
//! type subscribes to `(ChannelName, topic)` with a one-way handler; a publish sends one
//! record (command 23) to each eligible node, and each receiver hands one shared buffer
//! to every matching Spot it runs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use tokio::sync::Semaphore;

use super::object_type::TypeDef;
use crate::address::StableType;

mod publish;
mod receive;

pub(crate) use publish::{publish, Event};
pub(crate) use receive::MulticastRoute;

/// Publishes running at once on one node (seed: a bounded pool of publish workers).
const PUBLISH_WORKERS: usize = 256;

/// A node's Logical Multicast: which of its Spot types take which events, the bounded
/// pool its publishes start in, and what went through it.
#[derive(Debug)]
pub(crate) struct Multicast {
    subscriptions: SubscriptionIndex,
    workers: Semaphore,
    counts: Counts,
}

impl Multicast {
    /// The multicast of a node serving `types` (no publish worker free when a test fault
    /// holds them all).
    pub(crate) fn new<'a>(
        types: impl IntoIterator<Item = &'a TypeDef>,
        workers_taken: bool,
    ) -> Self {
        Multicast {
            subscriptions: SubscriptionIndex::new(types),
            workers: Semaphore::new(if workers_taken { 0 } else { PUBLISH_WORKERS }),
            counts: Counts::default(),
        }
    }

    /// What went through this node's multicast so far.
    pub(crate) fn snapshot(&self) -> MulticastCounts {
        let read = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let c = &self.counts;
        MulticastCounts {
            published: read(&c.published),
            records_sent: read(&c.records_sent),
            targets_skipped: read(&c.targets_skipped),
            records_received: read(&c.records_received),
            delivered: read(&c.delivered),
            dropped: read(&c.dropped),
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    published: AtomicU64,
    records_sent: AtomicU64,
    targets_skipped: AtomicU64,
    records_received: AtomicU64,
    delivered: AtomicU64,
    dropped: AtomicU64,
}

fn count(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

/// What a node's Logical Multicast did since it started (in the runtime's status).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MulticastCounts {
    /// Publishes of this node that started (got past admission).
    pub published: u64,
    /// Records (command 23) its publishes queued for remote nodes: one per target node.
    pub records_sent: u64,
    /// Remote targets its publishes skipped (unreachable, or no room in time).
    pub targets_skipped: u64,
    /// Records it received from publishers elsewhere.
    pub records_received: u64,
    /// Events queued on (or held for) subscribed Spots here, one per Spot.
    pub delivered: u64,
    /// Events a subscribed Spot here could not take (a full queue, a closing Spot).
    pub dropped: u64,
}

/// Which Spot types of this node take an event, by `(channel, topic, packet)`. Types are
/// fixed when the node starts, so the index is built once.
#[derive(Debug, Default)]
pub(crate) struct SubscriptionIndex {
    by_topic: HashMap<(String, String, String), Vec<StableType>>,
}

impl SubscriptionIndex {
    /// The index of the subscriptions of `types`.
    pub(crate) fn new<'a>(types: impl IntoIterator<Item = &'a TypeDef>) -> Self {
        let mut by_topic: HashMap<(String, String, String), Vec<StableType>> = HashMap::new();
        for def in types {
            for s in &def.subscriptions {
                by_topic
                    .entry((s.channel.clone(), s.topic.clone(), s.packet.clone()))
                    .or_default()
                    .push(def.stable_type.clone());
            }
        }
        SubscriptionIndex { by_topic }
    }

    /// The Spot types taking `packet` events of `topic` on `channel`.
    pub(crate) fn types(&self, channel: &str, topic: &str, packet: &str) -> &[StableType] {
        // (A borrowed tuple key would need a custom `Borrow`; the lookup allocates three
        // small strings only on nodes that subscribe to something.)
        if self.by_topic.is_empty() {
            return &[];
        }
        self.by_topic
            .get(&(channel.to_string(), topic.to_string(), packet.to_string()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}
