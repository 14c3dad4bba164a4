//! Part of `objects`: cold activation of Instance Spots (100 concurrent first calls for
//! distinct IDs, 50 for one ID), and Logical Multicast to 100 subscribed Spots on 3 nodes
//! against the same deliveries made as direct one-way Spot sends, in the same run.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use zlink::object::{Spot, SpotContext};
use zlink::store::{
    LocationStore, RedisLocationStore, RedisOptions, RedisRelocationStore, RelocationStore,
};
use zlink::Runtime;

use crate::stats::{Latency, Throughput};
use crate::BoxError;

const MESH: &str = "bench-instances";
const CHANNEL: &str = "bench-events";
const TOPIC: &str = "tick";

/// The first (and every) message of a match.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Counted)]
pub struct Hit;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Counted(pub u32);

/// An Instance Spot: activated by its first `Hit`.
pub struct BenchMatch {
    hits: u32,
}

#[zlink::spot(type = "bench-match", relocation = disable, instance)]
impl BenchMatch {
    #[handler]
    async fn hit(&mut self, _hit: Hit, _ctx: &SpotContext) -> zlink::Result<Counted> {
        self.hits += 1;
        Ok(Counted(self.hits))
    }
}

impl Spot for BenchMatch {}

/// The event every observer takes, by multicast or by a direct send.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Tick(pub u64);

/// A subscribed Spot counting what it received.
pub struct Observer {
    delivered: Arc<AtomicU64>,
}

#[zlink::spot(type = "bench-observer", relocation = disable)]
impl Observer {
    #[subscribe(channel = "bench-events", topic = "tick")]
    async fn tick(&mut self, _tick: Tick, _ctx: &SpotContext) -> zlink::Result<()> {
        self.delivered.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

impl Spot for Observer {}

/// What this part measured.
pub struct InstanceFigures {
    /// One first call at a time.
    pub sequential: Latency,
    pub distinct: Latency,
    pub same_id: Latency,
    /// Location Store calls per activation (all nodes), distinct IDs.
    pub store_calls_per_activation: f64,
    /// Factory runs per same-ID round (1 is right).
    pub builds_per_same_id_round: f64,
    pub multicast: Throughput,
    pub direct: Throughput,
    pub subscribers: usize,
}

struct Mesh {
    nodes: Vec<Runtime>,
    builds: Arc<AtomicUsize>,
    delivered: Arc<AtomicU64>,
    _redis: Option<zlink_testkit::RedisServer>,
}

fn store_calls(rt: &Runtime) -> u64 {
    rt.status().store_operations.map_or(0, |s| {
        s.reads.record.calls + s.writes.batch.calls + s.writes.counter.calls
    })
}

async fn mesh() -> Result<Mesh, BoxError> {
    let redis = zlink_testkit::RedisServer::start().ok();
    let (store, relocation): (Arc<dyn LocationStore>, Arc<dyn RelocationStore>) = match &redis {
        Some(redis) => (
            Arc::new(RedisLocationStore::new(RedisOptions::new(
                redis.url(),
                "bench-instances",
            ))?),
            Arc::new(RedisRelocationStore::new(RedisOptions::new(
                redis.url(),
                "bench-instances-relocation",
            ))?),
        ),
        None => (
            <dyn LocationStore>::in_memory(),
            <dyn RelocationStore>::in_memory(),
        ),
    };
    let builds = Arc::new(AtomicUsize::new(0));
    let delivered = Arc::new(AtomicU64::new(0));
    let mut nodes = Vec::new();
    for rid in ["n1", "n2", "n3"] {
        let (builds, delivered) = (builds.clone(), delivered.clone());
        let builder = Runtime::builder()
            .mesh_name(MESH)
            .rid(rid)
            .listen("tcp://127.0.0.1:0")
            .location_store(store.clone())
            .relocation_store(relocation.clone())
            .discovery_interval(Duration::from_millis(100))
            .multicast_channel(CHANNEL)
            .spot_type(BenchMatch::spot_type(move |_| {
                builds.fetch_add(1, Ordering::Relaxed);
                BenchMatch { hits: 0 }
            })?)
            .spot_type(Observer::spot_type(move |_| Observer {
                delivered: delivered.clone(),
            })?);
        nodes.push(builder.build()?.start().await?);
    }
    for rt in &nodes {
        rt.channels().ready(CHANNEL, 2).await?;
        rt.spots().ready(BenchMatch::STABLE_TYPE, 3).await?;
    }
    Ok(Mesh {
        nodes,
        builds,
        delivered,
        _redis: redis,
    })
}

/// Runs cold activation, then multicast against direct sends.
pub async fn run(duration: Duration) -> Result<InstanceFigures, BoxError> {
    let mesh = mesh().await?;
    let outcome = measure(&mesh, duration).await;
    for rt in mesh.nodes.iter().rev() {
        rt.shutdown().await;
    }
    outcome
}

async fn measure(mesh: &Mesh, duration: Duration) -> Result<InstanceFigures, BoxError> {
    let caller = &mesh.nodes[0];
    let mut sequential = Vec::new();
    for i in 0..200 {
        sequential.push(first_call(caller, format!("single-{i}")).await?);
    }
    // Distinct IDs: 100 first calls at once, per round.
    let rounds = 10;
    let calls_before: u64 = mesh.nodes.iter().map(store_calls).sum();
    let mut distinct = Vec::new();
    for round in 0..rounds {
        let calls = (0..100).map(|i| first_call(caller, format!("cold-{round}-{i}")));
        for sample in futures::future::join_all(calls).await {
            distinct.push(sample?);
        }
    }
    let calls_after: u64 = mesh.nodes.iter().map(store_calls).sum();
    let activations = (rounds * 100) as f64;
    let store_calls_per_activation = (calls_after - calls_before) as f64 / activations;
    // One ID: 50 first calls at once, from all three nodes, per round.
    let builds_before = mesh.builds.load(Ordering::Relaxed);
    let mut same_id = Vec::new();
    for round in 0..rounds {
        let id = format!("hot-{round}");
        let calls = (0..50).map(|i| first_call(&mesh.nodes[i % 3], id.clone()));
        for sample in futures::future::join_all(calls).await {
            same_id.push(sample?);
        }
    }
    let builds_per_same_id_round =
        (mesh.builds.load(Ordering::Relaxed) - builds_before) as f64 / rounds as f64;

    // 100 subscribed observers spread over the three nodes.
    let subscribers = 100;
    let ids: Vec<String> = (0..subscribers).map(|i| format!("observer-{i}")).collect();
    for (i, id) in ids.iter().enumerate() {
        let on = &mesh.nodes[i % 3];
        on.spots()
            .get_or_create(id, Observer::STABLE_TYPE, Bytes::new())
            .await?;
    }
    let multicast = deliver(mesh, subscribers, duration, |n| {
        let rt = caller.handle().clone();
        async move {
            rt.multicast().publish(CHANNEL, TOPIC, &Tick(n)).await?;
            Ok(())
        }
    })
    .await?;
    let direct = deliver(mesh, subscribers, duration, |n| {
        let (rt, ids) = (caller.handle().clone(), ids.clone());
        async move {
            for id in &ids {
                rt.spots().send(id, &Tick(n)).await?;
            }
            Ok(())
        }
    })
    .await?;
    Ok(InstanceFigures {
        sequential: Latency::of(sequential).ok_or("no samples")?,
        distinct: Latency::of(distinct).ok_or("no samples")?,
        same_id: Latency::of(same_id).ok_or("no samples")?,
        store_calls_per_activation,
        builds_per_same_id_round,
        multicast,
        direct,
        subscribers,
    })
}

/// One intent call for `id` from `rt`, timed.
async fn first_call(rt: &zlink::Handle, id: String) -> Result<Duration, BoxError> {
    let started = Instant::now();
    BenchMatchClient::instance(rt, id.as_str())
        .hit(&Hit)
        .await?;
    Ok(started.elapsed())
}

/// Events reaching all `subscribers` for `duration`, one `event(n)` at a time, in
/// batches that wait until everything sent so far was handled (so no queue overflows).
async fn deliver<F, Fut>(
    mesh: &Mesh,
    subscribers: usize,
    duration: Duration,
    event: F,
) -> Result<Throughput, BoxError>
where
    F: Fn(u64) -> Fut,
    Fut: std::future::Future<Output = Result<(), BoxError>>,
{
    const BATCH: u64 = 20;
    let base = mesh.delivered.load(Ordering::Relaxed);
    let started = Instant::now();
    let mut events = 0u64;
    while started.elapsed() < duration {
        for _ in 0..BATCH {
            event(events).await?;
            events += 1;
        }
        let target = base + events * subscribers as u64;
        let waited = Instant::now();
        while mesh.delivered.load(Ordering::Relaxed) < target {
            if waited.elapsed() > Duration::from_secs(10) {
                return Err("deliveries stalled (an event was lost)".into());
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    }
    Ok(Throughput {
        messages: events * subscribers as u64,
        elapsed: started.elapsed(),
    })
}
