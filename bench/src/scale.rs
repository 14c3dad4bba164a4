//! `scale`: what an object costs on a node that holds many, beside kameo and a bare tokio
//! task measured the same way in the same run. Each measurement runs in a child process
//! of its own (`zlink-bench __scale KIND N`), so RSS shows one contestant only.

use std::process::Stdio;

use tokio::io::AsyncReadExt;

use crate::BoxError;

/// The contestants of the fill measurement, as the child names them.
const KINDS: [&str; 4] = ["actor", "spot", "kameo", "task"];
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

fn print_fill(f: &serde_json::Value) {
    println!(
        "{:>12} x{:>8}: {:>8} B per idle object; creation {:>8}/s first tenth, {:>8}/s last tenth; \
         one-way {:>9}/s over {} IDs, {:>9}/s over all; per closed object {:>7} B of RSS and {:>6} B \
         of heap still held; refilled, RSS grew {:>6} B per object",
        f["kind"].as_str().unwrap_or("?"),
        f["objects"],
        f["idle_bytes_per_object"],
        f["creation_first_tenth_per_s"],
        f["creation_last_tenth_per_s"],
        f["sends_few_ids_per_s"],
        crate::scale_fill::FEW_IDS,
        f["sends_all_ids_per_s"],
        f["left_bytes_per_closed_object"],
        f["left_heap_bytes_per_closed_object"],
        f["refill_rss_growth_bytes_per_object"],
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
        routes["route_heap_bytes"],
        routes["owner_first_sends_per_s"],
        routes["remote_cold_sends_per_s"],
        routes["remote_warm_sends_per_s"],
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
    println!("{}", serde_json::Value::Object(report));
    Ok(())
}

/// The child side: runs the measurement `args` names and prints its JSON line.
pub async fn run_child(args: &[String]) -> Result<(), BoxError> {
    let [kind, objects] = args else {
        return Err(format!("usage: __scale KIND OBJECTS, not {args:?}").into());
    };
    let objects: usize = objects.parse()?;
    use crate::scale_fill::{measure, BareTasks, KameoActors, ZlinkActors, ZlinkSpots};
    let figures = match kind.as_str() {
        "actor" | "spot" => {
            let rt = std::sync::Arc::new(crate::scale_fill::embedded_node(objects).await?);
            if kind == "actor" {
                measure(ZlinkActors(rt), objects).await?
            } else {
                measure(ZlinkSpots(rt), objects).await?
            }
        }
        "kameo" => measure(KameoActors, objects).await?,
        "task" => measure(BareTasks::default(), objects).await?,
        "routes" => crate::scale_routes::route_bytes(objects).await?,
        other => return Err(format!("unknown scale measurement {other:?}").into()),
    };
    println!("{figures}");
    // A node of a million objects takes a while to wind down; the figures are out.
    std::process::exit(0)
}
