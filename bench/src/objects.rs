//! `objects`: Spot messaging by global ID against a channel request on the same two nodes,
//! the cost of a route-cache miss, and the creation rate, all in one run.
//!
//! The Location Store is a private `redis-server` when one is installed (so a miss pays a
//! real store round trip), the embedded store otherwise.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zlink::object::{Spot, SpotContext, SpotCreation};
use zlink::store::{LocationStore, RedisLocationStore, RedisOptions};
use zlink::Runtime;

use crate::stats::{Latency, Throughput};
use crate::zlink_rpc::{Echo, EchoServer, EchoServerClient, Echoed};
use crate::BoxError;

const MESH: &str = "bench-objects";
const CHANNEL: &str = "echo";

/// A Spot that echoes: the same work as the channel's echo handler.
pub struct EchoSpot;

#[zlink::spot(type = "bench-echo", relocation = disable)]
impl EchoSpot {
    #[handler]
    async fn echo(&mut self, e: Echo, _ctx: &SpotContext) -> zlink::Result<Echoed> {
        Ok(Echoed(e.0))
    }
}

impl Spot for EchoSpot {}

/// What the objects benchmark measured.
pub struct ObjectFigures {
    pub store: &'static str,
    pub channel_latency: Latency,
    pub spot_latency: Latency,
    pub channel_throughput: Throughput,
    pub spot_throughput: Throughput,
    pub cold_latency: Latency,
    pub reads_per_miss: f64,
    pub creations: Throughput,
}

struct Nodes {
    server: Runtime,
    warm: Runtime,
    cold: Runtime,
    _redis: Option<zlink_testkit::RedisServer>,
}

fn record_reads(rt: &Runtime) -> u64 {
    rt.status()
        .store_operations
        .map_or(0, |s| s.reads.record.calls)
}

async fn node(
    rid: &str,
    store: &Arc<dyn LocationStore>,
    tune: impl FnOnce(zlink::RuntimeBuilder) -> zlink::RuntimeBuilder,
) -> Result<Runtime, BoxError> {
    let builder = Runtime::builder()
        .mesh_name(MESH)
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .discovery_interval(Duration::from_millis(100));
    Ok(tune(builder).build()?.start().await?)
}

async fn start() -> Result<Nodes, BoxError> {
    let redis = zlink_testkit::RedisServer::start().ok();
    let store: Arc<dyn LocationStore> = match &redis {
        Some(redis) => Arc::new(RedisLocationStore::new(RedisOptions::new(
            redis.url(),
            "bench",
        ))?),
        None => <dyn LocationStore>::in_memory(),
    };
    let server = node("objects-server", &store, |b| {
        b.channel_server(CHANNEL, EchoServer)
            .spot_type(EchoSpot::spot_type(|_| EchoSpot).expect("a valid Spot type"))
    })
    .await?;
    let warm = node("objects-warm", &store, |b| b.channel_client(CHANNEL)).await?;
    // Every call of this node misses: its route cache is off.
    let cold = node("objects-cold", &store, |b| {
        b.route_cache_max_age(Duration::ZERO)
    })
    .await?;
    for client in [&warm, &cold] {
        client
            .nodes()
            .wait_for(Duration::from_secs(10), |peers| {
                peers.iter().any(|p| p.rid == "objects-server")
            })
            .await?;
    }
    Ok(Nodes {
        server,
        warm,
        cold,
        _redis: redis,
    })
}

fn spot_round_trip(
    rt: &zlink::Handle,
    id: Arc<str>,
    payload: &Arc<[u8]>,
) -> impl std::future::Future<Output = Result<(), BoxError>> + Send + 'static {
    let (client, payload) = (EchoSpotClient::new(rt, &*id), payload.clone());
    async move {
        let reply = client.echo(Echo(payload.to_vec())).await?;
        crate::drive::check_echo(payload.len(), reply.0.len())
    }
}

/// Runs the whole objects benchmark.
pub async fn run(
    payload: &[u8],
    warmup: usize,
    requests: usize,
    window: usize,
    duration: Duration,
) -> Result<ObjectFigures, BoxError> {
    let nodes = start().await?;
    let outcome = measure(&nodes, payload, warmup, requests, window, duration).await;
    nodes.cold.shutdown().await;
    nodes.warm.shutdown().await;
    nodes.server.shutdown().await;
    outcome
}

async fn measure(
    nodes: &Nodes,
    payload: &[u8],
    warmup: usize,
    requests: usize,
    window: usize,
    duration: Duration,
) -> Result<ObjectFigures, BoxError> {
    let payload: Arc<[u8]> = payload.into();
    let store = if nodes._redis.is_some() {
        "redis"
    } else {
        "in-memory"
    };
    // One Spot per pipelined caller (a Spot runs one message at a time, a channel
    // handler runs concurrently), all on the server node.
    let ids: Vec<Arc<str>> = (0..window)
        .map(|i| Arc::from(format!("echo-{i}")))
        .collect();
    for id in &ids {
        nodes
            .server
            .spots()
            .get_or_create(id, EchoSpot::STABLE_TYPE, Vec::new())
            .await?;
    }

    let channel = EchoServerClient::new(&nodes.warm, CHANNEL);
    let channel_trip = {
        let payload = payload.clone();
        move || {
            let (client, payload) = (channel.clone(), payload.clone());
            async move {
                let reply = client.echo(&Echo(payload.to_vec())).await?;
                crate::drive::check_echo(payload.len(), reply.0.len())
            }
        }
    };
    let channel_latency =
        Latency::of(crate::drive::sequential(channel_trip.clone(), warmup, requests).await?)
            .ok_or("no samples")?;
    let spot_latency = Latency::of(
        crate::drive::sequential(
            || spot_round_trip(&nodes.warm, ids[0].clone(), &payload),
            warmup,
            requests,
        )
        .await?,
    )
    .ok_or("no samples")?;
    let channel_throughput = crate::drive::pipelined(channel_trip, window, duration).await?;
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let spot_throughput = {
        let (warm, ids, payload) = (nodes.warm.clone(), ids.clone(), payload.clone());
        crate::drive::pipelined(
            move || {
                // Each call goes to the next Spot in turn: `window` callers, `window` Spots.
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % ids.len();
                spot_round_trip(&warm, ids[i].clone(), &payload)
            },
            window,
            duration,
        )
        .await?
    };

    let cold_requests = requests.min(2_000);
    let reads_before = record_reads(&nodes.cold);
    let cold_samples = crate::drive::sequential(
        || spot_round_trip(&nodes.cold, ids[0].clone(), &payload),
        0,
        cold_requests,
    )
    .await?;
    let reads_per_miss = (record_reads(&nodes.cold) - reads_before) as f64 / cold_requests as f64;
    let cold_latency = Latency::of(cold_samples).ok_or("no samples")?;

    let creations = create_many(&nodes.warm, 2_000, 16).await?;
    Ok(ObjectFigures {
        store,
        channel_latency,
        spot_latency,
        channel_throughput,
        spot_throughput,
        cold_latency,
        reads_per_miss,
        creations,
    })
}

/// `count` get-or-creates of fresh IDs, `concurrency` at a time, from a node that places
/// them on the server.
async fn create_many(
    rt: &zlink::Handle,
    count: usize,
    concurrency: usize,
) -> Result<Throughput, BoxError> {
    let started = Instant::now();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (rt, next) = (rt.clone(), next.clone());
            tokio::spawn(async move {
                let mut created = 0u64;
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= count {
                        return Ok::<u64, BoxError>(created);
                    }
                    let outcome = rt
                        .spots()
                        .get_or_create(&format!("made-{i}"), EchoSpot::STABLE_TYPE, Vec::new())
                        .await?;
                    if matches!(outcome, SpotCreation::Created(..)) {
                        created += 1;
                    }
                }
            })
        })
        .collect();
    let mut messages = 0;
    for task in tasks {
        messages += task.await??;
    }
    Ok(Throughput {
        messages,
        elapsed: started.elapsed(),
    })
}
