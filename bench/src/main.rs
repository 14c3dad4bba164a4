//! `zlink-bench`: what zlink costs over raw zeromq, measured side by side in one run.
//!
//! - `rpc`: RouteMesh `request_to_channel` vs a raw zeromq DEALER -> ROUTER echo, the same
//!   echo with CBOR-encoded payloads, a tarpc echo over TCP, and a raw tokio TCP echo
//!   (the socket limit);
//! - `clientserver`: ClientServer request/reply vs the same three baselines;
//! - `fanout`: one publisher to 4 subscribers, zlink fanout vs raw zeromq PUB/SUB;
//! - `objects`: Spot requests by ID vs channel requests on the same nodes, local Actor
//!   requests and sends vs kameo's ask/tell in one process, route-cache
//!   misses, and the creation rate;
//! - `relocation`: the pause of a live move, the p99 of requests during a host drain
//!   against the same load with no move, and the cost of a Message Follow hop.
//!
//! - `stream`: STREAM sessions: a session handler's echo and a bound Actor's echo on
//!   another node vs a raw tokio echo with the same framing, and the memory of 10,000
//!   idle sessions.
//!
//! - `scale`: what an idle object costs on a node holding 100,000 and 1,000,000, the
//!   creation rate as it fills, one-way sends over few and over all IDs, and what a
//!   closed object leaves, beside kameo and a bare tokio task.
//!
//! Each prints readable lines, then one JSON object as the last line.

mod drive;
mod fanout;
mod heap;
mod instances;
mod local_actors;
mod objects;
mod raw;
mod raw_cbor;
mod raw_tcp;
mod relocation;
mod scale;
mod scale_cluster;
mod scale_fill;
mod scale_mesh;
mod scale_routes;
mod stats;
mod stream;
mod stream_moves;
mod tarpc_echo;
mod zlink_rpc;

use std::process::ExitCode;
use std::time::Duration;

use stats::{Latency, Throughput};

#[global_allocator]
static ALLOCATOR: heap::CountingAllocator = heap::CountingAllocator;

/// Errors of the benchmark steps.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

const USAGE: &str = "\
usage: zlink-bench (rpc | clientserver | fanout | objects | local | relocation | stream | scale) [--seconds S] [--requests N] [--objects N] [--metrics]

  rpc            raw zeromq DEALER->ROUTER echo vs zlink RouteMesh request_to_channel
                 on 127.0.0.1, 64-byte payloads: sequential latency and pipelined
                 throughput (64 in flight); also two baselines: the raw echo with
                 CBOR-encoded payloads (pipelined throughput: what zlink costs beyond
                 serialization), a tarpc echo over TCP with bincode (latency and
                 pipelined throughput), and a raw tokio TCP echo with a 4-byte length
                 prefix (the socket limit: latency and pipelined throughput)
  clientserver   the same baselines vs a zlink ClientServer channel
  fanout         one publisher to 4 subscribers, 64-byte events: raw zeromq PUB/SUB
                 vs zlink fanout; delivered events per second per subscriber
  objects        Spot request by ID (warm route cache) vs a channel request between
                 the same two nodes: sequential latency and pipelined throughput (64
                 callers over 64 Spots vs 64 in flight); a node without a route cache:
                 store reads per call and latency of a miss; get_or_create per second.
                 The store is a private redis-server when installed. Then Instance
                 Spot cold activation on 3 nodes (one at a time, 100 concurrent distinct
                 IDs, 50 concurrent calls for one ID: p50/p99, store calls, factory
                 runs), Logical Multicast to 100 Spots on 3 nodes vs the same deliveries
                 as direct one-way sends, and the local comparison below
  local          a local Actor's request and one-way send by ID in one process vs
                 kameo's ask and tell (same payload, same mailbox bound): sequential
                 latency, pipelined requests (64 callers, one actor each), sends/s
  relocation     three nodes and 100 preserve Actors: the pause of one move (seal to
                 the target's first dispatch), idle and under load (200 moves each);
                 the p99 of 4 senders' requests during relocate_all of the 100 Actors
                 vs the same load with no move; the added latency of one Message
                 Follow hop and how many calls take the detour before the notice
                 drops the cached route
  stream         STREAM sessions on 127.0.0.1, 64-byte Raw payloads: a session
                 handler's echo vs a raw tokio echo with the same 6-byte prefix and
                 header (one connection, 64 requests in flight); the echo through a
                 bound Actor on another node (relayed there, answered back), with
                 p50/p99 one at a time against the raw echo's; the RSS growth per
                 connection of 10,000 idle sessions vs a raw tokio server holding
                 each on a reading task (the clients run in a child process); 100
                 clients bound to Actors that all move at once under load: client
                 disconnects, pushes lost, duplicated or reordered, the longest
                 silence each client saw (p50/p99) vs the second before the moves
  scale          one node filled with 100,000 and then --objects idle objects
                 (8-byte state), each contestant in a child process of its own:
                 zlink Actors and Spots on the embedded store, zlink Actors on a
                 private redis-server, kameo actors and bare tokio tasks on a bounded
                 mpsc channel. RSS and live heap per idle object, creations per second
                 in the first and the last tenth, one-way sends per second over 100
                 IDs and over all of them, what a closed object still holds (RSS once
                 freed pages went back, and live heap) and how much RSS a refill with
                 the same IDs adds; then the heap one cached route to another node
                 holds, at that many routes. Last, 16 nodes as 16 processes over a
                 private redis-server: the time until every node is ready, one more
                 node joining (ready, and seen by all), Spot calls per second with 64
                 Spots per node and every node calling, RSS and connections per node;
                 and the directory on a 3-master Redis Cluster (a replica each): Spot
                 creations and cold lookups per second, and what killing a master
                 costs the lookups (failures, the longest stall, time to healthy)
  --seconds S    how long each pipelined or publishing run lasts, 1..=60 (default 3)
  --requests N   measured sequential round trips, 100..=1000000 (default 5000)
  --objects N    scale only: the larger node size, 1000..=10000000 (default 1000000)
  --curve        rpc only: also run zlink with ZMTP CURVE on both nodes and report
                 its ratios (to raw and to zlink over NULL, same run)
  --metrics      install the Prometheus recorder first (zlink's instruments then
                 record; without it they are no-ops): run with and without to see
                 what the metrics cost

  The last output line is a JSON object with the ratios.";

/// Which benchmark to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bench {
    Rpc,
    ClientServer,
    Fanout,
    Objects,
    Local,
    Relocation,
    Stream,
    Scale,
}

/// What one `rpc` run does.
#[derive(Debug, Clone, Copy)]
struct RpcPlan {
    payload_bytes: usize,
    warmup: usize,
    requests: usize,
    window: usize,
    duration: Duration,
    curve: bool,
    /// Whether the Prometheus recorder is installed before the run.
    metrics: bool,
    /// `scale`: the larger node size.
    objects: usize,
}

impl Default for RpcPlan {
    fn default() -> Self {
        RpcPlan {
            payload_bytes: 64,
            warmup: 1_000,
            requests: 5_000,
            window: 64,
            duration: Duration::from_secs(3),
            curve: false,
            metrics: false,
            objects: 1_000_000,
        }
    }
}

fn parse_args(args: &[String]) -> Result<(Bench, RpcPlan), String> {
    let (command, flags) = args.split_first().ok_or("missing command")?;
    let bench = match command.as_str() {
        "rpc" => Bench::Rpc,
        "clientserver" => Bench::ClientServer,
        "fanout" => Bench::Fanout,
        "objects" => Bench::Objects,
        "local" => Bench::Local,
        "relocation" => Bench::Relocation,
        "stream" => Bench::Stream,
        "scale" => Bench::Scale,
        other => return Err(format!("unknown command {other:?}")),
    };
    let mut plan = RpcPlan::default();
    let mut flags = flags.iter();
    while let Some(flag) = flags.next() {
        let mut value = |min: u64, max: u64| -> Result<u64, String> {
            let text = flags.next().ok_or(format!("{flag} needs a value"))?;
            match text.parse::<u64>() {
                Ok(n) if (min..=max).contains(&n) => Ok(n),
                _ => Err(format!(
                    "{flag} must be a whole number from {min} to {max}, not {text:?}"
                )),
            }
        };
        if flag == "--curve" {
            plan.curve = true;
            continue;
        }
        if flag == "--metrics" {
            plan.metrics = true;
            continue;
        }
        match flag.as_str() {
            "--seconds" => plan.duration = Duration::from_secs(value(1, 60)?),
            "--requests" => {
                plan.requests =
                    usize::try_from(value(100, 1_000_000)?).map_err(|e| e.to_string())?
            }
            "--objects" => {
                plan.objects =
                    usize::try_from(value(1_000, 10_000_000)?).map_err(|e| e.to_string())?
            }
            other => return Err(format!("unknown flag {other:?}")),
        }
    }
    Ok((bench, plan))
}

/// Latency and throughput of one system.
struct Figures {
    latency: Latency,
    throughput: Throughput,
}

fn report(name: &str, plan: &RpcPlan, f: &Figures) {
    println!("{name}:");
    println!(
        "  sequential: {} round trips after {} warm-up: p50 {:.1} us, p99 {:.1} us, mean {:.1} us",
        f.latency.count, plan.warmup, f.latency.p50_us, f.latency.p99_us, f.latency.mean_us
    );
    report_pipelined(plan, &f.throughput);
}

/// For a system measured for throughput only.
fn report_throughput(name: &str, plan: &RpcPlan, throughput: &Throughput) {
    println!("{name}:");
    report_pipelined(plan, throughput);
}

fn report_pipelined(plan: &RpcPlan, throughput: &Throughput) {
    println!(
        "  pipelined:  {} in flight: {} round trips in {:.2} s = {:.0} msgs/s",
        plan.window,
        throughput.messages,
        throughput.elapsed.as_secs_f64(),
        throughput.per_second()
    );
}

fn latency(samples: Vec<Duration>) -> Result<Latency, BoxError> {
    Latency::of(samples).ok_or_else(|| "no latency samples".into())
}

async fn bench_raw(plan: &RpcPlan, payload: &[u8]) -> Result<Figures, BoxError> {
    let server = raw::EchoServer::start().await?;
    let outcome = async {
        let mut socket = raw::connect(server.endpoint()).await?;
        let samples = raw::sequential(&mut socket, payload, plan.warmup, plan.requests).await?;
        let throughput = raw::pipelined(&mut socket, payload, plan.window, plan.duration).await?;
        Ok::<_, BoxError>(Figures {
            latency: latency(samples)?,
            throughput,
        })
    }
    .await;
    server.stop();
    outcome
}

async fn bench_raw_tcp(plan: &RpcPlan, payload: &[u8]) -> Result<Figures, BoxError> {
    let server = raw_tcp::EchoServer::start().await?;
    let outcome = async {
        let samples =
            raw_tcp::sequential(server.addr(), payload, plan.warmup, plan.requests).await?;
        let throughput =
            raw_tcp::pipelined(server.addr(), payload, plan.window, plan.duration).await?;
        Ok::<_, BoxError>(Figures {
            latency: latency(samples)?,
            throughput,
        })
    }
    .await;
    server.stop();
    outcome
}

async fn bench_raw_cbor(plan: &RpcPlan, payload: &[u8]) -> Result<Throughput, BoxError> {
    let server = raw_cbor::start_server().await?;
    let outcome = async {
        let mut socket = raw_cbor::connect(server.endpoint()).await?;
        raw_cbor::warm_up(&mut socket, payload, plan.warmup).await?;
        raw_cbor::pipelined(&mut socket, payload, plan.window, plan.duration).await
    }
    .await;
    server.stop();
    outcome
}

async fn bench_tarpc(plan: &RpcPlan, payload: &[u8]) -> Result<Figures, BoxError> {
    let server = tarpc_echo::EchoServer::start().await?;
    let outcome = async {
        let client = tarpc_echo::connect(server.addr()).await?;
        let samples = tarpc_echo::sequential(&client, payload, plan.warmup, plan.requests).await?;
        let throughput =
            tarpc_echo::pipelined(&client, payload, plan.window, plan.duration).await?;
        Ok::<_, BoxError>(Figures {
            latency: latency(samples)?,
            throughput,
        })
    }
    .await;
    server.stop();
    outcome
}

async fn bench_zlink(plan: &RpcPlan, payload: &[u8], bench: Bench) -> Result<Figures, BoxError> {
    let pair = match bench {
        Bench::ClientServer => zlink_rpc::Pair::start_client_server().await?,
        _ => zlink_rpc::Pair::start(false).await?,
    };
    let outcome = async {
        let samples =
            zlink_rpc::sequential(&pair.client, payload, plan.warmup, plan.requests).await?;
        let throughput =
            zlink_rpc::pipelined(&pair.client, payload, plan.window, plan.duration).await?;
        Ok::<_, BoxError>(Figures {
            latency: latency(samples)?,
            throughput,
        })
    }
    .await;
    pair.shutdown().await;
    outcome
}

/// Rounds the NULL and CURVE pairs take turns in: each measures a tenth of the
/// sequential requests and of the pipelined time per turn, so the two see the same
/// machine (a fresh pair after a busy phase measured slower than it runs).
const CURVE_ROUNDS: usize = 10;

/// zlink over NULL and over CURVE, both pairs up at once and measured in alternation.
async fn bench_null_and_curve(
    plan: &RpcPlan,
    payload: &[u8],
) -> Result<(Figures, Figures), BoxError> {
    let null = zlink_rpc::Pair::start(false).await?;
    let curve = zlink_rpc::Pair::start(true).await?;
    let outcome = async {
        let per_round = (plan.requests / CURVE_ROUNDS).max(1);
        let slice = plan.duration / CURVE_ROUNDS as u32;
        let (mut samples, mut volume) = ([Vec::new(), Vec::new()], [(0u64, Duration::ZERO); 2]);
        for round in 0..CURVE_ROUNDS {
            // Who goes first alternates too.
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for side in order {
                let pair = [&null, &curve][side];
                let warmup = if round == 0 { plan.warmup } else { 0 };
                samples[side]
                    .extend(zlink_rpc::sequential(&pair.client, payload, warmup, per_round).await?);
                let run = zlink_rpc::pipelined(&pair.client, payload, plan.window, slice).await?;
                volume[side].0 += run.messages;
                volume[side].1 += run.elapsed;
            }
        }
        let [null_samples, curve_samples] = samples;
        let figures = |samples: Vec<Duration>, (messages, elapsed): (u64, Duration)| {
            Ok::<_, BoxError>(Figures {
                latency: latency(samples)?,
                throughput: Throughput { messages, elapsed },
            })
        };
        Ok::<_, BoxError>((
            figures(null_samples, volume[0])?,
            figures(curve_samples, volume[1])?,
        ))
    }
    .await;
    curve.shutdown().await;
    null.shutdown().await;
    outcome
}

async fn rpc(plan: RpcPlan, bench: Bench) -> Result<(), BoxError> {
    let payload: Vec<u8> = (0..plan.payload_bytes).map(|i| (i % 251) as u8).collect();
    let (name, label) = match bench {
        Bench::ClientServer => ("clientserver", "zlink (ClientServer channel, echo handler)"),
        _ => ("rpc", "zlink (RouteMesh request_to_channel, echo handler)"),
    };
    println!(
        "{name} benchmark: 127.0.0.1, {}-byte payloads, {} tokio worker threads",
        plan.payload_bytes,
        tokio::runtime::Handle::current().metrics().num_workers()
    );
    let socket = bench_raw_tcp(&plan, &payload).await?;
    report(
        "raw tokio TCP echo (4-byte length prefix: the socket limit)",
        &plan,
        &socket,
    );
    let raw = bench_raw(&plan, &payload).await?;
    report("raw zeromq (DEALER -> ROUTER echo)", &plan, &raw);
    let raw_cbor = bench_raw_cbor(&plan, &payload).await?;
    report_throughput(
        "raw zeromq + CBOR (same echo, ciborium-encoded payload both ways)",
        &plan,
        &raw_cbor,
    );
    let tarpc = bench_tarpc(&plan, &payload).await?;
    report("tarpc (echo service, TCP + bincode)", &plan, &tarpc);
    let zlink = bench_zlink(&plan, &payload, bench).await?;
    report(label, &plan, &zlink);
    // CURVE is compared with NULL measured in turns with it (the same slices, the same
    // machine state); zlink / raw above keeps its own whole-run measurement.
    let curve = if plan.curve && bench == Bench::Rpc {
        let (null, curve) = bench_null_and_curve(&plan, &payload).await?;
        report(
            "zlink over NULL, measured in turns with CURVE (ten rounds each)",
            &plan,
            &null,
        );
        report(
            "zlink over CURVE (same, both nodes encrypting)",
            &plan,
            &curve,
        );
        Some((null, curve))
    } else {
        None
    };

    let throughput_ratio = zlink.throughput.per_second() / raw.throughput.per_second();
    let latency_ratio = zlink.latency.p50_us / raw.latency.p50_us;
    let targets = " (targets: throughput >= 0.8, p50 latency <= 1.2)";
    println!(
        "zlink / raw: throughput {throughput_ratio:.2}, p50 latency {latency_ratio:.2}{targets}"
    );
    let vs_raw_cbor = zlink.throughput.per_second() / raw_cbor.per_second();
    let vs_tarpc_throughput = zlink.throughput.per_second() / tarpc.throughput.per_second();
    let vs_tarpc_p50 = zlink.latency.p50_us / tarpc.latency.p50_us;
    println!("zlink / raw + CBOR: throughput {vs_raw_cbor:.2}");
    println!("zlink / tarpc: throughput {vs_tarpc_throughput:.2}, p50 latency {vs_tarpc_p50:.2}");
    let vs_socket = zlink.throughput.per_second() / socket.throughput.per_second();
    let raw_vs_socket = raw.throughput.per_second() / socket.throughput.per_second();
    let vs_socket_p50 = zlink.latency.p50_us / socket.latency.p50_us;
    println!(
        "zlink / raw tokio TCP: throughput {vs_socket:.2}, p50 latency {vs_socket_p50:.2} \
         (raw zeromq / raw tokio TCP: throughput {raw_vs_socket:.2})"
    );
    let summary = serde_json::json!({
        "benchmark": name,
        "payload_bytes": plan.payload_bytes,
        "sequential_requests": plan.requests,
        "pipelined_window": plan.window,
        "pipelined_seconds": plan.duration.as_secs_f64(),
        "raw_pipelined_msgs_per_s": raw.throughput.per_second().round(),
        "zlink_pipelined_msgs_per_s": zlink.throughput.per_second().round(),
        "throughput_ratio": round3(throughput_ratio),
        "raw_p50_us": round3(raw.latency.p50_us),
        "raw_p99_us": round3(raw.latency.p99_us),
        "zlink_p50_us": round3(zlink.latency.p50_us),
        "zlink_p99_us": round3(zlink.latency.p99_us),
        "latency_ratio": round3(latency_ratio),
        "p99_latency_ratio": round3(zlink.latency.p99_us / raw.latency.p99_us),
        "raw_cbor_pipelined_msgs_per_s": raw_cbor.per_second().round(),
        "tarpc_pipelined_msgs_per_s": tarpc.throughput.per_second().round(),
        "tarpc_p50_us": round3(tarpc.latency.p50_us),
        "tarpc_p99_us": round3(tarpc.latency.p99_us),
        "ratio_vs_tarpc_throughput": round3(vs_tarpc_throughput),
        "ratio_vs_tarpc_p50": round3(vs_tarpc_p50),
        "ratio_vs_raw_cbor_throughput": round3(vs_raw_cbor),
        "socket_pipelined_msgs_per_s": socket.throughput.per_second().round(),
        "socket_p50_us": round3(socket.latency.p50_us),
        "ratio_vs_socket_throughput": round3(vs_socket),
        "ratio_vs_socket_p50": round3(vs_socket_p50),
        "raw_zeromq_vs_socket_throughput": round3(raw_vs_socket),
    });
    let summary = match (curve, summary) {
        (Some((null, curve)), serde_json::Value::Object(mut fields)) => {
            let per_second = curve.throughput.per_second();
            println!(
                "CURVE: throughput {:.2} of raw, {:.2} of zlink over NULL; p50 latency {:.2} of NULL (targets: >= 0.7, <= 1.2)",
                per_second / raw.throughput.per_second(),
                per_second / null.throughput.per_second(),
                curve.latency.p50_us / null.latency.p50_us
            );
            for (key, value) in [
                ("curve_pipelined_msgs_per_s", per_second.round()),
                (
                    "curve_throughput_ratio",
                    round3(per_second / raw.throughput.per_second()),
                ),
                (
                    "curve_vs_null_throughput",
                    round3(per_second / null.throughput.per_second()),
                ),
                (
                    "curve_vs_null_p50",
                    round3(curve.latency.p50_us / null.latency.p50_us),
                ),
                ("curve_p50_us", round3(curve.latency.p50_us)),
            ] {
                fields.insert(key.into(), serde_json::json!(value));
            }
            serde_json::Value::Object(fields)
        }
        (_, summary) => summary,
    };
    println!("{summary}");
    Ok(())
}

async fn objects(plan: RpcPlan) -> Result<(), BoxError> {
    let payload: Vec<u8> = (0..plan.payload_bytes).map(|i| (i % 251) as u8).collect();
    let f = objects::run(
        &payload,
        plan.warmup,
        plan.requests,
        plan.window,
        plan.duration,
    )
    .await?;
    println!(
        "objects benchmark: 127.0.0.1, {}-byte payloads, {} store, {} tokio worker threads",
        plan.payload_bytes,
        f.store,
        tokio::runtime::Handle::current().metrics().num_workers()
    );
    let figures = |name: &str, latency: &Latency, throughput: &Throughput| {
        println!("{name}:");
        println!(
            "  sequential: {} round trips: p50 {:.1} us, p99 {:.1} us",
            latency.count, latency.p50_us, latency.p99_us
        );
        report_pipelined(&plan, throughput);
    };
    figures(
        "channel request (echo handler)",
        &f.channel_latency,
        &f.channel_throughput,
    );
    figures(
        "Spot request by ID, warm route cache (echo Spot)",
        &f.spot_latency,
        &f.spot_throughput,
    );
    println!("Spot request by ID, route cache off (every call a miss):");
    println!(
        "  {} round trips: p50 {:.1} us, p99 {:.1} us; {:.2} store reads per call",
        f.cold_latency.count, f.cold_latency.p50_us, f.cold_latency.p99_us, f.reads_per_miss
    );
    println!(
        "get_or_create: {} Spots in {:.2} s = {:.0} per second (16 at a time)",
        f.creations.messages,
        f.creations.elapsed.as_secs_f64(),
        f.creations.per_second()
    );
    let p50_ratio = f.channel_latency.p50_us / f.spot_latency.p50_us;
    let throughput_ratio = f.spot_throughput.per_second() / f.channel_throughput.per_second();
    println!(
        "Spot / channel: throughput {throughput_ratio:.2}, speed at p50 {p50_ratio:.2} (target >= 0.9); a miss adds {:.1} us at p50",
        f.cold_latency.p50_us - f.spot_latency.p50_us
    );
    let instances = instances::run(plan.duration.min(Duration::from_secs(3))).await?;
    println!(
        "Instance Spot cold activation, one first call at a time: p50 {:.1} us, p99 {:.1} us",
        instances.sequential.p50_us, instances.sequential.p99_us
    );
    println!(
        "  100 concurrent first calls for distinct IDs: p50 {:.1} us, p99 {:.1} us; {:.2} Location Store calls per activation (+2 Relocation Store: the kept first message, put and deleted)",
        instances.distinct.p50_us, instances.distinct.p99_us, instances.store_calls_per_activation
    );
    println!(
        "  50 concurrent first calls for one ID (from 3 nodes): p50 {:.1} us, p99 {:.1} us; {:.2} factory runs per ID",
        instances.same_id.p50_us, instances.same_id.p99_us, instances.builds_per_same_id_round
    );
    let multicast_ratio = instances.multicast.per_second() / instances.direct.per_second();
    println!(
        "Logical Multicast to {} Spots on 3 nodes: {:.0} deliveries/s; the same as direct one-way sends: {:.0}/s; multicast / direct {multicast_ratio:.2} (target >= 1.0)",
        instances.subscribers,
        instances.multicast.per_second(),
        instances.direct.per_second()
    );
    let local = local_comparison(&plan, &payload).await?;
    let mut summary = serde_json::json!({
        "benchmark": "objects",
        "store": f.store,
        "payload_bytes": plan.payload_bytes,
        "channel_p50_us": round3(f.channel_latency.p50_us),
        "spot_p50_us": round3(f.spot_latency.p50_us),
        "spot_vs_channel_p50_speed": round3(p50_ratio),
        "channel_pipelined_msgs_per_s": f.channel_throughput.per_second().round(),
        "spot_pipelined_msgs_per_s": f.spot_throughput.per_second().round(),
        "spot_vs_channel_throughput": round3(throughput_ratio),
        "miss_p50_us": round3(f.cold_latency.p50_us),
        "miss_added_p50_us": round3(f.cold_latency.p50_us - f.spot_latency.p50_us),
        "store_reads_per_miss": round3(f.reads_per_miss),
        "creations_per_s": f.creations.per_second().round(),
        "activation_sequential_p50_us": round3(instances.sequential.p50_us),
        "activation_sequential_p99_us": round3(instances.sequential.p99_us),
        "activation_distinct_p50_us": round3(instances.distinct.p50_us),
        "activation_distinct_p99_us": round3(instances.distinct.p99_us),
        "activation_same_id_p50_us": round3(instances.same_id.p50_us),
        "activation_same_id_p99_us": round3(instances.same_id.p99_us),
        "activation_store_calls": round3(instances.store_calls_per_activation),
        "activation_builds_per_id": round3(instances.builds_per_same_id_round),
        "multicast_deliveries_per_s": instances.multicast.per_second().round(),
        "direct_send_deliveries_per_s": instances.direct.per_second().round(),
        "multicast_vs_direct": round3(multicast_ratio),
    });
    if let (Some(fields), serde_json::Value::Object(local)) = (summary.as_object_mut(), local) {
        fields.extend(local);
    }
    println!("{summary}");
    Ok(())
}

/// `relocation`: the pause of a move, the interruption of a drain, the follow hop.
async fn relocation(plan: RpcPlan) -> Result<(), BoxError> {
    let f = relocation::run(200, plan.duration).await?;
    println!(
        "relocation benchmark: 3 nodes, 100 preserve Actors (8-byte state), store: {}",
        f.store
    );
    let pause = |name: &str, l: &Latency| {
        println!(
            "  pause, {name}: {} moves: p50 {:.2} ms, p99 {:.2} ms (target p99 < 50 ms)",
            l.count,
            l.p50_us / 1000.0,
            l.p99_us / 1000.0
        )
    };
    pause("idle", &f.pause_idle);
    pause("4 senders loading other Actors", &f.pause_loaded);
    pause(
        "a SpotWide Spot and its 10 members as one unit, idle",
        &f.pause_unit,
    );
    println!(
        "  relocate_all: {} Actors in {:.1} ms; the {} requests that overlapped it: p99 {:.2} ms vs {:.2} ms with no move ({:.2}x), p50 {:.2} vs {:.2} ms",
        f.drained,
        f.drain_elapsed.as_secs_f64() * 1000.0,
        f.during_drain.count,
        f.during_drain.p99_us / 1000.0,
        f.baseline.p99_us / 1000.0,
        f.during_drain.p99_us / f.baseline.p99_us,
        f.during_drain.p50_us / 1000.0,
        f.baseline.p50_us / 1000.0
    );
    println!(
        "  follow: relayed call p50 {:.1} us vs direct {:.1} us (+{:.1} us per hop); the call after the notice re-reads the store: p50 {:.1} us; {:.2} calls took the detour per move (without the notice: every call for the route cache's max age, 15 s)",
        f.follow_relayed.p50_us,
        f.direct.p50_us,
        f.follow_relayed.p50_us - f.direct.p50_us,
        f.follow_reread.p50_us,
        f.detour_calls
    );
    let summary = serde_json::json!({
        "benchmark": "relocation",
        "store": f.store,
        "pause_idle_p50_ms": round3(f.pause_idle.p50_us / 1000.0),
        "pause_idle_p99_ms": round3(f.pause_idle.p99_us / 1000.0),
        "pause_loaded_p50_ms": round3(f.pause_loaded.p50_us / 1000.0),
        "pause_loaded_p99_ms": round3(f.pause_loaded.p99_us / 1000.0),
        "pause_unit_of_11_p50_ms": round3(f.pause_unit.p50_us / 1000.0),
        "pause_unit_of_11_p99_ms": round3(f.pause_unit.p99_us / 1000.0),
        "drain_actors": f.drained,
        "drain_ms": round3(f.drain_elapsed.as_secs_f64() * 1000.0),
        "request_p99_ms_no_move": round3(f.baseline.p99_us / 1000.0),
        "request_p99_ms_during_drain": round3(f.during_drain.p99_us / 1000.0),
        "drain_p99_ratio": round3(f.during_drain.p99_us / f.baseline.p99_us),
        "requests_during_drain": f.during_drain.count,
        "follow_relayed_p50_us": round3(f.follow_relayed.p50_us),
        "direct_p50_us": round3(f.direct.p50_us),
        "follow_added_p50_us_per_hop": round3(f.follow_relayed.p50_us - f.direct.p50_us),
        "reread_after_notice_p50_us": round3(f.follow_reread.p50_us),
        "detour_calls_per_move": round3(f.detour_calls),
    });
    println!("{summary}");
    Ok(())
}

/// `local`: only the local Actor comparison with kameo.
async fn local(plan: RpcPlan) -> Result<(), BoxError> {
    let payload: Vec<u8> = (0..plan.payload_bytes).map(|i| (i % 251) as u8).collect();
    println!(
        "local Actor benchmark: one process, {}-byte payloads, {} tokio worker threads",
        plan.payload_bytes,
        tokio::runtime::Handle::current().metrics().num_workers()
    );
    let mut summary =
        serde_json::json!({ "benchmark": "local", "payload_bytes": plan.payload_bytes });
    if let (Some(fields), serde_json::Value::Object(local)) = (
        summary.as_object_mut(),
        local_comparison(&plan, &payload).await?,
    ) {
        fields.extend(local);
    }
    println!("{summary}");
    Ok(())
}

/// Runs and prints the local Actor comparison; its JSON fields.
async fn local_comparison(plan: &RpcPlan, payload: &[u8]) -> Result<serde_json::Value, BoxError> {
    let local = local_actors::run(
        payload,
        plan.warmup,
        plan.requests,
        plan.window,
        plan.duration,
    )
    .await?;
    let local_figures = |name: &str, f: &local_actors::LocalFigures| {
        println!("{name}:");
        println!(
            "  sequential: {} requests: p50 {:.2} us, p99 {:.2} us",
            f.request.count, f.request.p50_us, f.request.p99_us
        );
        println!(
            "  pipelined ({} callers, one Actor each): {:.0} requests/s",
            plan.window,
            f.requests.per_second()
        );
        println!(
            "  one-way: {} sends to one Actor: {:.0} per second",
            f.sends.messages,
            f.sends.per_second()
        );
        if let (Some(request), Some(send)) = (f.request_cpu_us, f.send_cpu_us) {
            println!("  CPU (whole process): {request:.2} us per pipelined request, {send:.2} us per send");
        }
    };
    local_figures("local Actor, zlink (request/send by ID)", &local.zlink);
    local_figures("local actor, kameo (ask/tell)", &local.kameo);
    let local_p50 = local.kameo.request.p50_us / local.zlink.request.p50_us;
    let local_requests = local.zlink.requests.per_second() / local.kameo.requests.per_second();
    let local_sends = local.zlink.sends.per_second() / local.kameo.sends.per_second();
    println!(
        "zlink / kameo, local: request speed at p50 {local_p50:.2}, pipelined requests {local_requests:.2}, one-way sends {local_sends:.2} (goal >= 1.0)"
    );
    let cpu_ratio = |kameo: Option<f64>, zlink: Option<f64>| Some(kameo? / zlink?);
    let request_cpu = cpu_ratio(local.kameo.request_cpu_us, local.zlink.request_cpu_us);
    let send_cpu = cpu_ratio(local.kameo.send_cpu_us, local.zlink.send_cpu_us);
    if let (Some(request), Some(send)) = (request_cpu, send_cpu) {
        println!(
            "zlink / kameo, local CPU efficiency (kameo's CPU per message / zlink's): requests {request:.2}, sends {send:.2}"
        );
    }
    Ok(serde_json::json!({
        "local_zlink_request_cpu_us": local.zlink.request_cpu_us.map(round3),
        "local_kameo_request_cpu_us": local.kameo.request_cpu_us.map(round3),
        "local_zlink_send_cpu_us": local.zlink.send_cpu_us.map(round3),
        "local_kameo_send_cpu_us": local.kameo.send_cpu_us.map(round3),
        "local_request_cpu_vs_kameo": request_cpu.map(round3),
        "local_send_cpu_vs_kameo": send_cpu.map(round3),
        "local_zlink_request_p50_us": round3(local.zlink.request.p50_us),
        "local_kameo_request_p50_us": round3(local.kameo.request.p50_us),
        "local_request_speed_vs_kameo": round3(local_p50),
        "local_zlink_requests_per_s": local.zlink.requests.per_second().round(),
        "local_kameo_requests_per_s": local.kameo.requests.per_second().round(),
        "local_requests_vs_kameo": round3(local_requests),
        "local_zlink_sends_per_s": local.zlink.sends.per_second().round(),
        "local_kameo_sends_per_s": local.kameo.sends.per_second().round(),
        "local_sends_vs_kameo": round3(local_sends),
    }))
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Runs `work` as a child process's whole life, on a multi-thread runtime or (with
/// `single`) a current-thread one; `what` names it in its error.
fn child_process<F>(what: &str, single: bool, work: F) -> ExitCode
where
    F: std::future::Future<Output = Result<(), BoxError>>,
{
    let mut builder = if single {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let Ok(runtime) = builder.enable_all().build() else {
        return ExitCode::FAILURE;
    };
    match runtime.block_on(work) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zlink-bench {what}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The child process of `stream`'s idle measurement that runs one server.
fn idle_server(kind: &str) -> ExitCode {
    child_process("idle server", false, stream::idle_server(kind))
}

/// The child process of `stream`'s idle measurement that holds the clients.
fn idle_clients(addr: &str, count: &str) -> ExitCode {
    let Ok(count) = count.parse::<usize>() else {
        return ExitCode::from(2);
    };
    child_process("idle clients", true, stream::hold_idle_clients(addr, count))
}

/// A child process of `scale`: one measurement in a process of its own.
fn scale_child(args: &[String]) -> ExitCode {
    child_process(
        &format!("scale child {args:?}"),
        false,
        scale::run_child(args),
    )
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, addr, count] if flag == "__idle-clients" => return idle_clients(addr, count),
        [flag, kind] if flag == "__idle-server" => return idle_server(kind),
        [flag, rest @ ..] if flag == "__scale" => {
            heap::start_counting();
            return scale_child(rest);
        }
        _ => {}
    }
    if matches!(args.first().map(String::as_str), Some("-h" | "--help")) {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let (bench, plan) = match parse_args(&args) {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("zlink-bench: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("zlink-bench: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if plan.metrics {
        let installed = metrics_exporter_prometheus::PrometheusBuilder::new()
            .set_buckets(zlink::telemetry::DURATION_BUCKETS_SECONDS)
            .and_then(|builder| builder.install_recorder());
        if let Err(e) = installed {
            eprintln!("zlink-bench: cannot install the Prometheus recorder: {e}");
            return ExitCode::FAILURE;
        }
        println!("metrics: the Prometheus recorder is installed");
    }
    let run = async move {
        match bench {
            Bench::Fanout => fanout::run(plan.payload_bytes, plan.duration).await,
            Bench::Objects => objects(plan).await,
            Bench::Local => local(plan).await,
            Bench::Relocation => relocation(plan).await,
            Bench::Scale => scale::run(plan.objects).await,
            Bench::Stream => stream::run(plan.duration)
                .await
                .map(|summary| println!("{summary}")),
            _ => rpc(plan, bench).await,
        }
    };
    match runtime.block_on(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zlink-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
