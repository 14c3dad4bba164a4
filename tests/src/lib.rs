//! Shared messages and node helpers for the integration tests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::{HandlerContext, PeerSpec, Runtime, RuntimeBuilder};

pub mod bound_sessions;
pub mod browser;
pub mod contract;
pub mod instance_matches;
pub mod instance_races;
pub mod membership_rooms;
pub mod raw_peer;
pub mod relocating;
pub mod restarts;
pub mod spans;
pub mod walking_sessions;

/// Echo request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, zlink::Message)]
#[message(reply = Echoed)]
pub struct Echo {
    pub text: String,
}

/// Echo reply: who answered and what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, zlink::Message)]
pub struct Echoed {
    pub text: String,
    pub by: String,
    pub trace: Option<String>,
}

/// A request whose handler sleeps before answering.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, zlink::Message)]
#[message(reply = Echoed)]
pub struct Slow {
    pub millis: u64,
}

/// A one-way note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, zlink::Message)]
pub struct Note(pub String);

/// A request nobody handles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, zlink::Message)]
#[message(reply = Echoed)]
pub struct Unhandled;

pub const MESH: &str = "test-mesh";
pub const CHANNEL: &str = "echo";
pub const WAIT: Duration = Duration::from_secs(10);

/// The echo service: answers [`Echo`] and [`Slow`] with this node's name and counts
/// [`Note`]s.
#[derive(Clone)]
pub struct EchoService {
    name: String,
    notes: Arc<AtomicUsize>,
}

#[zlink::channel(server)]
impl EchoService {
    #[handler]
    async fn echo(&self, e: Echo, ctx: &HandlerContext) -> zlink::Result<Echoed> {
        Ok(Echoed {
            text: e.text,
            by: self.name.clone(),
            trace: ctx.metadata().get("trace").map(str::to_string),
        })
    }

    #[handler]
    async fn slow(&self, s: Slow, _ctx: &HandlerContext) -> zlink::Result<Echoed> {
        tokio::time::sleep(Duration::from_millis(s.millis)).await;
        Ok(Echoed {
            text: format!("slept {}", s.millis),
            by: self.name.clone(),
            trace: None,
        })
    }

    #[handler]
    async fn note(&self, _note: Note, _ctx: &HandlerContext) -> zlink::Result<()> {
        self.notes.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// An [`EchoService`] answering as `name` and counting notes into `notes`.
pub fn echo_handlers(name: &str, notes: Arc<AtomicUsize>) -> EchoService {
    EchoService {
        name: name.to_string(),
        notes,
    }
}

/// The generated client of [`EchoService`] on [`CHANNEL`], calling through `rt`.
pub fn echo_client(rt: &zlink::Handle) -> EchoServiceClient {
    EchoServiceClient::new(rt, CHANNEL)
}

/// A builder for a node on 127.0.0.1 with a free port.
pub fn node(rid: &str) -> RuntimeBuilder {
    Runtime::builder()
        .mesh_name(MESH)
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
}

/// Builds and starts a node whose configuration the test knows to be valid.
pub async fn start(builder: RuntimeBuilder) -> Runtime {
    builder
        .build()
        .expect("valid config")
        .start()
        .await
        .expect("start")
}

/// Sends one [`Echo`] on [`CHANNEL`] and returns which node answered.
pub async fn echo_by(rt: &zlink::Handle) -> String {
    echo_client(rt)
        .echo(&Echo { text: "x".into() })
        .await
        .expect("echo answered")
        .by
}

/// Shuts the nodes down in order.
pub async fn stop(nodes: impl IntoIterator<Item = Runtime>) {
    for rt in nodes {
        rt.shutdown().await;
    }
}

/// A server node for [`CHANNEL`] with `weight`; it also answers node-direct echoes.
pub async fn server(rid: &str, weight: u32) -> Runtime {
    node(rid)
        .channel_server_weighted(CHANNEL, echo_handlers(rid, Default::default()), weight)
        .node_handlers(echo_handlers(rid, Default::default()))
        .build()
        .expect("valid config")
        .start()
        .await
        .expect("start")
}

/// A client node for [`CHANNEL`] connected to `servers`.
pub async fn client(rid: &str, servers: &[&Runtime]) -> Runtime {
    let mut b = node(rid).channel_client(CHANNEL);
    for s in servers {
        b = b.peer(PeerSpec::new(s.endpoint()).expect_rid(s.rid()));
    }
    let rt = b
        .build()
        .expect("valid config")
        .start()
        .await
        .expect("start");
    let want = servers.len();
    rt.nodes()
        .wait_for(WAIT, |p| p.len() == want)
        .await
        .expect("peers ready");
    rt
}

/// Owner lease timings short enough for tests: renew 200 ms, TTL 1.5 s, renew timeout
/// 300 ms, fencing margin 500 ms (0.5 s < 1 s, as the startup rule requires).
pub fn quick_lease() -> zlink::store::OwnerLeaseSettings {
    zlink::store::OwnerLeaseSettings {
        renew_interval: Duration::from_millis(200),
        ttl: Duration::from_millis(1500),
        renew_timeout: Duration::from_millis(300),
        fencing_margin: Duration::from_millis(500),
    }
}

/// A Redis Location Store on `server` with a 500 ms operation timeout.
pub fn redis_store(server: &zlink_testkit::RedisServer) -> Arc<dyn zlink::store::LocationStore> {
    let options = zlink::store::RedisOptions::new(server.url(), "zlink-test")
        .operation_timeout(Duration::from_millis(500));
    Arc::new(zlink::store::RedisLocationStore::new(options).expect("redis options"))
}

/// A Redis Relocation Store on `server` with a 500 ms operation timeout (the nodes of a
/// relocation test share it, as the nodes of a mesh share one).
pub fn redis_relocation_store(
    server: &zlink_testkit::RedisServer,
) -> Arc<dyn zlink::store::RelocationStore> {
    let options = zlink::store::RedisOptions::new(server.url(), "zlink-test")
        .operation_timeout(Duration::from_millis(500));
    Arc::new(zlink::store::RedisRelocationStore::new(options).expect("redis options"))
}

/// One in-memory Relocation Store for every node of this test process: the nodes of a
/// test share it, as the nodes of a mesh share one, and its references are unique, so
/// tests running side by side never meet in it.
pub fn relocation_store() -> Arc<dyn zlink::store::RelocationStore> {
    static STORE: std::sync::OnceLock<Arc<dyn zlink::store::RelocationStore>> =
        std::sync::OnceLock::new();
    STORE
        .get_or_init(<dyn zlink::store::RelocationStore>::in_memory)
        .clone()
}

/// A node that finds its peers through `store` (no manual peers), re-reading the member
/// list every 100 ms, with `lease` timings and the process's Relocation Store.
pub fn discovered_node(
    rid: &str,
    store: &Arc<dyn zlink::store::LocationStore>,
    lease: zlink::store::OwnerLeaseSettings,
) -> RuntimeBuilder {
    node(rid)
        .location_store(store.clone())
        .relocation_store(relocation_store())
        .owner_lease(lease)
        .discovery_interval(Duration::from_millis(100))
}

/// The RIDs of `rt`'s ready peers, sorted.
pub fn peer_rids(rt: &zlink::Handle) -> Vec<String> {
    rt.nodes().peers().into_iter().map(|p| p.rid).collect()
}

/// How many members `rt` discovered that run an Entry Spot (Object Servers of Actors).
pub fn entry_spots_seen(rt: &zlink::Handle) -> usize {
    rt.discovery().status().map_or(0, |s| {
        s.members.iter().filter(|m| m.entry_spot.is_some()).count()
    })
}

/// Waits until each of `nodes` has discovered at least `at_least` other members that run
/// an Entry Spot.
pub async fn wait_entry_spots_seen(nodes: &[&zlink::Handle], at_least: usize) {
    zlink_testkit::wait_until(WAIT, "every node sees the others' Entry Spots", || async {
        nodes.iter().all(|rt| entry_spots_seen(rt) >= at_least)
    })
    .await;
}

/// Creates the Actor `id` of `stable_type` from `rt` until placement puts it on `rid`
/// (destroying the ones it put elsewhere, then calling `discarded`), and returns it;
/// panics after 100 tries.
pub async fn actor_created_on(
    rt: &zlink::Handle,
    id: &str,
    stable_type: &str,
    rid: &str,
    mut discarded: impl FnMut(),
) -> zlink::object::ActorRef {
    for _ in 0..100 {
        let made = rt.actors().create(id, stable_type).await.unwrap();
        if made.rid == rid {
            return made;
        }
        assert!(rt.actors().destroy(&made).await.unwrap());
        discarded();
    }
    panic!("placement never put {id} on {rid}");
}
