//! A node's health, as liveness and readiness probes read it: over real TCP and a real
//! `redis-server`, through the public `Runtime::health` and `Operator`.

use std::time::Duration;

use zlink_tests::relocating::{counter_type, Seen};
use zlink_tests::*;

/// Ready means all of: serving, the store reachable, the lease healthy, and the mesh ready
/// for the node's channels and object types. Each is taken away in turn, and the probe
/// says which one failed; an operator view kept after the shutdown reads not alive.
#[tokio::test]
async fn ready_means_serving_store_lease_and_placeable_types_and_says_which_failed() {
    let redis = zlink_testkit::RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let seen = Seen::default();
    let a = start(discovered_node("a", &store, quick_lease()).actor_type(counter_type("a", &seen)))
        .await;
    let operator = a.operator();
    zlink_testkit::wait_until(WAIT, "a is ready", || async { a.health().ready }).await;
    let health = operator.health();
    assert!(health.alive && health.ready, "{health:?}");

    // A maintenance drain: alive, not ready (it takes no new objects), then ready again.
    a.relocate_all().await.unwrap();
    let draining = a.health();
    assert!(draining.alive && !draining.ready);
    assert!(draining.failed().contains(&"serving"), "{draining:?}");
    a.undrain().await.unwrap();
    zlink_testkit::wait_until(WAIT, "ready after undrain", || async { a.health().ready }).await;

    // The Location Store stops answering: the store check fails, then the lease's.
    redis.pause().expect("pause redis");
    zlink_testkit::wait_until(WAIT, "the store and the lease fail", || async {
        let failed = a.health().failed();
        failed.contains(&"store") && failed.contains(&"lease")
    })
    .await;
    assert!(
        a.health().alive,
        "a lost store is no reason to restart the node"
    );
    redis.resume().expect("resume redis");
    zlink_testkit::wait_until(
        Duration::from_secs(20),
        "ready once the store is back",
        || async { a.health().ready },
    )
    .await;

    a.shutdown().await;
    let after = operator.health();
    assert!(!after.alive && !after.ready, "{after:?}");
}

/// A ClientServer client with no reachable server is not ready, and says which channel.
#[tokio::test]
async fn a_client_channel_without_a_ready_server_is_not_ready_and_names_the_channel() {
    let lonely = start(
        node("lonely")
            .client_server(zlink::ClientServer::client("billing").connect("tcp://127.0.0.1:9")),
    )
    .await;
    let health = lonely.health();
    assert!(health.alive && !health.ready);
    assert_eq!(health.failed(), ["channels"]);
    let channels = &health.checks.iter().find(|c| c.name == "channels").unwrap();
    assert!(channels.detail.contains("\"billing\""), "{channels:?}");
    lonely.shutdown().await;
}
