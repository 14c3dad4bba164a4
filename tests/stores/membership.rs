//! Self-cleaning membership and store metrics, on a real `redis-server` per test and real
//! TCP on 127.0.0.1: dead descriptors go away, malformed ones are skipped, and every store
//! call a node makes is counted in its status snapshot.

use zlink::store::{DescriptorKey, LocationStore};
use zlink_testkit::{wait_until, RedisServer};
use zlink_tests::*;

/// The Redis keys of the test mesh's descriptor scope (prefix `zlink-test`).
fn scope_key(part: &str) -> String {
    format!("{{zlink-test:d:mesh:{}:{MESH}}}:{part}", MESH.len())
}

async fn echo_server(rid: &str, store: &std::sync::Arc<dyn LocationStore>) -> zlink::Runtime {
    start(
        discovered_node(rid, store, quick_lease())
            .channel_server(CHANNEL, echo_handlers(rid, Default::default())),
    )
    .await
}

#[tokio::test]
async fn a_dead_nodes_descriptor_is_removed() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let a = echo_server("a", &store).await;
    let b = echo_server("b", &store).await;
    wait_until(WAIT, "a sees b", || async { peer_rids(&a) == ["b"] }).await;
    let b_key = DescriptorKey::mesh_node(MESH, "b");
    assert!(store.read_descriptor(&b_key).await.unwrap().is_some());
    // A crash withdraws nothing: only the lease running out tells the others.
    b.crash().await;
    wait_until(WAIT, "b's descriptor is gone from the store", || async {
        store.read_descriptor(&b_key).await.unwrap().is_none()
    })
    .await;
    assert_eq!(
        redis
            .command(&["ZSCORE", &scope_key("index"), "b"])
            .unwrap(),
        "$-1",
        "b is out of the scope index too"
    );
    assert_eq!(
        redis
            .command(&["HEXISTS", &scope_key("bodies"), "b"])
            .unwrap(),
        ":0"
    );
    assert!(store
        .read_descriptor(&DescriptorKey::mesh_node(MESH, "a"))
        .await
        .unwrap()
        .is_some_and(|e| e.owner_alive));
    stop([a]).await;
}

#[tokio::test]
async fn a_malformed_descriptor_is_skipped_and_discovery_continues() {
    let redis = RedisServer::start().expect("redis-server");
    // Three kinds of damage, sorted among the real members: a holder that is not
    // "<generation>:<owner>", a holder with no body, and an index entry with nothing.
    for (id, holder, body) in [
        ("a0-garbage", Some("not-a-holder"), Some("x")),
        ("b0-bodyless", Some("7:ghost"), None),
        ("c0-orphan", None, None),
    ] {
        assert_eq!(
            redis
                .command(&["ZADD", &scope_key("index"), "0", id])
                .unwrap(),
            ":1"
        );
        if let Some(holder) = holder {
            redis
                .command(&["HSET", &scope_key("holders"), id, holder])
                .unwrap();
        }
        if let Some(body) = body {
            redis
                .command(&["HSET", &scope_key("bodies"), id, body])
                .unwrap();
        }
    }
    let store = redis_store(&redis);
    let a = echo_server("a", &store).await;
    let c = start(discovered_node("c", &store, quick_lease()).channel_client(CHANNEL)).await;
    wait_until(WAIT, "a and c find each other", || async {
        peer_rids(&a) == ["c"] && peer_rids(&c) == ["a"]
    })
    .await;
    assert_eq!(echo_by(&c).await, "a");
    assert!(c.discovery().status().unwrap().store_reachable);
    // The reader that skipped them also removed them: nothing is warned about forever.
    wait_until(WAIT, "the malformed entries are removed", || async {
        redis.command(&["ZCARD", &scope_key("index")]).unwrap() == ":2"
    })
    .await;
    stop([c, a]).await;
}

#[tokio::test]
async fn store_operations_are_counted_per_kind_in_the_status_snapshot() {
    let store = <dyn LocationStore>::in_memory();
    let a = echo_server("a", &store).await;
    let before = a.status().store_operations.expect("a store is registered");
    assert_eq!(before.writes.claim_lease.calls, 1);
    assert!(before.writes.publish_descriptor.calls >= 1);
    wait_until(
        WAIT,
        "discovery reads pages and renews the lease",
        || async {
            let now = a.status().store_operations.unwrap();
            now.reads.descriptor_page.calls > before.reads.descriptor_page.calls
                && now.writes.renew_lease.calls > before.writes.renew_lease.calls
        },
    )
    .await;
    let now = a.status().store_operations.unwrap();
    assert_eq!(now.reads.descriptor_page.failures, 0);
    assert_eq!(now.writes.batch.calls, 0, "channels write no records");
    let json = serde_json::to_value(a.status()).unwrap();
    assert!(json["store_operations"]["writes"]["renew_lease"]["calls"].is_u64());
    stop([a]).await;
}
