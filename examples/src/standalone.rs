//! One node per process: `--role server` and `--role client`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use zlink::{PeerSpec, ShutdownOptions};
use zlink_examples::cli::{ClientArgs, ServerArgs};
use zlink_examples::greeter::Greeter;
use zlink_examples::nodes::{
    greet, redis_store, start_client, start_server, wait_for_servers, CHANNEL, MESH,
};
use zlink_examples::setup::{public_key, Security};

/// How long a client waits for all its servers to be ready.
const PEER_WAIT: Duration = Duration::from_secs(10);

/// The Redis store named on the command line, if any.
fn store_for(
    url: Option<&str>,
) -> Result<Option<std::sync::Arc<dyn zlink::store::LocationStore>>, String> {
    url.map(redis_store).transpose().map_err(|e| e.to_string())
}

/// Serves the channel until Ctrl-C, then shuts down.
pub async fn run_server(args: ServerArgs, security: &Security) -> Result<(), String> {
    let greeter = Greeter::new(args.rid.clone());
    let store = store_for(args.redis.as_deref())?;
    println!("{}", security.describe());
    let node = start_server(
        &args.rid,
        &args.listen,
        args.weight,
        &greeter,
        store,
        security,
    )
    .await
    .map_err(|e| format!("cannot start server {}: {e}", args.rid))?;
    println!(
        "server {} (mesh {MESH:?}) serves {CHANNEL:?} with weight {} on {}",
        node.rid(),
        args.weight,
        node.endpoint()
    );
    println!("press Ctrl-C to stop");
    let outcome = node.shutdown_on_signal(ShutdownOptions::new()).await;
    println!(
        "server {} {outcome} after answering {} request(s)",
        args.rid,
        greeter.answered()
    );
    Ok(())
}

/// Connects to the servers, sends the requests, prints who answered each, and exits.
pub async fn run_client(args: ClientArgs, security: &Security) -> Result<(), String> {
    let peers = args
        .peers
        .iter()
        .map(|peer| peer_spec(peer, security))
        .collect::<Result<Vec<_>, _>>()?;
    // The servers a client dials are the keys its own listener admits too.
    let mut security = security.clone();
    security
        .trust
        .extend(peers.iter().filter_map(|peer| peer.server_key));
    let security = &security;
    let store = store_for(args.redis.as_deref())?;
    println!("{}", security.describe());
    let node = start_client(&args.rid, &args.listen, peers, store, security)
        .await
        .map_err(|e| format!("cannot start client {}: {e}", args.rid))?;
    let outcome = send_requests(&node, &args).await;
    node.shutdown().await;
    outcome
}

/// A `--peer ENDPOINT[,KEY]`: with CURVE the server's key is needed to dial it.
fn peer_spec(peer: &str, security: &Security) -> Result<PeerSpec, String> {
    let (endpoint, key) = match peer.split_once(',') {
        Some((endpoint, key)) => (endpoint, Some(public_key(key).map_err(|e| e.to_string())?)),
        None => (peer, None),
    };
    match (key, security.keypair.is_some()) {
        (Some(key), true) => Ok(PeerSpec::new(endpoint).server_key(key)),
        (Some(_), false) => Err(format!(
            "--peer {peer} names a server key, but this node runs without CURVE (--curve-key)"
        )),
        (None, true) => Err(format!(
            "with CURVE, --peer needs the server's public key: --peer {endpoint},SERVER.pub"
        )),
        (None, false) => Ok(PeerSpec::new(endpoint)),
    }
}

async fn send_requests(node: &zlink::Runtime, args: &ClientArgs) -> Result<(), String> {
    let wanted = args.servers;
    println!(
        "client {} listening on {}; waiting for {wanted} server(s)...",
        node.rid(),
        node.endpoint()
    );
    let ready = match wait_for_servers(node, wanted, PEER_WAIT).await {
        Ok(ready) => ready,
        Err(e) => {
            let ready: Vec<String> = node.nodes().peers().into_iter().map(|p| p.rid).collect();
            let store_down = node
                .discovery()
                .status()
                .is_some_and(|s| !s.store_reachable);
            if let (true, Some(url)) = (store_down, &args.redis) {
                return Err(format!(
                    "the Location Store at {url} is unreachable, so no server can be found \
                     (is redis-server running there?)"
                ));
            }
            let looked = match &args.redis {
                Some(url) => format!("registered in {url}"),
                None => format!("running at {}", args.peers.join(", ")),
            };
            return Err(format!(
                "only {} of {wanted} server(s) ready after {} s (ready: [{}]); \
                 are they {looked}? ({e})",
                ready.len(),
                PEER_WAIT.as_secs(),
                ready.join(", "),
            ));
        }
    };
    for peer in &ready {
        let weight = peer
            .weight(CHANNEL)
            .map_or("-".to_string(), |w| w.to_string());
        println!(
            "  ready: {:<10} weight {:<5} at {}",
            peer.rid, weight, peer.endpoint
        );
    }
    let mut answered: BTreeMap<String, usize> = BTreeMap::new();
    for i in 1..=args.requests {
        let started = Instant::now();
        let reply = greet(node, &format!("request {i}"))
            .await
            .map_err(|e| format!("request {i} failed: {e}"))?;
        println!(
            "  request {i:>3} -> answered by {:<10} {:?} ({:.2} ms)",
            reply.by,
            reply.text,
            started.elapsed().as_secs_f64() * 1000.0
        );
        *answered.entry(reply.by).or_insert(0) += 1;
    }
    let counts: Vec<String> = answered
        .iter()
        .map(|(rid, n)| format!("{rid} {n}"))
        .collect();
    println!("answered: {}", counts.join(", "));
    Ok(())
}
