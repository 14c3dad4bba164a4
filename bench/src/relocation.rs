//! `relocation`: what a live move costs, in one run on three nodes over 127.0.0.1.
//!
//! - **Pause**: from the seal to the first dispatch on the target, taken as the time of
//!   one `relocate` call (which returns once the target committed and opened dispatch),
//!   small state, idle and while senders load other Actors.
//! - **Interruption**: the p99 latency of requests during a `relocate_all` of 100 Actors,
//!   against the p99 of the same load with no move.
//! - **Unit pause**: the same for a SpotWide Spot moving with its 10 member Actors as
//!   one unit (all sealed, restored by one restore, dispatch opened together), idle.
//! - **Follow**: the first call on a route left in the sender's cache is relayed by the
//!   old owner (one hop); the notice then drops that route, so the next call reads the
//!   store once and goes direct. Without the notice the detour would last the cache's
//!   max age (15 s by default).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use zlink::object::{Actor, ActorContext, RelocationState, SpotContext};
use zlink::store::{
    LocationStore, RedisLocationStore, RedisOptions, RedisRelocationStore, RelocationStore,
};
use zlink::Runtime;

use crate::stats::Latency;
use crate::BoxError;

const MESH: &str = "bench-relocation";
const ACTORS: usize = 100;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Total)]
pub struct Bump(pub u64);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Total(pub u64);

/// One-way: join this Spot.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Sit(pub String);

/// An 8-byte count as a moved state.
fn count_from(state: &[u8]) -> zlink::Result<u64> {
    let bytes: [u8; 8] = state
        .try_into()
        .map_err(|_| zlink::Error::InvalidArgument("an 8-byte state".into()))?;
    Ok(u64::from_be_bytes(bytes))
}

/// A counter whose small state moves with it.
#[derive(Default)]
pub struct Tally(u64);

impl RelocationState for Tally {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        Ok(self.0.to_be_bytes().to_vec())
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        self.0 = count_from(state)?;
        Ok(())
    }
}

#[zlink::actor(type = "bench-tally", relocation = preserve)]
impl Tally {
    #[handler]
    async fn bump(&mut self, bump: Bump, _ctx: &ActorContext) -> zlink::Result<Total> {
        self.0 += bump.0;
        Ok(Total(self.0))
    }

    #[handler]
    async fn sit(&mut self, sit: Sit, ctx: &ActorContext) -> zlink::Result<()> {
        ctx.join_spot(&sit.0, zlink::Bytes::new())
    }
}

/// A SpotWide Spot of tallies, with a small state of its own.
#[derive(Default)]
pub struct Table(u64);

impl RelocationState for Table {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        Ok(self.0.to_be_bytes().to_vec())
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        self.0 = count_from(state)?;
        Ok(())
    }
}

#[zlink::spot(type = "bench-table", relocation = preserve, actors = Tally)]
impl Table {
    #[handler]
    async fn bump(&mut self, bump: Bump, _ctx: &SpotContext) -> zlink::Result<Total> {
        self.0 += bump.0;
        Ok(Total(self.0))
    }
}

impl zlink::object::Spot for Table {}

/// Members of the unit the unit pause moves.
const SEATS: usize = 10;

impl Actor for Tally {}

/// What the relocation benchmark measured.
pub struct RelocationFigures {
    pub store: &'static str,
    pub pause_idle: Latency,
    pub pause_loaded: Latency,
    pub pause_unit: Latency,
    pub baseline: Latency,
    pub during_drain: Latency,
    pub drained: usize,
    pub drain_elapsed: Duration,
    pub follow_relayed: Latency,
    pub follow_reread: Latency,
    pub direct: Latency,
    pub detour_calls: f64,
}

struct Mesh {
    nodes: Vec<Runtime>,
    client: Runtime,
    store: &'static str,
    _redis: Option<zlink_testkit::RedisServer>,
}

async fn node(
    rid: &str,
    (store, relocation): &(Arc<dyn LocationStore>, Arc<dyn RelocationStore>),
    weight: u32,
    tally: bool,
) -> Result<Runtime, BoxError> {
    let mut builder = Runtime::builder()
        .mesh_name(MESH)
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .relocation_store(relocation.clone())
        .placement_weight(weight)
        .discovery_interval(Duration::from_millis(100));
    if tally {
        builder = builder
            .actor_type(Tally::actor_type(|_| Tally::default())?)
            .spot_type(Table::spot_type(|_| Table::default())?);
    }
    Ok(builder.build()?.start().await?)
}

async fn mesh() -> Result<Mesh, BoxError> {
    let redis = zlink_testkit::RedisServer::start().ok();
    let store: (Arc<dyn LocationStore>, Arc<dyn RelocationStore>) = match &redis {
        Some(redis) => (
            Arc::new(RedisLocationStore::new(RedisOptions::new(
                redis.url(),
                "bench",
            ))?),
            Arc::new(RedisRelocationStore::new(RedisOptions::new(
                redis.url(),
                "bench-relocation",
            ))?),
        ),
        None => (
            <dyn LocationStore>::in_memory(),
            <dyn RelocationStore>::in_memory(),
        ),
    };
    let mut nodes = Vec::new();
    for (rid, weight) in [("a", 100), ("b", 100), ("c", 100)] {
        nodes.push(node(rid, &store, weight, true).await?);
    }
    let client = node("client", &store, 0, false).await?;
    for rt in nodes.iter().chain([&client]) {
        let others = nodes.iter().filter(|n| n.rid() != rt.rid()).count();
        let deadline = Instant::now() + Duration::from_secs(10);
        while rt.discovery().status().map_or(0, |s| {
            s.members.iter().filter(|m| m.entry_spot.is_some()).count()
        }) < others
        {
            if Instant::now() > deadline {
                return Err("the nodes did not find each other".into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    Ok(Mesh {
        nodes,
        client,
        store: if redis.is_some() {
            "redis"
        } else {
            "in-memory"
        },
        _redis: redis,
    })
}

fn id(n: usize) -> String {
    format!("tally-{n}")
}

/// The owner runtime of Actor `id`, by the store.
async fn owner<'a>(mesh: &'a Mesh, id: &str) -> Result<&'a Runtime, BoxError> {
    let at = mesh
        .client
        .actors()
        .find(id)
        .await?
        .ok_or("the Actor is gone")?;
    mesh.nodes
        .iter()
        .find(|rt| rt.rid() == at.rid)
        .ok_or_else(|| "an unknown owner".into())
}

/// Moves `id` from its owner to the next node, `moves` times; each move's duration.
async fn pauses(mesh: &Mesh, id: &str, moves: usize) -> Result<Vec<Duration>, BoxError> {
    let mut samples = Vec::with_capacity(moves);
    for _ in 0..moves {
        let from = owner(mesh, id).await?;
        let at = mesh
            .nodes
            .iter()
            .position(|n| n.rid() == from.rid())
            .unwrap_or(0);
        let to = mesh.nodes[(at + 1) % mesh.nodes.len()].rid().to_string();
        let started = Instant::now();
        from.actors().relocate(id, Some(&to)).await?;
        samples.push(started.elapsed());
    }
    Ok(samples)
}

/// A table with [`SEATS`] tallies seated, moved between b and c `moves` times; each
/// move's duration. It ends on b or c (the drain that follows empties a).
async fn unit_pauses(mesh: &Mesh, moves: usize) -> Result<Vec<Duration>, BoxError> {
    let table = "table";
    mesh.client
        .spots()
        .get_or_create(table, Table::STABLE_TYPE, "")
        .await?;
    let table_owner = |mesh: &Mesh| {
        let client = mesh.client.clone();
        async move {
            let at = client
                .spots()
                .find(table)
                .await?
                .ok_or("the table is gone")?;
            Ok::<_, BoxError>(at.rid)
        }
    };
    let rid = table_owner(mesh).await?;
    let by_rid = |rid: &str| mesh.nodes.iter().find(|n| n.rid() == rid);
    if rid == "a" {
        by_rid("a")
            .ok_or("no node a")?
            .spots()
            .relocate(table, Some("b"))
            .await?;
    }
    for n in 0..SEATS {
        let seat = format!("seat-{n}");
        mesh.client
            .actors()
            .create(&seat, Tally::STABLE_TYPE)
            .await?;
        let client = TallyClient::new(&mesh.client, &seat);
        client.sit(Sit(table.into())).await?;
        // Its next message runs after the Join (which may move it to the table's node).
        client.bump(Bump(0)).await?;
    }
    let mut samples = Vec::with_capacity(moves);
    for _ in 0..moves {
        let from = table_owner(mesh).await?;
        let to = if from == "b" { "c" } else { "b" };
        let node = by_rid(&from).ok_or("an unknown owner")?;
        let started = Instant::now();
        node.spots().relocate(table, Some(to)).await?;
        samples.push(started.elapsed());
    }
    for n in 0..SEATS {
        let at = mesh.client.actors().find(&format!("seat-{n}")).await?;
        if at.map(|a| a.rid) != Some(table_owner(mesh).await?) {
            return Err("a seat did not move with its table".into());
        }
    }
    Ok(samples)
}

/// One call of the load: when it started and how long it took.
type Sample = (Instant, Duration);

/// Senders on the client calling random Actors (but the first `skip`) until `stop`.
fn load(
    mesh: &Mesh,
    senders: usize,
    stop: Arc<AtomicBool>,
    skip: usize,
) -> Vec<tokio::task::JoinHandle<Result<Vec<Sample>, zlink::Error>>> {
    (0..senders)
        .map(|s| {
            let (client, stop) = (mesh.client.clone(), stop.clone());
            tokio::spawn(async move {
                let mut samples = Vec::new();
                let mut n = s * 7919;
                while !stop.load(Ordering::Relaxed) {
                    n = n.wrapping_mul(31).wrapping_add(17);
                    let actor = skip + n % (ACTORS - skip);
                    let started = Instant::now();
                    TallyClient::new(&client, id(actor)).bump(Bump(1)).await?;
                    samples.push((started, started.elapsed()));
                }
                Ok(samples)
            })
        })
        .collect()
}

async fn collect(
    handles: Vec<tokio::task::JoinHandle<Result<Vec<Sample>, zlink::Error>>>,
) -> Result<Vec<Sample>, BoxError> {
    let mut all = Vec::new();
    for handle in handles {
        all.extend(handle.await??);
    }
    Ok(all)
}

fn reads(rt: &Runtime) -> u64 {
    rt.status()
        .store_operations
        .map_or(0, |s| s.reads.record.calls)
}

pub async fn run(moves: usize, window: Duration) -> Result<RelocationFigures, BoxError> {
    let mesh = mesh().await?;
    // Every Actor on a, where the drain starts.
    for n in 0..ACTORS {
        let made = mesh.client.actors().create(&id(n), "bench-tally").await?;
        if made.rid != "a" {
            owner(&mesh, &id(n))
                .await?
                .actors()
                .relocate(&id(n), Some("a"))
                .await?;
        }
    }
    for n in 0..ACTORS {
        TallyClient::new(&mesh.client, id(n)).bump(Bump(0)).await?;
    }

    // Pause: one Actor moved round the three nodes, idle, then under load (the senders
    // leave the moving Actor alone: their cached route to it would fall more than 8
    // moves behind, which Message Follow does not bridge).
    let pause_idle = Latency::of(pauses(&mesh, &id(0), moves).await?).ok_or("no moves")?;
    let stop = Arc::new(AtomicBool::new(false));
    let senders = load(&mesh, 4, stop.clone(), 2);
    let pause_loaded = Latency::of(pauses(&mesh, &id(1), moves).await?).ok_or("no moves")?;
    stop.store(true, Ordering::Relaxed);
    collect(senders).await?;
    let pause_unit = Latency::of(unit_pauses(&mesh, moves / 4).await?).ok_or("no moves")?;
    for n in [0, 1] {
        let from = owner(&mesh, &id(n)).await?;
        if from.rid() != "a" {
            from.actors().relocate(&id(n), Some("a")).await?;
        }
        // The client's route is far behind: the first call says so and drops it.
        let _ = TallyClient::new(&mesh.client, id(n)).bump(Bump(0)).await;
        TallyClient::new(&mesh.client, id(n)).bump(Bump(0)).await?;
    }

    // Interruption: the load's p99 with no move, then during a drain of a.
    let stop = Arc::new(AtomicBool::new(false));
    let senders = load(&mesh, 4, stop.clone(), 0);
    tokio::time::sleep(window).await;
    stop.store(true, Ordering::Relaxed);
    let baseline = collect(senders).await?;
    let baseline =
        Latency::of(baseline.into_iter().map(|(_, took)| took).collect()).ok_or("no calls")?;
    let stop = Arc::new(AtomicBool::new(false));
    let senders = load(&mesh, 4, stop.clone(), 0);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let report = mesh.nodes[0].relocate_all().await?;
    let drain_elapsed = started.elapsed();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::Relaxed);
    // The calls that overlapped the drain: started before it ended, ended after it began.
    let drain_end = started + drain_elapsed;
    let during_drain = collect(senders)
        .await?
        .into_iter()
        .filter(|(at, took)| *at < drain_end && *at + *took > started)
        .map(|(_, took)| took)
        .collect();
    let during_drain = Latency::of(during_drain).ok_or("no calls during the drain")?;
    if !report.is_complete() {
        return Err(format!("the drain left {:?} / {:?}", report.blocked, report.failed).into());
    }

    // Follow: the call on the old route, the re-read after the notice, then direct.
    let (mut relayed, mut reread, mut direct) = (Vec::new(), Vec::new(), Vec::new());
    let detours: Arc<Mutex<HashMap<usize, u64>>> = Arc::default();
    let target = id(2);
    let client = TallyClient::new(&mesh.client, &target);
    for round in 0..moves {
        client.bump(Bump(0)).await?;
        let from = owner(&mesh, &target).await?;
        let to = mesh
            .nodes
            .iter()
            .find(|n| n.rid() != from.rid() && n.rid() != "a")
            .ok_or("no target")?
            .rid()
            .to_string();
        from.actors().relocate(&target, Some(&to)).await?;
        let before = reads(&mesh.client);
        let started = Instant::now();
        client.bump(Bump(0)).await?;
        relayed.push(started.elapsed());
        // Calls until the sender reads the store (its cached route was dropped).
        let mut calls = 1u64;
        loop {
            let started = Instant::now();
            client.bump(Bump(0)).await?;
            let took = started.elapsed();
            calls += 1;
            if reads(&mesh.client) > before {
                reread.push(took);
                break;
            }
            if calls > 10_000 {
                return Err("the notice never arrived".into());
            }
        }
        detours
            .lock()
            .map_err(|_| "poisoned")?
            .insert(round, calls - 1);
        let started = Instant::now();
        client.bump(Bump(0)).await?;
        direct.push(started.elapsed());
    }
    let detour_calls = {
        let detours = detours.lock().map_err(|_| "poisoned")?;
        detours.values().sum::<u64>() as f64 / detours.len().max(1) as f64
    };
    for rt in mesh.nodes.iter().chain([&mesh.client]) {
        rt.shutdown().await;
    }
    Ok(RelocationFigures {
        store: mesh.store,
        pause_idle,
        pause_loaded,
        pause_unit,
        baseline,
        during_drain,
        drained: report.moved.len(),
        drain_elapsed,
        follow_relayed: Latency::of(relayed).ok_or("no samples")?,
        follow_reread: Latency::of(reread).ok_or("no samples")?,
        direct: Latency::of(direct).ok_or("no samples")?,
        detour_calls,
    })
}
