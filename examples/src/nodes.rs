//! Starting the demo's nodes and waiting for what a client sees.
//!
//! Every node joins the mesh [`MESH`]. Servers register the Server role for [`CHANNEL`];
//! the client registers the Client role and lists the servers as manual peers, or every
//! node finds the others through a Redis Location Store.

use std::sync::Arc;
use std::time::Duration;

use zlink::store::{LocationStore, RedisLocationStore, RedisOptions};
use zlink::DefaultChannel;
use zlink::{PeerSpec, PeerStatus, Runtime};

use crate::greeter::{Greeter, GreeterClient};
use crate::messages::{Greet, Greeting};
use crate::setup::Security;

/// The MeshName every demo node joins.
pub const MESH: &str = "mesh-demo";

/// The channel the servers serve and the client calls: the [`Greeter`]'s default name.
pub const CHANNEL: &str = <Greeter as DefaultChannel>::CHANNEL;

/// The weight a server starts with unless told otherwise.
pub const DEFAULT_WEIGHT: u32 = 100;

/// Listen on the loopback interface with a port the system picks.
pub const ANY_LOCAL_PORT: &str = "tcp://127.0.0.1:0";

// ANCHOR: store
/// The Location Store of the multi-process mode: Redis at `url`, every key under the
/// prefix `mesh-demo`.
pub fn redis_store(url: &str) -> zlink::Result<Arc<dyn LocationStore>> {
    let options = RedisOptions::new(url, MESH);
    Ok(Arc::new(RedisLocationStore::new(options)?))
}
// ANCHOR_END: store

// ANCHOR: server
/// Starts a server node `rid` listening on `listen`, serving [`CHANNEL`] with `greeter`
/// and the given weight (0..=10000). With a `store`, the node publishes itself there and
/// finds the other nodes by itself; `security` says NULL or CURVE (and whom to trust).
pub async fn start_server(
    rid: &str,
    listen: &str,
    weight: u32,
    greeter: &Greeter,
    store: Option<Arc<dyn LocationStore>>,
    security: &Security,
) -> zlink::Result<Runtime> {
    let mut builder = Runtime::builder()
        .mesh_name(MESH)
        .rid(rid)
        .listen(listen)
        .serve_weighted(greeter.clone(), weight);
    if let Some(store) = store {
        builder = builder.location_store(store);
    }
    crate::operate::start(security, builder).await
}
// ANCHOR_END: server

// ANCHOR: client
/// Starts a client node `rid` listening on `listen` that connects to `servers` (with
/// CURVE, each [`PeerSpec`] names its server's key), and, with a `store`, to every server
/// it finds there. It calls [`CHANNEL`] through the generated
/// `GreeterClient`, whose creation declares the Client role: nothing to register here.
pub async fn start_client(
    rid: &str,
    listen: &str,
    servers: impl IntoIterator<Item = PeerSpec>,
    store: Option<Arc<dyn LocationStore>>,
    security: &Security,
) -> zlink::Result<Runtime> {
    let mut builder = Runtime::builder().mesh_name(MESH).rid(rid).listen(listen);
    for server in servers {
        builder = builder.peer(server);
    }
    if let Some(store) = store {
        builder = builder.location_store(store);
    }
    crate::operate::start(security, builder).await
}
// ANCHOR_END: client

// ANCHOR: wait
/// Waits until `client` can select at least `count` ready servers of [`CHANNEL`] (woken by
/// peer events, no polling), and returns the ready peers. Fails with `DeadlineExceeded`
/// after `timeout`.
pub async fn wait_for_servers(
    client: &Runtime,
    count: usize,
    timeout: Duration,
) -> zlink::Result<Vec<PeerStatus>> {
    // Making the generated client declares the Client role, so `ready` knows the channel.
    GreeterClient::on_default_channel(client);
    match tokio::time::timeout(timeout, client.channels().ready(CHANNEL, count)).await {
        Ok(ready) => ready.map(|()| client.nodes().peers()),
        Err(_) => {
            // Why the servers it dials are not connected (a refused key, say), if it knows.
            let why: String = client
                .nodes()
                .dial_failures()
                .iter()
                .map(|failure| format!("; {failure}"))
                .collect();
            Err(zlink::Error::new(
                zlink::ErrorKind::DeadlineExceeded,
                format!("fewer than {count} servers of {CHANNEL} became ready{why}"),
            ))
        }
    }
}

/// Waits until `client` uses `weight` for server `rid` on [`CHANNEL`]. A weight change
/// made with `set_weight` on the server reaches its peers shortly after the call.
pub async fn wait_for_weight(
    client: &Runtime,
    rid: &str,
    weight: u32,
    timeout: Duration,
) -> zlink::Result<()> {
    client
        .nodes()
        .wait_for(timeout, |peers| {
            peers
                .iter()
                .any(|p| p.rid == rid && p.weight(CHANNEL) == Some(weight))
        })
        .await
        .map(|_| ())
}
// ANCHOR_END: wait

// ANCHOR: greet
/// Sends one [`Greet`] on [`CHANNEL`]: the client's runtime picks one server by weight,
/// and the reply says which one answered.
pub async fn greet(client: &Runtime, name: &str) -> zlink::Result<Greeting> {
    GreeterClient::on_default_channel(client)
        .greet(&Greet {
            name: name.to_string(),
        })
        .await
}
// ANCHOR_END: greet
