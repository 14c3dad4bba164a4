//! Placement readiness: `spots().ready(type, n)` and `actors().ready(type, n)` wait for
//! the nodes that can take a new object, woken by events, over real TCP and a real
//! `redis-server`; what they and a failed creation say when nobody is ready.

use std::time::Duration;

use super::*;

/// Long enough that only an event, not the periodic re-read, can make a test pass.
const SLOW_DISCOVERY: Duration = Duration::from_secs(30);

/// A node whose member list is re-read only every 30 s and at lease renewals (every 5 s,
/// the default lease).
fn slow_discovery_node(
    rid: &str,
    store: &Arc<dyn zlink::store::LocationStore>,
) -> zlink::RuntimeBuilder {
    discovered_node(rid, store, zlink::store::OwnerLeaseSettings::default())
        .discovery_interval(SLOW_DISCOVERY)
}

/// The race a new user met: the caller starts first, two servers after it, and the
/// caller's next member-list read is seconds away. The servers' hellos make the caller
/// read the list at once, `ready` returns when both can take Spots (well before the next
/// read), and every creation after it succeeds at the first attempt.
#[tokio::test]
async fn spots_ready_waits_for_servers_that_start_after_the_caller() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    // The servers' RIDs sort before the caller's: they dial it, so its first news of them
    // is their hello.
    let caller = start(slow_discovery_node("z-caller", &store)).await;
    assert!(caller
        .spots()
        .ready_nodes("room")
        .expect("a store")
        .is_empty());
    let waiting = {
        let caller = caller.clone();
        tokio::spawn(async move { caller.spots().ready("room", 2).await })
    };
    let a =
        start(slow_discovery_node("a-rooms", &store).spot_type(room_type("a-rooms", &counters)))
            .await;
    let b =
        start(slow_discovery_node("b-rooms", &store).spot_type(room_type("b-rooms", &counters)))
            .await;
    tokio::time::timeout(Duration::from_secs(3), waiting)
        .await
        .expect("ready returned before the first lease renewal could re-read the list")
        .expect("the task ran")
        .expect("both servers are ready");
    assert_eq!(
        caller.spots().ready_nodes("room").expect("a store"),
        ["a-rooms", "b-rooms"]
    );
    let placement = caller.status().placement.expect("a store");
    assert_eq!(placement.spot_nodes("room"), ["a-rooms", "b-rooms"]);
    for i in 0..20 {
        let created = caller
            .spots()
            .get_or_create(&format!("room-{i}"), "room", Bytes::new())
            .await
            .expect("created without a retry");
        assert!(matches!(created, SpotCreation::Created(..)));
    }
    assert_eq!(counters.factories.load(Ordering::SeqCst), 20);
    stop([caller, a, b]).await;
}

/// A node serving the type counts itself once its lease admits work; a server that starts
/// draining is no longer ready on the nodes that see it.
#[tokio::test]
async fn a_serving_node_is_ready_for_itself_and_a_draining_one_is_not() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    a.spots()
        .ready("room", 1)
        .await
        .expect("a serves room itself");
    assert_eq!(a.spots().ready_nodes("room").expect("a store"), ["a"]);
    let b = object_server("b", &store, &counters).await;
    a.spots().ready("room", 2).await.expect("a sees b");
    b.spots().ready("room", 2).await.expect("b sees a");

    b.relocate_all().await.expect("b drains");
    assert_eq!(b.spots().ready_nodes("room").expect("a store"), ["a"]);
    stop([a, b]).await;
}

/// An Actor type is ready on a node only once its Entry Spot is claimed; then an Actor
/// can be created there, from the node itself and from another one.
#[tokio::test]
async fn actors_ready_means_an_actor_can_be_created() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let server = start(
        discovered_node("actors-1", &store, quick_lease())
            .actor_type(zlink_tests::relocating::fresh_type("actors-1")),
    )
    .await;
    let caller = plain_node("caller", &store).await;
    caller
        .actors()
        .ready(zlink_tests::relocating::Fresh::STABLE_TYPE, 1)
        .await
        .expect("the Actor server is ready");
    let actor = caller
        .actors()
        .create("hero-1", zlink_tests::relocating::Fresh::STABLE_TYPE)
        .await
        .expect("created at the first attempt");
    assert_eq!(actor.rid, "actors-1");
    let placement = server.status().placement.expect("a store");
    assert_eq!(
        placement.actor_nodes(zlink_tests::relocating::Fresh::STABLE_TYPE),
        ["actors-1"]
    );
    stop([caller, server]).await;
}

/// When nobody is ready in time, `ready` says so and why; a creation that finds nobody
/// names the same causes instead of leaving the user to guess.
#[tokio::test]
async fn ready_and_a_failed_creation_name_what_is_missing() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let caller = start(
        discovered_node("caller", &store, quick_lease())
            .request_timeout(Duration::from_millis(400)),
    )
    .await;
    let err = caller
        .spots()
        .ready("nobody-serves-this", 1)
        .await
        .expect_err("nobody serves the type");
    assert_eq!(err.kind(), Some(ErrorKind::DeadlineExceeded));
    let text = err.to_string();
    assert!(text.contains("nobody-serves-this"), "{text}");
    assert!(text.contains("no member in the last read"), "{text}");

    let err = caller
        .spots()
        .get_or_create("lonely", "nobody-serves-this", Bytes::new())
        .await
        .expect_err("nobody serves the type");
    assert_eq!(err.kind(), Some(ErrorKind::NotFound));
    assert!(err.to_string().contains("spots().ready"), "{err}");

    let err = caller
        .spots()
        .ready("", 1)
        .await
        .expect_err("an empty stable type is an argument error");
    assert!(matches!(err, zlink::Error::InvalidArgument(_)), "{err}");
    stop([caller]).await;
}

/// With the store gone, a creation that finds nobody says the store is unreachable.
#[tokio::test]
async fn a_creation_without_a_reachable_store_says_so() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let caller = start(
        discovered_node("caller", &store, quick_lease())
            .request_timeout(Duration::from_millis(400)),
    )
    .await;
    redis.stop();
    wait_until(WAIT, "the caller sees the store gone", || async {
        caller
            .discovery()
            .status()
            .is_some_and(|s| !s.store_reachable)
    })
    .await;
    let err = caller
        .spots()
        .ready("room", 1)
        .await
        .expect_err("nobody can be ready");
    assert!(err.to_string().contains("unreachable"), "{err}");
    stop([caller]).await;
}
