//! One node per process: `--role server` and `--role client`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use zlink::PeerSpec;
use zlink_examples::cli::{ClientArgs, ServerArgs};
use zlink_examples::greeter::Greeter;
use zlink_examples::nodes::{
    greet, redis_store, start_client, start_server, wait_for_servers, CHANNEL, MESH,
};

/// How long a client waits for all its servers to be ready.
const PEER_WAIT: Duration = Duration::from_secs(10);

/// The Redis store named on the command line, if any.
fn store_for(
    url: Option<&str>,
) -> Result<Option<std::sync::Arc<dyn zlink::store::LocationStore>>, String> {
    url.map(redis_store).transpose().map_err(|e| e.to_string())
}

/// Serves the channel until Ctrl-C, then shuts down.
pub async fn run_server(args: ServerArgs) -> Result<(), String> {
    let greeter = Greeter::new(args.rid.clone());
    let store = store_for(args.redis.as_deref())?;
    let node = start_server(&args.rid, &args.listen, args.weight, &greeter, store)
        .await
        .map_err(|e| format!("cannot start server {}: {e}", args.rid))?;
    println!(
        "server {} (mesh {MESH:?}) serves {CHANNEL:?} with weight {} on {}",
        node.rid(),
        args.weight,
        node.endpoint()
    );
    println!("press Ctrl-C to stop");
    let waited = tokio::signal::ctrl_c().await;
    println!("stopping...");
    node.shutdown().await;
    println!(
        "server {} stopped after answering {} request(s)",
        args.rid,
        greeter.answered()
    );
    waited.map_err(|e| format!("cannot wait for Ctrl-C: {e}"))
}

/// Connects to the servers, sends the requests, prints who answered each, and exits.
pub async fn run_client(args: ClientArgs) -> Result<(), String> {
    let peers = args.peers.iter().map(PeerSpec::new);
    let store = store_for(args.redis.as_deref())?;
    let node = start_client(&args.rid, &args.listen, peers, store)
        .await
        .map_err(|e| format!("cannot start client {}: {e}", args.rid))?;
    let outcome = send_requests(&node, &args).await;
    node.shutdown().await;
    outcome
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
        Err(_) => {
            let ready: Vec<String> = node.nodes().peers().into_iter().map(|p| p.rid).collect();
            let looked = match &args.redis {
                Some(url) => format!("registered in {url}"),
                None => format!("running at {}", args.peers.join(", ")),
            };
            return Err(format!(
                "only {} of {wanted} server(s) ready after {} s (ready: [{}]); \
                 are they {looked}?",
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
