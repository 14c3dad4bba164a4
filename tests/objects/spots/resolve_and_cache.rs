//! Resolving a Spot by ID and the route cache: a direct call needs only the ID, a hit reads no
//! store, Missing and store failures are never cached, and the cache lives within the admission
//! deadline.

use super::*;

#[tokio::test]
async fn direct_calls_take_only_the_id_and_reach_the_owner_from_another_node() {
    let RoomServerAndCaller { _redis, a, b, .. } = room_server_and_caller().await;

    let (room, reply) = created_room(&a, "room-1", "not created").await;
    assert_eq!(reply, Bytes::from_static(b"welcome"));
    assert_eq!((room.rid.as_str(), room.generation), ("a", 1));
    assert_eq!(a.status().spots_owned, 1);

    let said = say(&b, "room-1", "hello").await.unwrap();
    assert_eq!((said.lines, said.by.as_str()), (1, "a"));
    b.spots()
        .send("room-1", &Shout("hey".into()))
        .await
        .unwrap();
    let said = say(&b, "room-1", "again").await.unwrap();
    assert_eq!(said.lines, 3, "the send ran before the request behind it");
    assert_eq!(b.spots().find("room-1").await.unwrap(), Some(room));
    let unknown = say(&b, "no-such-room", "?").await.unwrap_err();
    assert!(unknown.is(ErrorKind::NotFound), "{unknown}");
    stop([b, a]).await;
}

#[tokio::test]
async fn a_cache_hit_makes_zero_store_reads() {
    let RoomServerAndCaller { _redis, a, b, .. } = room_server_and_caller().await;
    a.spots()
        .get_or_create("room-1", "room", Bytes::new())
        .await
        .unwrap();

    let before = record_reads(&b);
    say(&b, "room-1", "miss").await.unwrap();
    assert_eq!(
        record_reads(&b),
        before + 1,
        "a miss reads the authority once"
    );
    for i in 0..20 {
        say(&b, "room-1", &format!("hit {i}")).await.unwrap();
    }
    assert_eq!(record_reads(&b), before + 1, "cache hits read nothing");
    stop([b, a]).await;
}

#[tokio::test]
async fn a_dead_owner_gives_unavailable_and_nothing_is_activated_elsewhere() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    // b serves the type too, but takes no new Spots: the room lands on a.
    let b = weighted_server("b", &store, &counters, 0).await;
    wait_until(WAIT, "a and b connected", || async {
        peer_rids(&b) == ["a"]
    })
    .await;
    a.spots().get_or_create("r", "room", "").await.unwrap();
    say(&b, "r", "before").await.unwrap();
    a.crash().await;
    wait_until(WAIT, "b lost a", || async { peer_rids(&b).is_empty() }).await;
    let dead = say(&b, "r", "after").await.unwrap_err();
    assert!(dead.is(ErrorKind::Unavailable), "{dead}");
    // The authority stays with the dead owner: get-or-create finds it, creates nothing.
    let found = b.spots().get_or_create("r", "room", "").await.unwrap();
    assert!(
        matches!(found, SpotCreation::Existing(ref r) if r.rid == "a"),
        "{found:?}"
    );
    assert_eq!(counters.factories.load(Ordering::SeqCst), 1);
    stop([b]).await;
}

#[tokio::test]
async fn missing_and_store_failure_are_never_cached() {
    let (RoomServerAndCaller { _redis, a, b, .. }, faulty) = room_server_and_faulty_caller().await;
    let missing = say(&b, "later", "?").await.unwrap_err();
    assert!(missing.is(ErrorKind::NotFound), "{missing}");
    a.spots().get_or_create("later", "room", "").await.unwrap();
    say(&b, "later", "now").await.unwrap();

    a.spots().get_or_create("other", "room", "").await.unwrap();
    faulty.set_down(true);
    let failed = say(&b, "other", "?").await.unwrap_err();
    assert!(failed.is(ErrorKind::Unavailable), "{failed}");
    faulty.set_down(false);
    say(&b, "other", "back").await.unwrap();
    stop([b, a]).await;
}

#[tokio::test]
async fn the_route_cache_lives_within_the_admission_deadline() {
    let (RoomServerAndCaller { _redis, a, b, .. }, faulty) = room_server_and_faulty_caller().await;
    a.spots().get_or_create("r", "room", "").await.unwrap();
    say(&b, "r", "cached").await.unwrap();

    // b loses the store: its cached route still serves it, until its own lease's admission
    // deadline passes.
    faulty.set_down(true);
    say(&b, "r", "from the cache").await.unwrap();
    wait_until(WAIT, "b's admission deadline passed", || async {
        !b.discovery().owner_lease().unwrap().admits_new_work()
    })
    .await;
    let expired = say(&b, "r", "?").await.unwrap_err();
    assert!(expired.is(ErrorKind::Unavailable), "{expired}");

    faulty.set_down(false);
    wait_until(WAIT, "b reaches the room again", || async {
        say(&b, "r", "back").await.is_ok()
    })
    .await;
    stop([b, a]).await;
}

#[tokio::test]
async fn missing_and_unavailable_are_distinct_results_each_reaching_only_its_caller() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    let warm = plain_node("warm", &store).await;
    let cold = plain_node("cold", &store).await;
    sees_servers(&warm, &["a"]).await;
    sees_servers(&cold, &["a"]).await;
    a.spots().get_or_create("r", "room", "").await.unwrap();
    // `warm` has the route cached; `cold` never asked.
    say(&warm, "r", "before").await.unwrap();
    a.crash().await;
    wait_until(WAIT, "both callers lost a", || async {
        !peer_rids(&warm).contains(&"a".to_string()) && !peer_rids(&cold).contains(&"a".to_string())
    })
    .await;

    // Interleaved from both callers: each request gets the result of its own ID, exactly.
    let calls = [&warm, &cold].into_iter().flat_map(|rt| {
        (0..4).map(move |i| async move {
            let id = if i % 2 == 0 { "never-was" } else { "r" };
            let result = say(rt, id, &format!("{i}")).await;
            (rt.rid().to_string(), id, result)
        })
    });
    for (caller, id, result) in futures::future::join_all(calls).await {
        let err = result.expect_err("neither ID can answer");
        let want = if id == "never-was" {
            ErrorKind::NotFound
        } else {
            ErrorKind::Unavailable
        };
        assert_eq!(err.kind(), Some(want), "{caller} asking {id}: {err}");
    }
    // Missing stays Missing (nothing was created for it), and the dead owner keeps its
    // authority (Unavailable is not Missing).
    assert_eq!(cold.spots().find("never-was").await.unwrap(), None);
    assert!(cold.spots().find("r").await.unwrap().is_some());
    assert_eq!(counters.factories.load(Ordering::SeqCst), 1);
    stop([cold, warm]).await;
}

#[tokio::test]
async fn a_local_route_that_found_a_closed_incarnation_reaches_the_one_created_after_it() {
    let RoomServerAndCaller {
        _redis,
        counters,
        a,
        b,
    } = room_server_and_caller().await;
    let (first, _) = created_room(&a, "room-1", "not created").await;
    // Calls on the owner's node: the route they share finds the first incarnation.
    for expected in 1..=2 {
        let said = say(&a, "room-1", "one").await.unwrap();
        assert_eq!((said.lines, said.by.as_str()), (expected, "a"));
    }
    assert!(a.spots().close(&first).await.unwrap());
    let (second, _) = created_room(&a, "room-1", "not created again").await;
    assert_eq!(second.generation, first.generation + 1);
    assert_eq!(counters.factories.load(Ordering::SeqCst), 2);
    for expected in 1..=3 {
        let said = say(&a, "room-1", "two").await.unwrap();
        assert_eq!(
            said.lines, expected,
            "the new incarnation answers, from its own first line"
        );
    }
    a.spots()
        .send("room-1", &Shout("sent".into()))
        .await
        .unwrap();
    let said = say(&a, "room-1", "last").await.unwrap();
    assert_eq!(said.lines, 5, "the send reached the new incarnation too");
    stop([b, a]).await;
}

/// A caller whose route cache holds 8 routes calls 40 Rooms on another node, and one of
/// them between every other call: every call is answered, a call to a route the cache let
/// go reads the store once (no scan, no repeat), and the Room in use keeps its route.
#[tokio::test]
async fn a_route_cache_smaller_than_the_objects_called_evicts_the_unused_and_a_miss_reads_once() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    let b = start(discovered_node("b", &store, quick_lease()).route_cache_capacity(8)).await;
    wait_until(WAIT, "a and b connected", || async {
        peer_rids(&b) == ["a"]
    })
    .await;
    let rooms: Vec<String> = (0..40).map(|i| format!("room-{i}")).collect();
    for room in rooms.iter().chain(["hot".to_string()].iter()) {
        a.spots().get_or_create(room, "room", "").await.unwrap();
    }
    say(&b, "hot", "first").await.unwrap();
    say(&b, "hot", "again").await.unwrap();
    for round in 0..2 {
        for room in &rooms {
            let before = record_reads(&b);
            say(&b, room, "cold").await.unwrap();
            assert_eq!(
                record_reads(&b),
                before + 1,
                "round {round}: a route the cache does not hold is read once ({room})"
            );
            let before = record_reads(&b);
            say(&b, "hot", "hot").await.unwrap();
            assert_eq!(
                record_reads(&b),
                before,
                "round {round}: the Room in use keeps its route ({room})"
            );
        }
    }
    let held = b.status().route_cache;
    assert_eq!((held.capacity, held.routes), (8, 8), "full, and no fuller");
    stop([b, a]).await;
}

#[tokio::test]
async fn a_route_cache_of_no_routes_is_refused_with_the_way_to_turn_caching_off() {
    let refused = Runtime::builder()
        .mesh_name("m")
        .route_cache_capacity(0)
        .build()
        .err()
        .expect("a route cache of 0 routes is a configuration error");
    assert!(
        refused.to_string().contains("route_cache_capacity"),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("route_cache_max_age"),
        "{refused}"
    );
}

/// A Spot closed on its owner leaves no route there: the owner's cache lets go of the
/// closed incarnation's route as it closes, not when the cache runs out of room.
#[tokio::test]
async fn a_closed_spot_leaves_no_route_on_its_owner() {
    let RoomServerAndCaller { _redis, a, b, .. } = room_server_and_caller().await;
    let (room, _) = created_room(&a, "closing-room", "not created").await;
    say(&a, "closing-room", "hello").await.unwrap();
    assert_eq!(
        a.status().route_cache.routes,
        1,
        "the owner's own call took a route"
    );
    assert!(a.spots().close(&room).await.unwrap());
    assert_eq!(
        a.status().route_cache.routes,
        0,
        "the closed Spot's route went with it"
    );
    stop([b, a]).await;
}
