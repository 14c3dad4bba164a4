//! Automatic RouteMesh discovery through the Location Store, on a real `redis-server` per
//! test and real TCP on 127.0.0.1.

use std::collections::HashSet;
use std::time::Duration;

use zlink::store::OwnerLeaseSettings;
use zlink::ErrorKind;
use zlink_testkit::{unused_endpoint, wait_until, RedisServer};
use zlink_tests::*;

fn redis() -> RedisServer {
    RedisServer::start().expect("redis-server")
}

async fn echo_server(
    rid: &str,
    store: &std::sync::Arc<dyn zlink::store::LocationStore>,
    lease: OwnerLeaseSettings,
) -> zlink::Runtime {
    start(
        discovered_node(rid, store, lease)
            .channel_server(CHANNEL, echo_handlers(rid, Default::default())),
    )
    .await
}

async fn echo_client_node(
    rid: &str,
    store: &std::sync::Arc<dyn zlink::store::LocationStore>,
    lease: OwnerLeaseSettings,
) -> zlink::Runtime {
    start(discovered_node(rid, store, lease).channel_client(CHANNEL)).await
}

async fn wait_for_peers(rt: &zlink::Handle, rids: &[&str]) {
    let want: Vec<String> = rids.iter().map(|r| r.to_string()).collect();
    wait_until(
        WAIT,
        &format!("{} sees exactly {want:?}", rt.rid()),
        || async { peer_rids(rt) == want },
    )
    .await;
}

#[tokio::test]
async fn three_nodes_discover_each_other_through_redis_and_exchange_requests() {
    let redis = redis();
    let store = redis_store(&redis);
    let a = echo_server("a", &store, quick_lease()).await;
    let b = echo_server("b", &store, quick_lease()).await;
    let c = echo_client_node("c", &store, quick_lease()).await;
    wait_for_peers(&a, &["b", "c"]).await;
    wait_for_peers(&b, &["a", "c"]).await;
    wait_for_peers(&c, &["a", "b"]).await;
    let mut answered = HashSet::new();
    for _ in 0..4 {
        answered.insert(echo_by(&c).await);
    }
    assert_eq!(answered, HashSet::from(["a".to_string(), "b".to_string()]));
    let members: Vec<String> = c
        .discovery()
        .status()
        .unwrap()
        .members
        .into_iter()
        .map(|d| d.rid)
        .collect();
    assert_eq!(members, ["a", "b"]);
    stop([c, b, a]).await;
}

#[tokio::test]
async fn a_killed_nodes_lease_expires_and_the_others_drop_it() {
    let redis = redis();
    let store = redis_store(&redis);
    let a = echo_server("a", &store, quick_lease()).await;
    let b = echo_server("b", &store, quick_lease()).await;
    let c = echo_client_node("c", &store, quick_lease()).await;
    wait_for_peers(&c, &["a", "b"]).await;
    b.crash().await;
    for rt in [&a, &c] {
        wait_until(WAIT, "b dropped from the member list", || async {
            rt.discovery()
                .status()
                .unwrap()
                .members
                .iter()
                .all(|d| d.rid != "b")
        })
        .await;
    }
    wait_for_peers(&c, &["a"]).await;
    wait_for_peers(&a, &["c"]).await;
    for _ in 0..3 {
        assert_eq!(echo_by(&c).await, "a");
    }
    stop([c, a]).await;
}

#[tokio::test]
async fn redis_paused_keeps_existing_traffic_and_a_node_started_meanwhile_waits_for_it() {
    // Long enough that no lease expires during the pause: renew 500 ms, TTL 6 s.
    let lease = OwnerLeaseSettings {
        renew_interval: Duration::from_millis(500),
        ttl: Duration::from_secs(6),
        renew_timeout: Duration::from_millis(500),
        fencing_margin: Duration::from_secs(2),
    };
    let redis = redis();
    let store = redis_store(&redis);
    let a = echo_server("a", &store, lease).await;
    let c = echo_client_node("c", &store, lease).await;
    wait_for_peers(&c, &["a"]).await;

    redis.pause().unwrap();
    wait_until(WAIT, "c notices the store is unreachable", || async {
        !c.discovery().status().unwrap().store_reachable
    })
    .await;
    let d = echo_server("d", &store, lease).await;
    // While Redis stays paused: the existing connection serves, nobody meets d.
    for _ in 0..10 {
        assert_eq!(echo_by(&c).await, "a");
        assert_eq!(peer_rids(&c), ["a"]);
        assert!(peer_rids(&d).is_empty());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!c.discovery().status().unwrap().grace_expired);

    redis.resume().unwrap();
    wait_for_peers(&c, &["a", "d"]).await;
    wait_for_peers(&d, &["a", "c"]).await;
    let mut answered = HashSet::new();
    for _ in 0..4 {
        answered.insert(echo_by(&c).await);
    }
    assert_eq!(answered, HashSet::from(["a".to_string(), "d".to_string()]));
    stop([d, c, a]).await;
}

#[tokio::test]
async fn a_host_that_loses_redis_stops_admitting_at_its_deadline_and_publishes_nothing() {
    let redis = redis();
    let store = redis_store(&redis);
    let a = echo_server("a", &store, quick_lease()).await;
    wait_until(WAIT, "a publishes", || async {
        a.discovery().status().unwrap().published_revision.is_some()
    })
    .await;
    assert!(a.discovery().owner_lease().unwrap().admits_new_work());
    let published = a.discovery().status().unwrap().published_revision;

    redis.pause().unwrap();
    wait_until(WAIT, "a's admission deadline passes", || async {
        !a.discovery().owner_lease().unwrap().admits_new_work()
    })
    .await;
    let deadline = a.discovery().owner_lease().unwrap().admission_deadline;
    a.channels().set_weight(CHANNEL, 7).unwrap();
    // Past the deadline nothing is published, however often discovery runs.
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            a.discovery().status().unwrap().published_revision,
            published
        );
        assert!(!a.discovery().owner_lease().unwrap().admits_new_work());
    }
    // The deadline never moved while the store was away.
    assert!(
        a.discovery().owner_lease().unwrap().admission_deadline <= deadline
            || a.discovery().owner_lease().unwrap().token.is_none()
    );

    redis.resume().unwrap();
    wait_until(
        WAIT,
        "a admits again and publishes the new weight",
        || async {
            let lease = a.discovery().owner_lease().unwrap();
            lease.admits_new_work()
                && a.discovery().status().unwrap().published_revision > published
        },
    )
    .await;
    stop([a]).await;
}

#[tokio::test]
async fn a_restarted_node_on_the_same_endpoint_is_a_new_lifecycle() {
    let redis = redis();
    let store = redis_store(&redis);
    let endpoint = unused_endpoint();
    let server = |store| {
        discovered_node("a", store, quick_lease())
            .listen(endpoint.clone())
            .channel_server(CHANNEL, echo_handlers("a", Default::default()))
    };
    let a = start(server(&store)).await;
    let c = echo_client_node("c", &store, quick_lease()).await;
    wait_for_peers(&c, &["a"]).await;
    let first = c.nodes().peers()[0].generation;
    assert_eq!(first, a.handle().generation());

    // Killed: its lease lives on, so the RID is still taken...
    a.crash().await;
    let refused = server(&store).build().unwrap().start().await;
    match refused {
        Err(e) => assert!(e.is(ErrorKind::AlreadyExists), "{e}"),
        Ok(_) => panic!("a second live owner of rid a was admitted"),
    }
    // ...until it expires; then the same RID on the same endpoint starts as a new lifecycle.
    let give_up = tokio::time::Instant::now() + WAIT;
    let a2 = loop {
        match server(&store).build().unwrap().start().await {
            Ok(rt) => break rt,
            Err(e) => {
                assert!(e.is(ErrorKind::AlreadyExists), "{e}");
                assert!(
                    tokio::time::Instant::now() < give_up,
                    "old lease never expired"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    assert_ne!(a2.handle().generation(), first);
    wait_until(WAIT, "c is connected to the new lifecycle", || async {
        c.nodes()
            .peers()
            .iter()
            .any(|p| p.rid == "a" && p.generation == a2.handle().generation())
    })
    .await;
    assert_eq!(echo_by(&c).await, "a");
    stop([c, a2]).await;
}

#[tokio::test]
async fn manual_and_discovered_peers_combine() {
    let redis = redis();
    let store = redis_store(&redis);
    let a = echo_server("a", &store, quick_lease()).await;
    let c = echo_client_node("c", &store, quick_lease()).await;
    // m uses no store at all: it lists a by hand.
    let m = start(
        node("m")
            .channel_client(CHANNEL)
            .peer(zlink::PeerSpec::new(a.endpoint()).expect_rid("a")),
    )
    .await;
    wait_for_peers(&c, &["a"]).await;
    wait_for_peers(&m, &["a"]).await;
    wait_for_peers(&a, &["c", "m"]).await;
    // Several discovery rounds later, a still keeps the manual peer.
    let rounds = a.discovery().status().unwrap().last_complete_read;
    wait_until(WAIT, "a re-read the member list", || async {
        a.discovery().status().unwrap().last_complete_read > rounds
    })
    .await;
    assert_eq!(echo_by(&m).await, "a");
    assert_eq!(peer_rids(&a), ["c", "m"]);
    stop([m, c, a]).await;
}

#[tokio::test]
async fn weight_changes_travel_in_the_descriptor_revision() {
    let redis = redis();
    let store = redis_store(&redis);
    let a = echo_server("a", &store, quick_lease()).await;
    let c = echo_client_node("c", &store, quick_lease()).await;
    wait_for_peers(&c, &["a"]).await;
    let before = a.discovery().status().unwrap().published_revision.unwrap();
    a.channels().set_weight(CHANNEL, 0).unwrap();
    wait_until(WAIT, "the new revision is published", || async {
        a.discovery().status().unwrap().published_revision > Some(before)
    })
    .await;
    let key = zlink::store::DescriptorKey::mesh_node(MESH, "a");
    let entry = store
        .read_descriptor(&key)
        .await
        .unwrap()
        .expect("a's descriptor");
    let descriptor = zlink::store::MeshDescriptor::decode(&entry.body).unwrap();
    assert!(descriptor.revision > before);
    assert_eq!(descriptor.channels, vec![(CHANNEL.to_string(), 0)]);
    wait_until(WAIT, "c's member list shows weight 0", || async {
        c.discovery()
            .status()
            .unwrap()
            .members
            .iter()
            .any(|d| d.rid == "a" && d.channels == vec![(CHANNEL.to_string(), 0)])
    })
    .await;
    stop([c, a]).await;
}

#[tokio::test]
async fn after_redis_restarts_empty_nodes_claim_new_leases_and_publish_again() {
    let redis = redis();
    let store = redis_store(&redis);
    let a = echo_server("a", &store, quick_lease()).await;
    let c = echo_client_node("c", &store, quick_lease()).await;
    wait_for_peers(&c, &["a"]).await;

    redis.restart().unwrap();
    let key = zlink::store::DescriptorKey::mesh_node(MESH, "a");
    wait_until(WAIT, "a claims a lease and publishes again", || async {
        matches!(store.read_descriptor(&key).await, Ok(Some(e)) if e.owner_alive)
    })
    .await;
    wait_for_peers(&c, &["a"]).await;
    assert_eq!(echo_by(&c).await, "a");
    stop([c, a]).await;
}
