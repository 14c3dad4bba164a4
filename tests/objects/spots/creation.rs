//! Creating Spots: exactly one factory under a race, a declined creation that leaves nothing, a
//! type mismatch, a crash while Creating, and a caller that gave up.

use super::*;

#[tokio::test]
async fn only_one_factory_runs_under_a_creation_race_across_3_nodes() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let nodes = [
        object_server("a", &store, &counters).await,
        object_server("b", &store, &counters).await,
        object_server("c", &store, &counters).await,
    ];
    let races = nodes.iter().flat_map(|rt| {
        (0..4).map(move |_| rt.spots().get_or_create("lobby", "room", Bytes::new()))
    });
    let outcomes = futures::future::join_all(races).await;
    let created = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(SpotCreation::Created(..))))
        .count();
    let existing = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(SpotCreation::Existing(_))))
        .count();
    assert_eq!((created, existing), (1, 11), "{outcomes:?}");
    assert_eq!(
        counters.factories.load(Ordering::SeqCst),
        1,
        "exactly one factory ran"
    );
    // Create (not get-or-create) takes a fresh ID. (Another type under an existing ID:
    // `a_spot_get_or_create_with_another_type_is_type_mismatch`.)
    let again = nodes[0].spots().create("room", Bytes::new()).await.unwrap();
    assert!(
        matches!(again, SpotCreation::Created(..)),
        "a fresh UUID is free"
    );
    let [a, b, c] = nodes;
    stop([c, b, a]).await;
}

#[tokio::test]
async fn a_declined_creation_leaves_nothing_and_close_checks_the_generation() {
    let RoomServerAndCaller {
        _redis,
        counters: _,
        a,
        b,
    } = room_server_and_caller().await;

    let declined = a.spots().get_or_create("r", "room", "no").await.unwrap();
    assert_eq!(
        declined,
        SpotCreation::Rejected(Bytes::from_static(b"declined"))
    );
    assert_eq!(a.spots().find("r").await.unwrap(), None);

    let SpotCreation::Created(first, _) = a.spots().get_or_create("r", "room", "").await.unwrap()
    else {
        panic!("not created")
    };
    b.spots()
        .request("r", &Say("to the first".into()))
        .await
        .unwrap();
    assert!(a.spots().close(&first).await.unwrap());
    assert!(!a.spots().close(&first).await.unwrap(), "gone already");
    // b's cached route is stale now: the call is refused, never sent elsewhere, and
    // ends as the store says r is now: gone.
    let stale = b
        .spots()
        .request("r", &Say("late".into()))
        .await
        .unwrap_err();
    assert!(stale.is(ErrorKind::NotFound), "{stale}");
    let missing = b
        .spots()
        .request("r", &Say("later".into()))
        .await
        .unwrap_err();
    assert!(missing.is(ErrorKind::NotFound), "{missing}");

    let SpotCreation::Created(second, _) = a.spots().get_or_create("r", "room", "").await.unwrap()
    else {
        panic!("not re-created")
    };
    assert!(second.generation > first.generation);
    let old = a.spots().close(&first).await.unwrap_err();
    assert!(old.is(ErrorKind::InvalidOperation), "{old}");
    let said = b
        .spots()
        .request("r", &Say("to the second".into()))
        .await
        .unwrap();
    assert_eq!(said.lines, 1, "a fresh incarnation");
    stop([b, a]).await;
}

#[test]
fn a_spot_type_without_a_store_or_registered_twice_is_a_startup_error() {
    let counters = Counters::default();
    let err = node("x")
        .spot_type(room_type("x", &counters))
        .spot_type(room_type("x", &counters))
        .build()
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(text.contains("registered twice"), "{text}");
    assert!(text.contains("needs a Location Store"), "{text}");
    let too_long = node("x")
        .location_store(<dyn zlink::store::LocationStore>::in_memory())
        .route_cache_max_age(std::time::Duration::from_secs(26))
        .build()
        .err()
        .expect("refused");
    assert!(
        too_long.to_string().contains("route_cache_max_age"),
        "{too_long}"
    );
    assert!(SpotType::new("t", Relocation::Disable, |_| Twice).is_err());
}

/// A hand-written Spot type that lists one packet twice.
struct Twice;

impl Spot for Twice {}

#[zlink::async_trait]
impl SpotHandlers for Twice {
    fn packets() -> Vec<(String, PacketKind)> {
        vec![
            ("P".into(), PacketKind::Send),
            ("P".into(), PacketKind::Send),
        ]
    }

    async fn handle(&mut self, _: &SpotContext, _: usize, _: Payload) -> zlink::Result<Payload> {
        Ok(Payload::default())
    }
}

#[tokio::test]
async fn a_crash_during_creating_is_cancelled_by_the_next_operation_on_the_id() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    // a starts creating "x" and never finishes: on_create hangs.
    let hanging = tokio::spawn({
        let a = a.clone();
        async move { a.spots().get_or_create("x", "room", "hang").await }
    });
    wait_until(WAIT, "a's factory ran", || async {
        counters.factories.load(Ordering::SeqCst) == 1
    })
    .await;
    let b = object_server("b", &store, &counters).await;
    a.crash().await;
    // The next operation on the ID waits out the dead owner's lease, then cancels exactly
    // that Creating record and creates afresh, with a higher generation.
    let created = b.spots().get_or_create("x", "room", "").await.unwrap();
    let SpotCreation::Created(spot, _) = created else {
        panic!("not created: {created:?}")
    };
    assert_eq!(spot.rid, "b");
    assert!(
        spot.generation >= 2,
        "the crashed attempt's generation is not reused"
    );
    assert_eq!(counters.factories.load(Ordering::SeqCst), 2);
    hanging.abort();
    stop([b]).await;
}

#[tokio::test]
async fn a_creation_whose_caller_gave_up_still_completes() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    // The caller drops its get-or-create while on_create runs (300 ms).
    let gave_up = tokio::time::timeout(
        std::time::Duration::from_millis(50),
        a.spots().get_or_create("late", "room", "slow"),
    )
    .await;
    assert!(gave_up.is_err());
    // The attempt finished on its own: the next call finds the Spot, with no lease to
    // wait out and no second factory.
    let started = tokio::time::Instant::now();
    let found = a.spots().get_or_create("late", "room", "").await.unwrap();
    assert!(matches!(found, SpotCreation::Existing(_)), "{found:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    assert_eq!(counters.factories.load(Ordering::SeqCst), 1);
    stop([a]).await;
}

#[tokio::test]
async fn a_spot_get_or_create_with_another_type_is_type_mismatch() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let reasons = Reasons::default();
    // a serves both types, so the other type is not simply unknown.
    let a = start(
        discovered_node("a", &store, quick_lease())
            .spot_type(room_type("a", &counters))
            .spot_type(tally_type(&reasons)),
    )
    .await;
    let b = plain_node("b", &store).await;
    sees_servers(&b, &["a"]).await;
    let SpotCreation::Created(room, _) = a.spots().get_or_create("r", "room", "").await.unwrap()
    else {
        panic!("not created")
    };
    b.spots().request("r", &Say("one".into())).await.unwrap();

    // On the owner and from another node: the existing Spot's type wins.
    for rt in [&a, &b] {
        let other = rt
            .spots()
            .get_or_create("r", Tally::STABLE_TYPE, "")
            .await
            .unwrap_err();
        assert_eq!(other.kind(), Some(ErrorKind::TypeMismatch), "{other}");
    }
    // The existing Spot is untouched: same incarnation, its state goes on, no factory or
    // closing hook of either type ran.
    assert_eq!(b.spots().find("r").await.unwrap(), Some(room));
    let said = b.spots().request("r", &Say("two".into())).await.unwrap();
    assert_eq!((said.lines, said.by.as_str()), (2, "a"));
    assert_eq!(counters.factories.load(Ordering::SeqCst), 1);
    assert!(reasons.lock().unwrap().is_empty());
    assert_eq!(a.status().spots_owned, 1);
    // The right type still finds it.
    let same = b.spots().get_or_create("r", "room", "").await.unwrap();
    assert!(matches!(same, SpotCreation::Existing(_)), "{same:?}");
    stop([b, a]).await;
}

/// A Spot whose `on_create` (between the Reserve and the Commit) can make the store lose
/// the Commit's result: the creation request "lose-commit" says so.
struct Ledger {
    lines: usize,
    faults: Arc<zlink_testkit::FaultyLocationStore>,
}

#[zlink::spot(type = "ledger", relocation = disable)]
impl Ledger {
    #[handler]
    async fn say(&mut self, _say: Say, ctx: &SpotContext) -> zlink::Result<Said> {
        self.lines += 1;
        Ok(Said {
            lines: self.lines,
            by: ctx.handle().rid().to_string(),
            trace: None,
        })
    }
}

#[zlink::async_trait]
impl Spot for Ledger {
    async fn on_create(&mut self, _ctx: &SpotContext, request: Bytes) -> CreateDecision {
        if request.as_ref() == b"lose-commit" {
            self.faults.lose_result_of_next_apply(1);
        }
        CreateDecision::Accept(Bytes::from_static(b"welcome"))
    }
}

#[tokio::test]
async fn a_lost_store_result_during_creation_is_re_read_and_exactly_one_factory_runs() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let faulty = Arc::new(zlink_testkit::FaultyLocationStore::new(store.clone()));
    let owner_store: Arc<dyn zlink::store::LocationStore> = faulty.clone();
    // Which batch a lost result hit: a reserve (the record must be missing) or a commit
    // (a fenced write).
    let hit = || -> Vec<&'static str> {
        faulty
            .take_lost_batches()
            .iter()
            .map(|batch| {
                let reserve = batch
                    .conditions
                    .iter()
                    .any(|c| matches!(c, zlink::store::Condition::Missing(_)));
                if reserve {
                    "reserve"
                } else {
                    "commit"
                }
            })
            .collect()
    };
    let factories = Arc::new(AtomicUsize::new(0));
    let ledger = {
        let (faulty, factories) = (faulty.clone(), factories.clone());
        Ledger::spot_type(move |_| {
            factories.fetch_add(1, Ordering::SeqCst);
            Ledger {
                lines: 0,
                faults: faulty.clone(),
            }
        })
        .unwrap()
    };
    // Only a serves ledgers, and only a's store loses results.
    let a = start(discovered_node("a", &owner_store, quick_lease()).spot_type(ledger)).await;
    let b = plain_node("b", &store).await;
    sees_servers(&b, &["a"]).await;

    for (lost, request) in [("reserve", ""), ("commit", "lose-commit")] {
        for must_be_new in [false, true] {
            let case = format!("{lost} lost, must_be_new {must_be_new}");
            let before = factories.load(Ordering::SeqCst);
            hit();
            if lost == "reserve" {
                faulty.lose_result_of_next_apply(1);
            }
            // get_or_create from another node (a creates on its behalf); create on a.
            let (caller, second) = if must_be_new { (&a, &b) } else { (&b, &a) };
            let created = if must_be_new {
                caller.spots().create(Ledger::STABLE_TYPE, request).await
            } else {
                let id = format!("by-id-{lost}");
                caller
                    .spots()
                    .get_or_create(&id, Ledger::STABLE_TYPE, request)
                    .await
            };
            let Ok(SpotCreation::Created(spot, reply)) = created else {
                panic!("{case}: {created:?}")
            };
            assert_eq!(reply, Bytes::from_static(b"welcome"), "{case}");
            assert_eq!(hit(), [lost], "{case}: the fault hit that batch");
            assert_eq!(
                (spot.rid.as_str(), spot.generation),
                ("a", 1),
                "{case}: one reservation, read back rather than made again"
            );
            let again = second
                .spots()
                .get_or_create(spot.id.as_str(), Ledger::STABLE_TYPE, "")
                .await
                .unwrap();
            assert_eq!(again, SpotCreation::Existing(spot.clone()), "{case}");
            assert_eq!(
                factories.load(Ordering::SeqCst),
                before + 1,
                "{case}: exactly one factory ran"
            );
            let said = second
                .spots()
                .request(spot.id.as_str(), &Say("hello".into()))
                .await
                .unwrap();
            assert_eq!((said.lines, said.by.as_str()), (1, "a"), "{case}");
        }
    }
    assert_eq!(a.status().spots_owned, 4);
    stop([b, a]).await;
}
