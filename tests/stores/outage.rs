//! Location Store outages (StoreFailureGrace) with the in-memory store behind a
//! fault-injecting wrapper per node, so one node can lose the store while the others keep
//! it. Connections run on the in-memory network where a test must cut one on demand.

use std::sync::Arc;
use std::time::Duration;
use zlink::TestFaults;

use zlink::store::LocationStore;
use zlink::Runtime;
use zlink_testkit::{wait_until, FaultyLocationStore, MemNetwork, MemoryLocationStore};
use zlink_tests::*;

/// A node on the in-memory network using its own view (`store`) of the shared store.
fn node_on(net: &MemNetwork, rid: &str, store: &Arc<FaultyLocationStore>) -> zlink::RuntimeBuilder {
    let store: Arc<dyn LocationStore> = store.clone();
    Runtime::builder()
        .mesh_name(MESH)
        .rid(rid)
        .listen(format!("mem://{rid}:1"))
        .transport(net.host(rid))
        .test_liveness(Duration::from_millis(50), Duration::from_millis(300))
        .location_store(store)
        .owner_lease(quick_lease())
        .discovery_interval(Duration::from_millis(50))
}

struct Pair {
    net: MemNetwork,
    shared: Arc<MemoryLocationStore>,
    /// The client's view of the store.
    client_store: Arc<FaultyLocationStore>,
    client: Runtime,
    server: Runtime,
}

/// Client "b" and server "s" ("b" dials, being the smaller RID), connected through
/// discovery; the client has `grace` of StoreFailureGrace.
async fn pair(grace: Duration) -> Pair {
    let net = MemNetwork::new();
    let shared = Arc::new(MemoryLocationStore::new());
    let view = || Arc::new(FaultyLocationStore::new(shared.clone()));
    let server_store = view();
    let client_store = view();
    let server = start(
        node_on(&net, "s", &server_store)
            .channel_server(CHANNEL, echo_handlers("s", Default::default())),
    )
    .await;
    let client = start(
        node_on(&net, "b", &client_store)
            .channel_client(CHANNEL)
            .store_failure_grace(grace),
    )
    .await;
    wait_until(WAIT, "b connected to s", || async {
        peer_rids(&client) == ["s"]
    })
    .await;
    Pair {
        net,
        shared,
        client_store,
        client,
        server,
    }
}

impl Pair {
    /// Cuts the client's connection (the network loses host "b" and gets it back), with
    /// the client noticing the loss.
    async fn cut_client_connection(&self) {
        self.net.kill("b");
        wait_until(WAIT, "b lost s", || async {
            peer_rids(&self.client).is_empty()
        })
        .await;
        self.net.revive("b");
    }
}

#[tokio::test]
async fn during_store_failure_grace_connections_stay_and_the_lease_is_not_extended() {
    let p = pair(Duration::from_secs(30)).await;
    p.client_store.set_down(true);
    // The lease deadline passes on its own schedule; the grace does not extend it.
    wait_until(WAIT, "b's admission deadline passes", || async {
        !p.client
            .discovery()
            .owner_lease()
            .unwrap()
            .admits_new_work()
    })
    .await;
    let status = p.client.discovery().status().unwrap();
    assert!(!status.store_reachable);
    assert!(!status.grace_expired);
    // Existing connection: still serving, still kept alive by liveness.
    assert_eq!(echo_by(&p.client).await, "s");
    // Within the grace the member list keeps its connection intents: a cut connection is
    // made again.
    p.cut_client_connection().await;
    wait_until(WAIT, "b reconnected to s from the kept list", || async {
        peer_rids(&p.client) == ["s"]
    })
    .await;
    p.client_store.set_down(false);
    wait_until(WAIT, "b admits again", || async {
        p.client
            .discovery()
            .owner_lease()
            .unwrap()
            .admits_new_work()
    })
    .await;
    drop(p.shared);
    stop([p.client, p.server]).await;
}

#[tokio::test]
async fn after_store_failure_grace_nothing_reconnects_until_the_list_is_read_again() {
    let p = pair(Duration::from_millis(500)).await;
    p.client_store.set_down(true);
    wait_until(WAIT, "b's grace runs out", || async {
        p.client.discovery().status().unwrap().grace_expired
    })
    .await;
    // An established connection lives on its liveness...
    assert_eq!(echo_by(&p.client).await, "s");
    // ...but once cut, it is not made again while the list cannot be read.
    p.cut_client_connection().await;
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            peer_rids(&p.client).is_empty(),
            "reconnected without a member list"
        );
    }
    p.client_store.set_down(false);
    wait_until(
        WAIT,
        "b reconnects after reading the list again",
        || async { peer_rids(&p.client) == ["s"] },
    )
    .await;
    assert!(!p.client.discovery().status().unwrap().grace_expired);
    assert_eq!(echo_by(&p.client).await, "s");
    stop([p.client, p.server]).await;
}

#[tokio::test]
async fn a_lost_descriptor_publish_is_resolved_by_rereading() {
    let net = MemNetwork::new();
    let shared = Arc::new(MemoryLocationStore::new());
    let store = Arc::new(FaultyLocationStore::new(shared.clone()));
    // The lease claim lands but its answer is lost, and so does the first publish.
    store.lose_result_of_next(2);
    let s = start(
        node_on(&net, "s", &store).channel_server(CHANNEL, echo_handlers("s", Default::default())),
    )
    .await;
    let status = s.discovery().status().unwrap();
    assert_eq!(
        status.published_revision,
        Some(1),
        "published despite two lost answers"
    );
    let key = zlink::store::DescriptorKey::mesh_node(MESH, "s");
    let entry = shared
        .read_descriptor(&key)
        .await
        .unwrap()
        .expect("descriptor stored once");
    assert_eq!(
        Some(entry.owner),
        s.discovery().owner_lease().unwrap().token
    );
    stop([s]).await;
}
