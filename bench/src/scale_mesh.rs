//! `scale`'s mesh: 16 nodes as 16 processes on 127.0.0.1 over one private redis-server.
//! How long until every node is ready (each connected to the other 15), each node's RSS
//! and connections, what one more node joining costs, and Spot calls per second with the
//! Spots spread over the mesh and every node calling.
//!
//! Each node is `zlink-bench __scale mesh-node RID REDIS_URL NODES SPOTS SECONDS`: it
//! prints one JSON line per stage, and goes on to the next when a line arrives on its
//! stdin.

use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::time::Instant;
use zlink::object::{Spot, SpotContext};
use zlink::Runtime;

use crate::stats::rss_kib;
use crate::BoxError;

/// Nodes in the mesh.
pub const NODES: usize = 16;
/// Spots each node creates.
const SPOTS_PER_NODE: usize = 64;
/// Callers per node.
const CALLERS: usize = 8;
/// How long a node has to see all the others.
const READY_WITHIN: Duration = Duration::from_secs(120);

/// What a mesh call asks.
#[derive(Debug, serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(reply = Ticked)]
pub struct Tick;

/// A mesh call's answer.
#[derive(Debug, serde::Serialize, serde::Deserialize, zlink::Message)]
pub struct Ticked(pub u64);

/// A Spot with eight bytes of state that counts the calls it took.
pub struct MeshSpot(u64);

#[zlink::spot(type = "scale-mesh", relocation = disable)]
impl MeshSpot {
    #[handler]
    async fn tick(&mut self, _t: Tick, _ctx: &SpotContext) -> zlink::Result<Ticked> {
        self.0 += 1;
        Ok(Ticked(self.0))
    }
}

impl Spot for MeshSpot {}

fn spot_id(node: usize, index: usize) -> String {
    format!("mesh-{node}-{index}")
}

/// One node process, as the parent drives it.
struct NodeProcess {
    /// Held: dropping it kills the process.
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl NodeProcess {
    fn spawn(index: usize, redis_url: &str, nodes: usize, seconds: u64) -> Result<Self, BoxError> {
        let mut child = tokio::process::Command::new(std::env::current_exe()?)
            .args(["__scale", "mesh-node"])
            .arg(index.to_string())
            .arg(redis_url)
            .arg(nodes.to_string())
            .arg(seconds.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        Ok(NodeProcess {
            _child: child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        })
    }

    async fn next(&mut self) -> Result<serde_json::Value, BoxError> {
        let line = self
            .lines
            .next_line()
            .await?
            .ok_or("a mesh node ended early")?;
        Ok(serde_json::from_str(&line)?)
    }

    async fn go_on(&mut self) -> Result<(), BoxError> {
        Ok(self.stdin.write_all(b"go\n").await?)
    }
}

/// Sums `field` over `figures`, and its largest value.
fn total_and_max(figures: &[serde_json::Value], field: &str) -> (f64, f64) {
    let values = figures.iter().filter_map(|f| f[field].as_f64());
    values.fold((0.0, 0.0), |(sum, max), v| (sum + v, f64::max(max, v)))
}

/// Runs the mesh measurement; `seconds` is the call phase's length.
pub async fn run(seconds: u64) -> Result<serde_json::Value, BoxError> {
    let redis = zlink_testkit::RedisServer::start()?;
    let started = Instant::now();
    let mut nodes = Vec::new();
    for index in 0..NODES {
        nodes.push(NodeProcess::spawn(index, &redis.url(), NODES, seconds)?);
    }
    let mut ready = Vec::new();
    for node in &mut nodes {
        ready.push(node.next().await?);
    }
    let all_ready_ms = started.elapsed().as_secs_f64() * 1000.0;
    // One more node: until it is ready, and until every node sees it.
    let joined_at = Instant::now();
    let mut late = NodeProcess::spawn(NODES, &redis.url(), NODES + 1, seconds)?;
    let late_ready = late.next().await?;
    let join_ready_ms = joined_at.elapsed().as_secs_f64() * 1000.0;
    for node in &mut nodes {
        node.go_on().await?; // look for the late node
        node.next().await?;
    }
    let join_seen_ms = joined_at.elapsed().as_secs_f64() * 1000.0;
    nodes.push(late);
    // Create the Spots everywhere, then call.
    for node in &mut nodes {
        node.go_on().await?;
    }
    for node in &mut nodes {
        node.next().await?;
    }
    for node in &mut nodes {
        node.go_on().await?;
    }
    let mut called = Vec::new();
    for node in &mut nodes {
        called.push(node.next().await?);
    }
    // The figures are in: the nodes are killed (dropped), not drained one by one.
    drop(nodes);
    let (calls_per_s, _) = total_and_max(&called, "calls_per_s");
    let (rss_sum, rss_max) = total_and_max(&called, "rss_kib");
    let (connections_sum, connections_max) = total_and_max(&called, "connections");
    let count = called.len() as f64;
    Ok(serde_json::json!({
        "nodes": NODES + 1,
        "all_ready_ms": all_ready_ms.round(),
        "slowest_node_ready_ms": total_and_max(&ready, "ready_ms").1,
        "join_ready_ms": join_ready_ms.round(),
        "join_node_ready_ms": late_ready["ready_ms"],
        "join_seen_by_all_ms": join_seen_ms.round(),
        "spot_calls_per_s": calls_per_s.round(),
        "rss_kib_mean": (rss_sum / count).round(),
        "rss_kib_max": rss_max,
        "connections_mean": (connections_sum / count * 10.0).round() / 10.0,
        "connections_max": connections_max,
    }))
}

async fn wait_line(stdin: &mut Lines<BufReader<tokio::io::Stdin>>) -> Result<(), BoxError> {
    stdin.next_line().await?.ok_or("the parent went away")?;
    Ok(())
}

/// One node of the mesh (the child process).
pub async fn node(args: &[String]) -> Result<(), BoxError> {
    let [index, redis_url, nodes, seconds] = args else {
        return Err(format!("usage: mesh-node INDEX REDIS_URL NODES SECONDS, not {args:?}").into());
    };
    let (index, nodes): (usize, usize) = (index.parse()?, nodes.parse()?);
    let seconds: u64 = seconds.parse()?;
    let started = Instant::now();
    let options = zlink::store::RedisOptions::new(redis_url.clone(), "bench-mesh");
    let rt = Runtime::builder()
        .mesh_name("bench-mesh")
        .rid(format!("mesh-{index}"))
        .listen("tcp://127.0.0.1:0")
        .location_store(Arc::new(zlink::store::RedisLocationStore::new(options)?))
        .discovery_interval(Duration::from_millis(200))
        .spot_type(MeshSpot::spot_type(|_| MeshSpot(0))?)
        .build()?
        .start()
        .await?;
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let peers = |count: usize| rt.nodes().wait_for(READY_WITHIN, move |p| p.len() >= count);
    peers(nodes - 1).await?;
    let ready_ms = started.elapsed().as_secs_f64() * 1000.0;
    println!("{}", serde_json::json!({ "ready_ms": ready_ms.round() }));
    if index < NODES {
        wait_line(&mut stdin).await?;
        peers(nodes).await?;
        println!("{}", serde_json::json!({ "sees_late_node": true }));
    }
    wait_line(&mut stdin).await?;
    for spot in 0..SPOTS_PER_NODE {
        rt.spots()
            .get_or_create(
                &spot_id(index, spot),
                MeshSpot::STABLE_TYPE,
                zlink::Bytes::new(),
            )
            .await?;
    }
    println!("{}", serde_json::json!({ "created": SPOTS_PER_NODE }));
    wait_line(&mut stdin).await?;
    let calls = call_for(&rt, NODES + 1, Duration::from_secs(seconds)).await?;
    println!(
        "{}",
        serde_json::json!({
            "calls_per_s": (calls as f64 / seconds as f64).round(),
            "rss_kib": rss_kib(),
            "connections": rt.status().open_connections,
        })
    );
    let _ = stdin.next_line().await;
    rt.shutdown().await;
    Ok(())
}

/// Calls Spots spread over `nodes` nodes' IDs, [`CALLERS`] at a time, for `duration`.
async fn call_for(rt: &Runtime, nodes: usize, duration: Duration) -> Result<u64, BoxError> {
    let calls = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + duration;
    let mut callers = Vec::new();
    for caller in 0..CALLERS {
        let (handle, calls) = (rt.handle().clone(), calls.clone());
        callers.push(tokio::spawn(async move {
            let mut k = caller * 7_919;
            while Instant::now() < until {
                k = k.wrapping_add(104_729);
                let id = spot_id(k % nodes, (k / nodes) % SPOTS_PER_NODE);
                handle.spots().request(&id, &Tick).await?;
                calls.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, BoxError>(())
        }));
    }
    for caller in callers {
        caller.await??;
    }
    Ok(calls.load(Ordering::Relaxed))
}
