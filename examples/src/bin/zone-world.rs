//! Zone World: a zone-sharded browser game whose players keep their connection while the
//! servers move them. Every node in one process on the embedded stores, or one role per
//! process on Redis.
//!
//! Run: `cargo run -p zlink-examples --bin zone-world`, then open the printed game URL.

use std::process::ExitCode;
use std::time::Duration;

use zlink_examples::setup::{self, Security};
use zlink_examples::zone_world::bots::start_bots;
use zlink_examples::zone_world::launch::{
    fresh_token, start_gateway, start_ops, start_zone_node, Stores,
};
use zlink_examples::zone_world::load::LoadOptions;
use zlink_examples::zone_world::nodes::{claim_zones, ZONE_NODES};
use zlink_examples::zone_world::one_process::{OneProcess, Options};
use zlink_examples::zone_world::patrol::crowd;
use zlink_examples::zone_world::player::Player;
use zlink_examples::zone_world::zone::ZoneSpot;

const USAGE: &str = "\
usage:
  zone-world [--port PORT] [--bots N] [--ops-token TOKEN]
      Every node in this process, on the embedded stores: the zone nodes zn-a (owns nw
      and ne), zn-b (sw and se) and zn-c (none: it takes zones when another is drained),
      the gateway and the ops node, and N bots (default 8). Prints the game URL
      (http://127.0.0.1:PORT/, default 7480; browsers connect to ws://127.0.0.1:PORT+1)
      and the ops URL (PORT+2) with its control token. --port 0 takes free ports.
      Ctrl-C stops.

  zone-world --redis URL --role zone --rid zn-a|zn-b|zn-c
  zone-world --redis URL --role gateway [--port PORT]
  zone-world --redis URL --role ops [--port PORT] [--bots N] [--ops-token TOKEN]
      One node per process, on the Redis at URL (redis://127.0.0.1:6379): a zone node
      claims its zones, the gateway serves the game page on PORT (default 7480) and
      browsers on PORT+1, the ops node its dashboard on PORT (default 7482) and puts the
      bots into the world. A zone node stopped with Ctrl-C moves its zones and players to
      the others first. examples/zone-world.sh starts all five on a local redis-server.

  zone-world --load SECONDS [--bots N] [--clients N]
      Load mode, in one process: N bots (default 1000) walk and N WebSocket clients
      (default 20) move every 100 ms, half of them across the north-south border; after
      SECONDS/2 zn-a is drained. Prints moves per second, the ack push p50 and p99, the
      pause of a border crossing (p50, p99), and the drain's disconnects, lost moves and
      longest stall. Build with --release for figures.

  --ops-token TOKEN (or ZONE_WORLD_OPS_TOKEN): unlocks the ops dashboard's controls
  (maintenance, announcements, drains); 16 characters or more. Without it a fresh one
  is printed.

browser packets (JSON; see the book's Zone World chapter):
  client -> gateway  login   request {\"name\": NAME} -> welcome {player, cell, zone, node, generation, relocations, version}
  client -> player   move    one-way {\"seq\": N, \"dx\": DX, \"dy\": DY} (|DX|, |DY| <= 5)
                     status  request null -> welcome
  player -> client   ack     push {seq, refused, failed, cell, zone, node, generation, relocations, version}
                     view    push {tick, zone, here, near, news} (every 100 ms)
                     welcome push (as login's answer) once the player entered the world;
                     the highest version is the newest (the push may come before the answer)";

#[tokio::main]
async fn main() -> ExitCode {
    let (security, args) = match setup::begin("zone-world", USAGE) {
        Ok(begun) => begun,
        Err(code) => return code,
    };
    let flags = match Flags::parse(&args) {
        Ok(flags) => flags,
        Err(e) => {
            eprintln!("zone-world: {e}\n\n{USAGE}\n\n{}", setup::COMMON_USAGE);
            return ExitCode::from(2);
        }
    };
    let outcome = match (&flags.redis, flags.role.as_deref()) {
        (None, None) if flags.load.is_some() => load(&flags, &security).await,
        (None, None) => one_process(&flags, &security).await,
        (Some(url), Some(role)) => one_role(url, role, &flags, &security).await,
        _ => Err("--redis and --role go together".to_string()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zone-world: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The command line, parsed.
#[derive(Default)]
struct Flags {
    redis: Option<String>,
    role: Option<String>,
    rid: Option<String>,
    port: Option<u16>,
    bots: Option<usize>,
    token: Option<String>,
    load: Option<u64>,
    clients: Option<usize>,
}

impl Flags {
    fn parse(args: &[String]) -> Result<Flags, String> {
        let mut flags = Flags::default();
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let value = args.next().ok_or(format!("{flag} needs a value"))?;
            let number = |what: &str| format!("{flag} takes {what}, not {value:?}");
            match flag.as_str() {
                "--redis" => flags.redis = Some(value.clone()),
                "--role" => flags.role = Some(value.clone()),
                "--rid" => flags.rid = Some(value.clone()),
                "--port" => flags.port = Some(value.parse().map_err(|_| number("a port"))?),
                "--bots" => flags.bots = Some(value.parse().map_err(|_| number("a count"))?),
                "--ops-token" => flags.token = Some(value.clone()),
                "--load" => flags.load = Some(value.parse().map_err(|_| number("seconds"))?),
                "--clients" => flags.clients = Some(value.parse().map_err(|_| number("a count"))?),
                _ => return Err(format!("unknown flag {flag:?}")),
            }
        }
        Ok(flags)
    }

    fn token(&self) -> (String, bool) {
        let given = self
            .token
            .clone()
            .or_else(|| std::env::var("ZONE_WORLD_OPS_TOKEN").ok());
        match given {
            Some(token) => (token, false),
            None => (fresh_token(), true),
        }
    }
}

async fn one_process(flags: &Flags, security: &Security) -> Result<(), String> {
    let (token, fresh) = flags.token();
    let options = Options {
        port: flags.port.unwrap_or(7480),
        bots: flags.bots.unwrap_or(8),
        token: token.clone(),
    };
    let world = OneProcess::start(&options, security)
        .await
        .map_err(|e| e.to_string())?;
    println!("{}", security.describe());
    println!(
        "game: {} (open it in a browser; ?name=NAME picks your player)",
        world.game_url()
    );
    println!("  browsers connect to {}/", world.gateway.stream);
    print_ops(&world.ops_url(), &token, fresh);
    println!("  {} bots walk; Ctrl-C stops", options.bots);
    let _ = zlink::stop_signal().await;
    world.shutdown().await;
    Ok(())
}

async fn load(flags: &Flags, security: &Security) -> Result<(), String> {
    let options = LoadOptions {
        seconds: flags.load.unwrap_or(20).max(2),
        bots: flags.bots.unwrap_or(1000),
        clients: flags.clients.unwrap_or(20),
    };
    println!(
        "load: {} bots and {} clients for {} s, zn-a drained halfway...",
        options.bots, options.clients, options.seconds
    );
    let report = zlink_examples::zone_world::load::run(&options, security)
        .await
        .map_err(|e| e.to_string())?;
    println!("{report}");
    Ok(())
}

fn print_ops(url: &str, token: &str, fresh: bool) {
    println!("ops: {url} (the Zone World panel; paste the control token into Controls)");
    let made = if fresh {
        " (made for this run; --ops-token sets one)"
    } else {
        ""
    };
    println!("  control token: {token}{made}");
}

async fn one_role(url: &str, role: &str, flags: &Flags, security: &Security) -> Result<(), String> {
    let stores = Stores::redis(url).await.map_err(|e| e.to_string())?;
    match role {
        "zone" => zone_role(&stores, flags, security).await,
        "gateway" => gateway_role(&stores, flags, security).await,
        "ops" => ops_role(&stores, flags, security).await,
        other => Err(format!("--role takes zone, gateway or ops, not {other:?}")),
    }
}

async fn zone_role(stores: &Stores, flags: &Flags, security: &Security) -> Result<(), String> {
    let rid = flags
        .rid
        .as_deref()
        .ok_or("--role zone needs --rid zn-a, zn-b or zn-c")?;
    if !ZONE_NODES.contains(&rid) {
        return Err(format!("--rid takes one of {ZONE_NODES:?}, not {rid:?}"));
    }
    let node = start_zone_node(stores, security, rid)
        .await
        .map_err(|e| e.to_string())?;
    println!("zone node {rid} started");
    // Its zones may run on a node not up yet, or on one that crashed (reclaim it): again.
    loop {
        tokio::select! {
            _ = zlink::stop_signal() => break,
            claimed = claim_zones(node.runtime.handle()) => match claimed {
                Ok(zones) => {
                    let names: Vec<String> = zones.iter().map(|z| z.id.to_string()).collect();
                    println!("zone node {rid} runs {names:?}; Ctrl-C moves what it runs to the others and stops");
                    let _ = zlink::stop_signal().await;
                    break;
                }
                Err(e) => {
                    eprintln!("zone node {rid}: {e}; trying again in 1 s");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            },
        }
    }
    let stop = zlink::ShutdownOptions::new().relocate_first();
    println!(
        "zone node {rid}: {}",
        node.runtime.shutdown_with(stop).await
    );
    Ok(())
}

/// The gateway: serves the page at once, and says when players can log in (a zone node
/// that hosts them is known; until then a login is refused `NotFound`).
async fn gateway_role(stores: &Stores, flags: &Flags, security: &Security) -> Result<(), String> {
    let port = flags.port.unwrap_or(7480);
    let next = if port == 0 { 0 } else { port.saturating_add(1) };
    let gateway = start_gateway(stores, security, next, port)
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "game: http://{}/ (browsers connect to {}/)",
        gateway.page, gateway.stream
    );
    let handle = gateway.runtime.handle().clone();
    let players_known = async move {
        loop {
            match handle.actors().ready(Player::STABLE_TYPE, 1).await {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == Some(zlink::ErrorKind::DeadlineExceeded) => {
                    tracing::info!(error = %e, "no zone node hosts players yet");
                }
                Err(e) => return Err(e),
            }
        }
    };
    tokio::select! {
        _ = zlink::stop_signal() => {}
        known = players_known => {
            match known {
                Ok(()) => println!("players can log in"),
                Err(e) => eprintln!("players cannot log in: {e}"),
            }
            let _ = zlink::stop_signal().await;
        }
    }
    gateway.runtime.shutdown().await;
    Ok(())
}

async fn ops_role(stores: &Stores, flags: &Flags, security: &Security) -> Result<(), String> {
    let (token, fresh) = flags.token();
    let ops = start_ops(stores, security, flags.port.unwrap_or(7482), &token)
        .await
        .map_err(|e| e.to_string())?;
    print_ops(
        &format!("http://{}/", ops.dashboard.local_addr()),
        &token,
        fresh,
    );
    let bots = flags.bots.unwrap_or(8);
    let handle = ops.runtime.handle().clone();
    let walking = async move {
        handle.spots().ready(ZoneSpot::STABLE_TYPE, 1).await?;
        handle.actors().ready(Player::STABLE_TYPE, 1).await?;
        start_bots(&handle, &crowd(bots)).await
    };
    tokio::select! {
        _ = zlink::stop_signal() => {}
        started = walking => {
            match started {
                Ok(_) => println!("{bots} bots walk"),
                Err(e) => eprintln!("the bots did not start: {e}"),
            }
            let _ = zlink::stop_signal().await;
        }
    }
    ops.runtime.shutdown().await;
    Ok(())
}
