//! Resolving a Spot by ID and the route cache: a direct call needs only the ID, a hit reads no
//! store, Missing and store failures are never cached, and the cache lives within the admission
//! deadline.

use super::*;

#[tokio::test]
async fn direct_calls_take_only_the_id_and_reach_the_owner_from_another_node() {
    let RoomServerAndCaller {
        _redis,
        counters: _,
        a,
        b,
    } = room_server_and_caller().await;

    let SpotCreation::Created(room, reply) = a
        .spots()
        .get_or_create("room-1", "room", Bytes::new())
        .await
        .unwrap()
    else {
        panic!("not created")
    };
    assert_eq!(reply, Bytes::from_static(b"welcome"));
    assert_eq!((room.rid.as_str(), room.generation), ("a", 1));
    assert_eq!(a.status().spots_owned, 1);

    let said = b
        .spots()
        .request("room-1", &Say("hello".into()))
        .await
        .unwrap();
    assert_eq!((said.lines, said.by.as_str()), (1, "a"));
    b.spots()
        .send("room-1", &Shout("hey".into()))
        .await
        .unwrap();
    let said = b
        .spots()
        .request("room-1", &Say("again".into()))
        .await
        .unwrap();
    assert_eq!(said.lines, 3, "the send ran before the request behind it");
    assert_eq!(b.spots().find("room-1").await.unwrap(), Some(room));
    let unknown = b
        .spots()
        .request("no-such-room", &Say("?".into()))
        .await
        .unwrap_err();
    assert!(unknown.is(ErrorKind::NotFound), "{unknown}");
    stop([b, a]).await;
}

#[tokio::test]
async fn a_cache_hit_makes_zero_store_reads() {
    let RoomServerAndCaller {
        _redis,
        counters: _,
        a,
        b,
    } = room_server_and_caller().await;
    a.spots()
        .get_or_create("room-1", "room", Bytes::new())
        .await
        .unwrap();

    let before = record_reads(&b);
    b.spots()
        .request("room-1", &Say("miss".into()))
        .await
        .unwrap();
    assert_eq!(
        record_reads(&b),
        before + 1,
        "a miss reads the authority once"
    );
    for i in 0..20 {
        b.spots()
            .request("room-1", &Say(format!("hit {i}")))
            .await
            .unwrap();
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
    b.spots().request("r", &Say("before".into())).await.unwrap();
    a.crash().await;
    wait_until(WAIT, "b lost a", || async { peer_rids(&b).is_empty() }).await;
    let dead = b
        .spots()
        .request("r", &Say("after".into()))
        .await
        .unwrap_err();
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
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    let faulty = Arc::new(zlink_testkit::FaultyLocationStore::new(store.clone()));
    let faulty_store: Arc<dyn zlink::store::LocationStore> = faulty.clone();
    let b = plain_node("b", &faulty_store).await;
    wait_until(WAIT, "a and b connected", || async {
        peer_rids(&b) == ["a"]
    })
    .await;
    let missing = b
        .spots()
        .request("later", &Say("?".into()))
        .await
        .unwrap_err();
    assert!(missing.is(ErrorKind::NotFound), "{missing}");
    a.spots().get_or_create("later", "room", "").await.unwrap();
    b.spots()
        .request("later", &Say("now".into()))
        .await
        .unwrap();

    a.spots().get_or_create("other", "room", "").await.unwrap();
    faulty.set_down(true);
    let failed = b
        .spots()
        .request("other", &Say("?".into()))
        .await
        .unwrap_err();
    assert!(failed.is(ErrorKind::Unavailable), "{failed}");
    faulty.set_down(false);
    b.spots()
        .request("other", &Say("back".into()))
        .await
        .unwrap();
    stop([b, a]).await;
}

#[tokio::test]
async fn the_route_cache_lives_within_the_admission_deadline() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    let faulty = Arc::new(zlink_testkit::FaultyLocationStore::new(store.clone()));
    let b_store: Arc<dyn zlink::store::LocationStore> = faulty.clone();
    let b = plain_node("b", &b_store).await;
    wait_until(WAIT, "a and b connected", || async {
        peer_rids(&b) == ["a"]
    })
    .await;
    a.spots().get_or_create("r", "room", "").await.unwrap();
    b.spots().request("r", &Say("cached".into())).await.unwrap();

    // b loses the store: its cached route still serves it, until its own lease's admission
    // deadline passes.
    faulty.set_down(true);
    b.spots()
        .request("r", &Say("from the cache".into()))
        .await
        .unwrap();
    wait_until(WAIT, "b's admission deadline passed", || async {
        !b.discovery().owner_lease().unwrap().admits_new_work()
    })
    .await;
    let expired = b.spots().request("r", &Say("?".into())).await.unwrap_err();
    assert!(expired.is(ErrorKind::Unavailable), "{expired}");

    faulty.set_down(false);
    wait_until(WAIT, "b reaches the room again", || async {
        b.spots().request("r", &Say("back".into())).await.is_ok()
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
    warm.spots()
        .request("r", &Say("before".into()))
        .await
        .unwrap();
    a.crash().await;
    wait_until(WAIT, "both callers lost a", || async {
        !peer_rids(&warm).contains(&"a".to_string()) && !peer_rids(&cold).contains(&"a".to_string())
    })
    .await;

    // Interleaved from both callers: each request gets the result of its own ID, exactly.
    let calls = [&warm, &cold].into_iter().flat_map(|rt| {
        (0..4).map(move |i| async move {
            let id = if i % 2 == 0 { "never-was" } else { "r" };
            let result = rt.spots().request(id, &Say(format!("{i}"))).await;
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
    let SpotCreation::Created(first, _) = a
        .spots()
        .get_or_create("room-1", "room", Bytes::new())
        .await
        .unwrap()
    else {
        panic!("not created")
    };
    // Calls on the owner's node: the route they share finds the first incarnation.
    for expected in 1..=2 {
        let said = a
            .spots()
            .request("room-1", &Say("one".into()))
            .await
            .unwrap();
        assert_eq!((said.lines, said.by.as_str()), (expected, "a"));
    }
    assert!(a.spots().close(&first).await.unwrap());
    let SpotCreation::Created(second, _) = a
        .spots()
        .get_or_create("room-1", "room", Bytes::new())
        .await
        .unwrap()
    else {
        panic!("not created again")
    };
    assert_eq!(second.generation, first.generation + 1);
    assert_eq!(counters.factories.load(Ordering::SeqCst), 2);
    for expected in 1..=3 {
        let said = a
            .spots()
            .request("room-1", &Say("two".into()))
            .await
            .unwrap();
        assert_eq!(
            said.lines, expected,
            "the new incarnation answers, from its own first line"
        );
    }
    a.spots()
        .send("room-1", &Shout("sent".into()))
        .await
        .unwrap();
    let said = a
        .spots()
        .request("room-1", &Say("last".into()))
        .await
        .unwrap();
    assert_eq!(said.lines, 5, "the send reached the new incarnation too");
    stop([b, a]).await;
}
