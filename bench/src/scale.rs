//! `scale`: what an object costs on a node that holds many, beside kameo and a bare tokio
//! task measured the same way in the same run. Each measurement runs in a child process
//! of its own (`zlink-bench __scale KIND N`), so RSS shows one contestant only.

use std::process::Stdio;
use std::sync::Arc;

use tokio::io::AsyncReadExt;

use crate::BoxError;

/// The contestants of the fill measurement, as the child names them.
const KINDS: [&str; 5] = ["actor", "actor-redis", "spot", "kameo", "task"];
/// How long every node of the mesh calls Spots.
const MESH_CALL_SECONDS: u64 = 3;
/// The smaller of the two node sizes measured.
const SMALL: usize = 100_000;

/// Runs one child measurement and returns its JSON line.
pub async fn child(args: &[String]) -> Result<serde_json::Value, BoxError> {
    let exe = std::env::current_exe()?;
    let mut child = tokio::process::Command::new(exe)
        .arg("__scale")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout.read_to_string(&mut out).await?;
    }
    let status = child.wait().await?;
    if !status.success() {
        return Err(format!("the scale child {args:?} failed: {status}").into());
    }
    let last = out
        .lines()
        .last()
        .ok_or("the scale child printed nothing")?;
    Ok(serde_json::from_str(last)?)
}

/// A figure as a whole number, or `-` where the child did not measure it.
fn n(figure: &serde_json::Value) -> String {
    figure
        .as_f64()
        .map_or_else(|| "-".to_string(), |v| format!("{v:.0}"))
}

fn print_fill(f: &serde_json::Value) {
    let closed = match f["left_bytes_per_closed_object"].as_f64() {
        Some(_) => format!(
            "per closed object {} B of RSS and {} B of heap still held; refilled, RSS grew {} B \
             per object",
            n(&f["left_bytes_per_closed_object"]),
            n(&f["left_heap_bytes_per_closed_object"]),
            n(&f["refill_rss_growth_bytes_per_object"]),
        ),
        None => "not closed (see the embedded store's figures)".to_string(),
    };
    println!(
        "{:>17} x{}: {} B per idle object ({} B of heap); creation {}/s in the first tenth, \
         {}/s in the last; one-way {}/s over {} IDs, {}/s over all; {closed}",
        f["kind"].as_str().unwrap_or("?"),
        f["objects"],
        n(&f["idle_bytes_per_object"]),
        n(&f["idle_heap_bytes_per_object"]),
        n(&f["creation_first_tenth_per_s"]),
        n(&f["creation_last_tenth_per_s"]),
        n(&f["sends_few_ids_per_s"]),
        crate::scale_fill::FEW_IDS,
        n(&f["sends_all_ids_per_s"]),
    );
}

fn ratio(a: &serde_json::Value, b: &serde_json::Value) -> Option<f64> {
    let (a, b) = (a.as_f64()?, b.as_f64()?);
    (b > 0.0).then(|| crate::round3(a / b))
}

/// The figures of one node size, with the ratios to the baselines.
async fn one_size(objects: usize) -> Result<serde_json::Value, BoxError> {
    let mut by_kind = serde_json::Map::new();
    for kind in KINDS {
        let figures = child(&[kind.to_string(), objects.to_string()]).await?;
        print_fill(&figures);
        by_kind.insert(kind.to_string(), figures);
    }
    let routes = child(&["routes".to_string(), objects.to_string()]).await?;
    println!(
        "  route cache x{objects}: {} B of heap per route to another node; sends {}/s from the owner, \
         {}/s from another node cold, {}/s warm",
        n(&routes["route_heap_bytes"]),
        n(&routes["owner_first_sends_per_s"]),
        n(&routes["remote_cold_sends_per_s"]),
        n(&routes["remote_warm_sends_per_s"]),
    );
    by_kind.insert("routes".to_string(), routes);
    let idle = |kind: &str| &by_kind[kind]["idle_bytes_per_object"];
    let sends = |kind: &str, which: &str| &by_kind[kind][which];
    let summary = serde_json::json!({
        "actor_idle_vs_kameo": ratio(idle("actor"), idle("kameo")),
        "actor_idle_vs_task": ratio(idle("actor"), idle("task")),
        "spot_idle_vs_kameo": ratio(idle("spot"), idle("kameo")),
        "actor_sends_all_vs_few_ids": ratio(sends("actor", "sends_all_ids_per_s"), sends("actor", "sends_few_ids_per_s")),
        "actor_sends_all_ids_vs_kameo": ratio(sends("actor", "sends_all_ids_per_s"), sends("kameo", "sends_all_ids_per_s")),
    });
    println!("  at {objects}: {summary}");
    by_kind.insert("ratios".to_string(), summary);
    Ok(serde_json::Value::Object(by_kind))
}

/// Runs `scale` up to `max_objects` per node.
pub async fn run(max_objects: usize) -> Result<(), BoxError> {
    let mut sizes = vec![SMALL.min(max_objects)];
    if max_objects > SMALL {
        sizes.push(max_objects);
    }
    let mut report = serde_json::Map::new();
    report.insert("benchmark".into(), "scale".into());
    for objects in sizes {
        report.insert(objects.to_string(), one_size(objects).await?);
    }
    let mesh = crate::scale_mesh::run(MESH_CALL_SECONDS).await?;
    println!(
        "mesh of {} nodes (processes) over redis: all ready {} ms after the first started; \
         one more node ready in {} ms, seen by all in {} ms; {} Spot calls/s over the mesh; \
         RSS per node {} KiB mean, {} KiB max; connections per node {} mean, {} max",
        crate::scale_mesh::NODES,
        n(&mesh["all_ready_ms"]),
        n(&mesh["join_ready_ms"]),
        n(&mesh["join_seen_by_all_ms"]),
        n(&mesh["spot_calls_per_s"]),
        n(&mesh["rss_kib_mean"]),
        n(&mesh["rss_kib_max"]),
        mesh["connections_mean"],
        n(&mesh["connections_max"]),
    );
    report.insert("mesh".into(), mesh);
    let cluster = child(&["cluster".to_string(), "0".to_string()]).await?;
    println!(
        "directory on a 3-master Redis Cluster: {} creations/s, {} cold lookups/s; a master \
         killed: {} lookups failed, the longest stall {} ms, the cluster healthy again after \
         {} ms",
        n(&cluster["creations_per_s"]),
        n(&cluster["cold_lookups_per_s"]),
        n(&cluster["lookups_failed_after_master_kill"]),
        n(&cluster["longest_lookup_stall_ms"]),
        n(&cluster["cluster_healthy_after_ms"]),
    );
    report.insert("redis_cluster".into(), cluster);
    println!("{}", serde_json::Value::Object(report));
    Ok(())
}

/// The child side: runs the measurement `args` names and prints its JSON line.
pub async fn run_child(args: &[String]) -> Result<(), BoxError> {
    if let [kind, rest @ ..] = args {
        if kind == "mesh-node" {
            return crate::scale_mesh::node(rest).await;
        }
        if kind == "mesh" && rest.is_empty() {
            println!("{}", crate::scale_mesh::run(MESH_CALL_SECONDS).await?);
            return Ok(());
        }
    }
    let [kind, objects] = args else {
        return Err(format!("usage: __scale KIND OBJECTS, not {args:?}").into());
    };
    let objects: usize = objects.parse()?;
    use crate::scale_fill::{
        measure, node_on, BareTasks, Cycle, KameoActors, ZlinkActors, ZlinkSpots,
    };
    let embedded = <dyn zlink::store::LocationStore>::in_memory;
    let figures = match kind.as_str() {
        "actor" => {
            let rt = Arc::new(node_on(embedded(), objects).await?);
            let kind = "zlink_actor";
            measure(ZlinkActors { rt, kind }, objects, Cycle::Full).await?
        }
        "actor-redis" => {
            // Held until the figures are out: dropping it stops the server.
            let redis = zlink_testkit::RedisServer::start()?;
            let options = zlink::store::RedisOptions::new(redis.url(), "bench-scale");
            let store = Arc::new(zlink::store::RedisLocationStore::new(options)?);
            let rt = Arc::new(node_on(store, objects).await?);
            let kind = "zlink_actor_redis";
            let figures = measure(ZlinkActors { rt, kind }, objects, Cycle::FillAndSend).await?;
            println!("{figures}");
            drop(redis);
            std::process::exit(0)
        }
        "spot" => {
            let rt = Arc::new(node_on(embedded(), objects).await?);
            measure(ZlinkSpots(rt), objects, Cycle::Full).await?
        }
        "kameo" => measure(KameoActors, objects, Cycle::Full).await?,
        "task" => measure(BareTasks::default(), objects, Cycle::Full).await?,
        "routes" => crate::scale_routes::route_bytes(objects).await?,
        "cluster" => crate::scale_cluster::run().await?,
        other => return Err(format!("unknown scale measurement {other:?}").into()),
    };
    println!("{figures}");
    // A node of a million objects takes a while to wind down; the figures are out.
    std::process::exit(0)
}
