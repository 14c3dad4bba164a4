//! Instance Spots (seed 002 §4.3, reference §2.6 and its rules 14–21), over real TCP and a
//! real `redis-server`: only a call with Instance intent activates one, its message is the
//! first handler call, racing first calls make exactly one, and the recovery pointer goes
//! only after that first handler ran.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use zlink::TestFaults;

use tokio::sync::Semaphore;
use zlink::object::{ClosingReason, Spot, SpotContext, SpotCreation};
use zlink::store::{MemoryRelocationStore, ReadOutcome, RecordKey, RelocationStore};
use zlink::{ErrorKind, Runtime};
use zlink_testkit::{wait_until, RedisServer};
use zlink_tests::instance_matches::*;
use zlink_tests::*;

const WAIT: std::time::Duration = std::time::Duration::from_secs(5);

#[tokio::test]
async fn a_plain_call_to_a_missing_instance_spot_is_not_found_and_activates_nothing() {
    let node = match_node().await;
    let plain = plain_score(&node.rt, "m1", "plain").await.unwrap_err();
    assert!(plain.is(ErrorKind::NotFound), "{plain}");
    assert_eq!(node.rt.spots().find("m1").await.unwrap(), None);
    assert_eq!(node.built.load(Ordering::SeqCst), 0);
    assert!(node.roots.is_empty(), "no recovery root was written");
    node.rt.shutdown().await;
}

#[tokio::test]
async fn an_intent_call_activates_the_spot_and_its_message_is_the_first_handler_call() {
    let node = match_node().await;
    let first = intent_score(&node.rt, "m1", "first").await.unwrap();
    assert_eq!(first.0, ["first"], "the activating message ran first, once");
    let found = node.rt.spots().find("m1").await.unwrap().expect("Ready");
    assert_eq!(found.rid, "a");
    // It exists now: plain calls and intent calls reach the same Spot.
    let plain = plain_score(&node.rt, "m1", "plain").await.unwrap();
    assert_eq!(plain.0, ["first", "plain"]);
    let again = intent_score(&node.rt, "m1", "again").await.unwrap();
    assert_eq!(again.0, ["first", "plain", "again"]);
    assert_eq!(node.built.load(Ordering::SeqCst), 1, "activated once");
    node.rt.shutdown().await;
}

#[tokio::test]
async fn concurrent_first_intent_requests_activate_one_spot_and_each_handler_runs_once() {
    let node = match_node().await;
    let callers = (0..12).map(|i| {
        let rt = node.rt.clone();
        async move { intent_score(&rt, "race", &format!("c{i}")).await }
    });
    let replies: Vec<Log> = futures::future::join_all(callers)
        .await
        .into_iter()
        .map(|reply| reply.expect("every caller is answered"))
        .collect();
    assert_eq!(
        node.built.load(Ordering::SeqCst),
        1,
        "exactly one factory ran"
    );
    let longest = replies.iter().map(|r| r.0.len()).max().unwrap();
    let full = replies.iter().find(|r| r.0.len() == longest).unwrap();
    let mut handled = full.0.clone();
    handled.sort();
    let mut expected: Vec<String> = (0..12).map(|i| format!("c{i}")).collect();
    expected.sort();
    assert_eq!(handled, expected, "each caller's message ran exactly once");
    // The activating message is the first handler call: one reply saw only itself, and
    // it heads the log.
    let winners: Vec<&Log> = replies.iter().filter(|r| r.0.len() == 1).collect();
    assert_eq!(winners.len(), 1, "{replies:?}");
    assert_eq!(full.0[0], winners[0].0[0]);
    node.rt.shutdown().await;
}

#[tokio::test]
async fn a_one_way_intent_call_completes_before_its_handler_and_activates_the_spot() {
    let node = match_node().await;
    // Every handler waits: the one-way must complete anyway.
    let permits = node.gate.acquire_many(PERMITS).await.unwrap();
    tokio::time::timeout(
        WAIT,
        MatchClient::instance(&node.rt, "m2").mark(&Mark {
            by: "one-way".into(),
        }),
    )
    .await
    .expect("the one-way completes while its handler cannot run")
    .unwrap();
    wait_until(WAIT, "m2 is Ready", || async {
        node.rt.spots().find("m2").await.unwrap().is_some()
    })
    .await;
    drop(permits);
    let log = plain_score(&node.rt, "m2", "next").await.unwrap();
    assert_eq!(
        log.0,
        ["one-way", "next"],
        "the one-way was the first handler call"
    );
    node.rt.shutdown().await;
}

#[tokio::test]
async fn the_recovery_pointer_and_its_root_stay_until_the_first_handler_ran() {
    let node = match_node().await;
    let permits = node.gate.acquire_many(PERMITS).await.unwrap();
    let first = tokio::spawn({
        let rt = node.rt.clone();
        async move { intent_score(&rt, "m3", "first").await }
    });
    wait_until(WAIT, "m3 is Ready, its first handler held", || async {
        node.rt.spots().find("m3").await.unwrap().is_some()
    })
    .await;
    assert!(
        recovery_pointer(&node.store, "m3").await.is_some(),
        "Ready, and the first handler has not run: the pointer stays"
    );
    assert_eq!(node.roots.len(), 1, "the activating message is kept");
    drop(permits);
    assert_eq!(first.await.unwrap().unwrap().0, ["first"]);
    wait_until(WAIT, "the pointer and its root are gone", || async {
        recovery_pointer(&node.store, "m3").await.is_none() && node.roots.is_empty()
    })
    .await;
    node.rt.shutdown().await;
}

#[tokio::test]
async fn an_intent_call_to_a_user_spot_or_another_instance_type_is_type_mismatch() {
    let node = match_node().await;
    let created = node
        .rt
        .spots()
        .get_or_create("l1", "lounge", "")
        .await
        .unwrap();
    assert!(matches!(created, SpotCreation::Created(..)));
    let mismatch = intent_score(&node.rt, "l1", "x").await.unwrap_err();
    assert!(mismatch.is(ErrorKind::TypeMismatch), "{mismatch}");
    // Intent for a type that is not an Instance Spot type activates nothing either.
    let not_instance = node
        .rt
        .spots()
        .request("l2", &Score { by: "x".into() })
        .instance("lounge")
        .await
        .unwrap_err();
    assert!(
        not_instance.is(ErrorKind::InvalidOperation),
        "{not_instance}"
    );
    assert_eq!(node.rt.spots().find("l2").await.unwrap(), None);
    node.rt.shutdown().await;
}

#[tokio::test]
async fn a_manager_create_of_an_instance_type_is_invalid_operation_and_leaves_nothing() {
    let node = match_node().await;
    let refused = node
        .rt
        .spots()
        .get_or_create("m4", "match", "")
        .await
        .unwrap_err();
    assert!(refused.is(ErrorKind::InvalidOperation), "{refused}");
    assert_eq!(node.rt.spots().find("m4").await.unwrap(), None);
    assert_eq!(node.built.load(Ordering::SeqCst), 0);
    node.rt.shutdown().await;
}

#[tokio::test]
async fn instance_intent_set_twice_or_on_a_call_that_is_not_to_a_spot_is_invalid_operation() {
    let node = match_node().await;
    let twice = node
        .rt
        .spots()
        .request("m5", &Score { by: "x".into() })
        .instance("match")
        .instance("match")
        .await
        .unwrap_err();
    assert!(twice.is(ErrorKind::InvalidOperation), "{twice}");
    let on_actor = node
        .rt
        .actors()
        .request("p1", &Score { by: "x".into() })
        .instance("match")
        .await
        .unwrap_err();
    assert!(on_actor.is(ErrorKind::InvalidOperation), "{on_actor}");
    assert_eq!(node.built.load(Ordering::SeqCst), 0);
    node.rt.shutdown().await;
}

#[test]
fn an_instance_spot_type_without_a_relocation_store_is_a_startup_error() {
    let store: Arc<dyn zlink::store::LocationStore> =
        Arc::new(zlink::store::MemoryLocationStore::new());
    let built = Runtime::builder()
        .rid("a")
        .mesh_name("m")
        .location_store(store)
        .spot_type(
            Match::spot_type(|_| Match {
                log: Vec::new(),
                gate: Arc::new(Semaphore::new(1)),
            })
            .unwrap(),
        )
        .build();
    let error = built.err().expect("refused at build").to_string();
    assert!(
        error.contains("Instance Spot type") && error.contains("Relocation Store"),
        "{error}"
    );
}

#[tokio::test]
async fn racing_first_intent_calls_from_three_nodes_activate_one_spot_on_a_serving_node() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let built = Arc::new(AtomicUsize::new(0));
    // a serves no matches: its intent calls go to b or c (command 39).
    let nodes = [
        mesh_node("a", &store, None).await,
        mesh_node("b", &store, Some(&built)).await,
        mesh_node("c", &store, Some(&built)).await,
    ];
    wait_until(WAIT, "a sees both match servers", || async {
        nodes[0].spots().ready_nodes("match").unwrap_or_default() == ["b", "c"]
    })
    .await;
    let callers = nodes.iter().flat_map(|rt| {
        (0..4).map(move |i| {
            let rt = rt.handle().clone();
            async move { intent_score(&rt, "final", &format!("{}{i}", rt.rid())).await }
        })
    });
    let replies: Vec<Log> = futures::future::join_all(callers)
        .await
        .into_iter()
        .map(|reply| reply.expect("every caller is answered"))
        .collect();
    assert_eq!(
        built.load(Ordering::SeqCst),
        1,
        "exactly one factory ran in the mesh"
    );
    let full = replies.iter().max_by_key(|r| r.0.len()).unwrap();
    assert_eq!(
        full.0.len(),
        12,
        "each of the 12 messages ran exactly once: {full:?}"
    );
    let mut distinct = full.0.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 12);
    let winners = replies.iter().filter(|r| r.0.len() == 1).count();
    assert_eq!(winners, 1, "one message was the first handler call");
    let owner = nodes[0].spots().find("final").await.unwrap().unwrap().rid;
    assert!(
        owner == "b" || owner == "c",
        "activated on a serving node: {owner}"
    );
    let [a, b, c] = nodes;
    stop([c, b, a]).await;
}

#[tokio::test]
async fn an_intent_call_for_a_type_no_node_serves_is_not_found_and_activates_nothing() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let a = mesh_node("a", &store, None).await;
    let missing = intent_score(&a, "m", "x").await.unwrap_err();
    assert!(missing.is(ErrorKind::NotFound), "{missing}");
    assert!(
        missing.to_string().contains("no ready node serves"),
        "{missing}"
    );
    assert_eq!(a.spots().find("m").await.unwrap(), None);
    a.shutdown().await;
}

#[tokio::test]
async fn a_crash_after_the_reservation_is_cancelled_and_the_next_intent_call_activates_a_new_generation(
) {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let built = Arc::new(AtomicUsize::new(0));
    // a alone serves matches, and its activations stop right after their reservation.
    let a = faulty_match_node("a", &store, &built, |b| {
        b.test_hold_activation_after_reserve()
    })
    .await;
    let held = tokio::spawn({
        let a = a.clone();
        async move { intent_score(&a, "m", "lost").await }
    });
    wait_until(WAIT, "a reserved m", || async {
        matches!(
            store
                .read(&RecordKey::new("zla1:s:1:m", "authority"))
                .await
                .unwrap(),
            ReadOutcome::Found { .. }
        )
    })
    .await;
    assert!(
        recovery_pointer(&store, "m").await.is_some(),
        "the reservation names its recovery root"
    );
    let b = faulty_match_node("b", &store, &built, |b| b).await;
    a.crash().await;
    held.abort();
    // b's intent call waits out a's lease, cancels exactly that reservation, and
    // activates the Spot afresh: its message is the first handler call, the crashed
    // attempt's is never run.
    let log = intent_score(&b, "m", "b").await.unwrap();
    assert_eq!(log.0, ["b"]);
    let spot = b.spots().find("m").await.unwrap().unwrap();
    assert_eq!(spot.rid, "b");
    assert!(
        spot.generation >= 2,
        "the cancelled generation is not reused: {spot:?}"
    );
    assert_eq!(
        built.load(Ordering::SeqCst),
        1,
        "a's attempt never built the Spot"
    );
    b.shutdown().await;
}

#[tokio::test]
async fn after_an_explicit_close_a_plain_call_is_not_found_and_an_intent_call_activates_a_new_generation(
) {
    let node = match_node().await;
    intent_score(&node.rt, "m", "first").await.unwrap();
    let first = node.rt.spots().find("m").await.unwrap().unwrap();
    assert!(node.rt.spots().close(&first).await.unwrap());
    let plain = plain_score(&node.rt, "m", "plain").await.unwrap_err();
    assert!(plain.is(ErrorKind::NotFound), "{plain}");
    let log = intent_score(&node.rt, "m", "again").await.unwrap();
    assert_eq!(log.0, ["again"], "a new Spot, not the closed one's state");
    let second = node.rt.spots().find("m").await.unwrap().unwrap();
    assert!(
        second.generation > first.generation,
        "{first:?} then {second:?}"
    );
    assert_eq!(node.built.load(Ordering::SeqCst), 2);
    node.rt.shutdown().await;
}

#[tokio::test]
async fn an_idle_instance_spot_is_evicted_then_plain_calls_are_not_found_and_intent_calls_activate_anew(
) {
    let redis = RedisServer::start().expect("redis-server");
    let closings = Arc::default();
    let rt = evicting_node(&redis, IDLE, &closings).await;
    RoundClient::instance(&rt, "r")
        .score(&Score { by: "first".into() })
        .await
        .unwrap();
    let first = rt.spots().find("r").await.unwrap().unwrap();
    // `find` reads None from the Closing record on, which the store holds while
    // on_closing runs: wait for both.
    wait_until(WAIT, "the idle round was evicted", || async {
        rt.spots().find("r").await.unwrap().is_none() && !closings.lock().unwrap().is_empty()
    })
    .await;
    assert_eq!(*closings.lock().unwrap(), [ClosingReason::IdleEvicted]);
    let plain = RoundClient::new(&rt, "r")
        .score(&Score { by: "plain".into() })
        .await
        .unwrap_err();
    assert!(plain.is(ErrorKind::NotFound), "{plain}");
    let again = RoundClient::instance(&rt, "r")
        .score(&Score { by: "again".into() })
        .await
        .unwrap();
    assert_eq!(again.0, ["again"]);
    let second = rt.spots().find("r").await.unwrap().unwrap();
    assert!(
        second.generation > first.generation,
        "{first:?} then {second:?}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn an_instance_spot_with_work_or_an_armed_timer_and_user_spots_are_never_evicted() {
    let redis = RedisServer::start().expect("redis-server");
    let closings = Arc::default();
    let rt = evicting_node(&redis, IDLE, &closings).await;
    // A round called more often than its idle timeout stays.
    let busy = RoundClient::instance(&rt, "busy");
    busy.score(&Score { by: "b".into() }).await.unwrap();
    let calling = tokio::spawn({
        let busy = busy.clone();
        async move {
            loop {
                tokio::time::sleep(IDLE / 5).await;
                busy.score(&Score { by: "b".into() }).await.unwrap();
            }
        }
    });
    // A round with an armed timer stays however quiet its callers are.
    let ticking = RoundClient::instance(&rt, "ticking");
    ticking.arm(&Arm).await.unwrap();
    let lounge = rt.spots().get_or_create("l", "lounge", "").await.unwrap();
    assert!(matches!(lounge, SpotCreation::Created(..)));
    tokio::time::sleep(IDLE * 4).await;
    for id in ["busy", "ticking", "l"] {
        assert!(
            rt.spots().find(id).await.unwrap().is_some(),
            "{id} was evicted"
        );
    }
    assert!(closings.lock().unwrap().is_empty());
    // Once its timer stops, the quiet round goes; the busy one, once quiet, too.
    calling.abort();
    ticking.disarm(&Disarm).await.unwrap();
    wait_until(WAIT, "both rounds were evicted", || async {
        rt.spots().find("ticking").await.unwrap().is_none()
            && rt.spots().find("busy").await.unwrap().is_none()
    })
    .await;
    assert!(
        rt.spots().find("l").await.unwrap().is_some(),
        "a User Spot stays"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn idle_eviction_is_off_by_default() {
    let node = match_node().await;
    intent_score(&node.rt, "m", "x").await.unwrap();
    tokio::time::sleep(IDLE * 3).await;
    assert!(node.rt.spots().find("m").await.unwrap().is_some());
    node.rt.shutdown().await;
}

#[tokio::test]
async fn an_instance_spot_moves_as_one_unit_keeping_its_generation_and_stays_an_instance_spot() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let heat_node = |rid: &'static str| {
        let store = store.clone();
        async move {
            start(
                discovered_node(rid, &store, quick_lease())
                    .spot_type(Heat::spot_type(|_| Heat).unwrap()),
            )
            .await
        }
    };
    let (a, b) = (heat_node("a").await, heat_node("b").await);
    wait_until(WAIT, "a and b see each other", || async {
        peer_rids(&a) == ["b"] && peer_rids(&b) == ["a"]
    })
    .await;
    let first = HeatClient::instance(&a, "h")
        .score(&Score { by: "first".into() })
        .await
        .unwrap();
    let from = first.0[1].clone();
    let to = if from == "a" { "b" } else { "a" };
    let owner = if from == "a" { &a } else { &b };
    let before = a.spots().find("h").await.unwrap().unwrap();
    let moved = owner.spots().relocate("h", Some(to)).await.unwrap();
    assert_eq!(moved.rid, to);
    assert_eq!(
        moved.generation, before.generation,
        "the same incarnation moved"
    );
    // Still an Instance Spot of its type: intent calls reach it, from both nodes, and
    // nothing is activated again.
    for rt in [&a, &b] {
        let log = HeatClient::instance(rt, "h")
            .score(&Score { by: "after".into() })
            .await
            .unwrap();
        assert_eq!(log.0, ["after", to]);
    }
    assert_eq!(
        a.spots().find("h").await.unwrap().unwrap().generation,
        before.generation
    );
    stop([b, a]).await;
}

#[tokio::test]
async fn an_intent_call_on_a_cached_route_to_an_evicted_instance_spot_activates_it_anew() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let built = Arc::new(AtomicUsize::new(0));
    let server = faulty_match_node("b", &store, &built, |b| {
        b.instance_spot_idle_timeout(std::time::Duration::from_millis(300))
    })
    .await;
    let caller = mesh_node("a", &store, None).await;
    wait_until(WAIT, "a sees the match server", || async {
        caller.spots().ready_nodes("match").unwrap_or_default() == ["b"]
    })
    .await;
    let live = MatchClient::instance(&caller, "m");
    assert_eq!(
        live.score(&Score { by: "1".into() }).await.unwrap().0,
        ["1"]
    );
    // A second call caches the route on a.
    assert_eq!(
        live.score(&Score { by: "2".into() }).await.unwrap().0,
        ["1", "2"]
    );
    wait_until(WAIT, "the idle match was evicted", || async {
        server.spots().find("m").await.unwrap().is_none()
    })
    .await;
    // a's cached route leads to a node that no longer owns m: the request activates anew.
    assert_eq!(
        live.score(&Score { by: "3".into() }).await.unwrap().0,
        ["3"]
    );
    wait_until(WAIT, "evicted again", || async {
        server.spots().find("m").await.unwrap().is_none()
    })
    .await;
    // So does a one-way: it is not lost on the stale route.
    live.mark(&Mark { by: "4".into() }).await.unwrap();
    wait_until(WAIT, "the one-way activated m", || async {
        server.spots().find("m").await.unwrap().is_some()
    })
    .await;
    assert_eq!(
        live.score(&Score { by: "5".into() }).await.unwrap().0,
        ["4", "5"]
    );
    assert_eq!(built.load(Ordering::SeqCst), 3, "three incarnations");
    stop([caller, server]).await;
}

#[tokio::test]
async fn intent_without_a_type_selects_the_one_instance_type_of_the_mesh_and_fails_with_two_or_none(
) {
    let node = match_node().await;
    // One Instance Spot type in the mesh (the lounge is a User Spot type): it is chosen.
    let log = node
        .rt
        .spots()
        .request("m6", &Score { by: "sole".into() })
        .instance_any()
        .await
        .unwrap();
    assert_eq!(log.0, ["sole"]);
    assert_eq!(node.built.load(Ordering::SeqCst), 1);
    // A second Instance Spot type appears on a member: the choice is ambiguous.
    let closings = Arc::default();
    let b = start(
        discovered_node("b", &node.store, quick_lease()).spot_type(
            Round::spot_type(move |_| Round {
                closings: Arc::clone(&closings),
            })
            .unwrap(),
        ),
    )
    .await;
    wait_until(WAIT, "a sees b serving rounds", || async {
        node.rt.spots().ready_nodes("round").unwrap_or_default() == ["b"]
    })
    .await;
    let two = node
        .rt
        .spots()
        .request("m7", &Score { by: "two".into() })
        .instance_any()
        .await
        .unwrap_err();
    assert!(two.is(ErrorKind::InvalidOperation), "{two}");
    assert!(two.to_string().contains("match, round"), "{two}");
    assert_eq!(node.rt.spots().find("m7").await.unwrap(), None);
    // A node in a mesh that serves no Instance Spot type: NotFound, nothing written.
    let redis = RedisServer::start().expect("redis-server");
    let alone = mesh_node("c", &redis_store(&redis), None).await;
    let none = alone
        .spots()
        .request("m8", &Score { by: "none".into() })
        .instance_any()
        .await
        .unwrap_err();
    assert!(none.is(ErrorKind::NotFound), "{none}");
    assert_eq!(alone.spots().find("m8").await.unwrap(), None);
    stop([alone, b]).await;
    node.rt.shutdown().await;
}

/// Reference §2.7, first crash point.
#[tokio::test]
async fn a_crash_after_the_root_and_before_the_reservation_leaves_an_orphan_root_that_blocks_nothing(
) {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let roots = Arc::new(MemoryRelocationStore::new());
    let built = Arc::new(AtomicUsize::new(0));
    let serving = |rid: &'static str, fault: fn(zlink::RuntimeBuilder) -> zlink::RuntimeBuilder| {
        let (store, roots, built) = (store.clone(), roots.clone(), built.clone());
        async move {
            let relocation: Arc<dyn RelocationStore> = roots;
            let matches = Match::spot_type(move |_| {
                built.fetch_add(1, Ordering::SeqCst);
                Match {
                    log: Vec::new(),
                    gate: Arc::new(Semaphore::new(PERMITS as usize)),
                }
            })
            .unwrap();
            start(fault(
                discovered_node(rid, &store, quick_lease())
                    .relocation_store(relocation)
                    .spot_type(matches),
            ))
            .await
        }
    };
    let a = serving("a", |b| b.test_hold_activation_after_root()).await;
    let held = tokio::spawn({
        let a = a.clone();
        async move { intent_score(&a, "m", "lost").await }
    });
    wait_until(WAIT, "a wrote its root", || async { roots.len() == 1 }).await;
    a.crash().await;
    held.abort();
    assert!(
        matches!(
            store
                .read(&RecordKey::new("zla1:s:1:m", "authority"))
                .await
                .unwrap(),
            ReadOutcome::Missing
        ),
        "nothing was reserved"
    );
    // The ID is Missing: the next intent call activates it at once, and the orphan's
    // message never runs (its retention removes it).
    let b = serving("b", |b| b).await;
    let log = intent_score(&b, "m", "b").await.unwrap();
    assert_eq!(log.0, ["b"]);
    assert_eq!(built.load(Ordering::SeqCst), 1);
    wait_until(WAIT, "b's own root is gone, the orphan stays", || async {
        roots.len() == 1 && recovery_pointer(&store, "m").await.is_none()
    })
    .await;
    b.shutdown().await;
}

/// Spots, "Completion": a one-way completes once its activation is under way, so an
/// activation that then fails (here: every node serving the type is at its limit) loses
/// it, and the calling node logs and counts it (`lost_one_ways.activation_failed`). A
/// request in the same place hears the failure. Either way the ID is left Missing, never
/// stranded.
#[tokio::test]
async fn a_one_way_whose_activation_fails_is_counted_as_lost_and_leaves_the_id_missing() {
    let redis = RedisServer::start().expect("redis-server");
    let (server, caller) = full_after_one_match(&redis_store(&redis), "a", "c").await;
    // a is full from here on.
    intent_score(&caller, "m0", "c").await.unwrap();
    MatchClient::instance(&caller, "m1")
        .mark(&Mark { by: "c".into() })
        .await
        .expect("the one-way completes once its activation is under way");
    wait_until(WAIT, "the lost one-way is counted", || async {
        caller.status().lost_one_ways.activation_failed == 1
    })
    .await;
    assert_eq!(caller.status().lost_one_ways.total(), 1);
    let refused = intent_score(&caller, "m2", "c").await.unwrap_err();
    assert!(refused.is(ErrorKind::CapacityExceeded), "{refused}");
    for id in ["m1", "m2"] {
        assert_eq!(
            caller.spots().find(id).await.unwrap(),
            None,
            "{id} is Missing"
        );
    }
    assert_eq!(caller.status().lost_one_ways.activation_failed, 1);
    stop([caller, server]).await;
}

/// Record reads and batch writes `rt` made on the Location Store so far.
fn reads_and_batches(rt: &Runtime) -> (u64, u64) {
    let ops = rt.status().store_operations.expect("store metrics");
    (ops.reads.record.calls, ops.writes.batch.calls)
}

#[tokio::test]
async fn a_cold_activation_reads_its_id_once_and_writes_three_times() {
    let node = match_node().await;
    let before = reads_and_batches(&node.rt);
    intent_score(&node.rt, "rt1", "first").await.unwrap();
    wait_until(WAIT, "the recovery pointer went", || async {
        recovery_pointer(&node.store, "rt1").await.is_none() && node.roots.is_empty()
    })
    .await;
    let after = reads_and_batches(&node.rt);
    assert_eq!(
        (after.0 - before.0, after.1 - before.1),
        (1, 3),
        "one read (Missing), then the reservation, the Ready commit and the pointer's clear"
    );
    // An ID used before is reserved past its old generation all the same.
    let first = node.rt.spots().find("rt1").await.unwrap().unwrap();
    assert!(node.rt.spots().close(&first).await.unwrap());
    intent_score(&node.rt, "rt1", "again").await.unwrap();
    let second = node.rt.spots().find("rt1").await.unwrap().unwrap();
    assert!(
        second.generation > first.generation,
        "{first:?} then {second:?}"
    );
    node.rt.shutdown().await;
}

#[tokio::test]
async fn concurrent_first_calls_on_one_node_wait_for_its_one_activation_instead_of_racing_it() {
    let node = match_node().await;
    let before = reads_and_batches(&node.rt);
    let callers: Vec<String> = (0..20).map(|i| format!("c{i}")).collect();
    let calls = callers.iter().map(|by| intent_score(&node.rt, "hot1", by));
    let logs = futures::future::join_all(calls).await;
    let longest = logs
        .into_iter()
        .map(|log| log.unwrap().0.len())
        .max()
        .unwrap();
    assert_eq!(longest, 20, "every call ran once, on one Spot");
    assert_eq!(node.built.load(Ordering::SeqCst), 1, "one factory run");
    wait_until(WAIT, "the recovery pointer went", || async {
        recovery_pointer(&node.store, "hot1").await.is_none() && node.roots.is_empty()
    })
    .await;
    let after = reads_and_batches(&node.rt);
    assert_eq!(
        after.1 - before.1,
        3,
        "one reservation, its commit and its pointer's clear: the callers behind the first \
         were woken when it ended, and none raced it through the store"
    );
    node.rt.shutdown().await;
}

/// An Instance Spot whose `on_initialize` waits for a permit: its activation stays
/// Creating until the test gives one.
pub struct SlowStart {
    gate: Arc<Semaphore>,
}

#[zlink::spot(type = "slow-start", relocation = disable, instance)]
impl SlowStart {
    #[handler]
    async fn score(&mut self, score: Score, _ctx: &SpotContext) -> zlink::Result<Log> {
        Ok(Log(vec![score.by]))
    }
}

#[zlink::async_trait]
impl Spot for SlowStart {
    async fn on_initialize(&mut self, _ctx: &SpotContext) -> zlink::Result<()> {
        let _started = self.gate.acquire().await;
        Ok(())
    }
}

#[tokio::test]
async fn a_caller_that_lost_the_activation_to_another_node_is_woken_when_it_ends_not_polling() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let gate = Arc::new(Semaphore::new(0));
    let node = |rid: &str| {
        let gate = gate.clone();
        let slow = SlowStart::spot_type(move |_| SlowStart { gate: gate.clone() }).unwrap();
        start(discovered_node(rid, &store, quick_lease()).spot_type(slow))
    };
    let (a, b) = (node("a").await, node("b").await);
    for rt in [&a, &b] {
        rt.spots().ready(SlowStart::STABLE_TYPE, 2).await.unwrap();
    }
    // a activates the Spot and holds in its on_initialize: the record stays Creating.
    // A first call with Instance intent, from `rt`, on a task of its own.
    let call_from = |rt: &Runtime, by: &'static str| {
        let rt = rt.handle().clone();
        tokio::spawn(async move {
            rt.spots()
                .request("slow1", &Score { by: by.into() })
                .instance(SlowStart::STABLE_TYPE)
                .await
        })
    };
    let first = call_from(&a, "a");
    let record = RecordKey::new("zla1:s:5:slow1", "authority");
    wait_until(WAIT, "a's activation is under way", || async {
        matches!(store.read(&record).await, Ok(ReadOutcome::Found { .. }))
    })
    .await;
    let before = reads_and_batches(&b);
    let second = call_from(&b, "b");
    // Long enough for a poll (10 ms, doubling) to read the store five times over.
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let waiting = reads_and_batches(&b);
    assert!(
        waiting.0 - before.0 <= 2,
        "b read the Missing-or-Creating ID, then waited on a's answer, not the store: {} reads",
        waiting.0 - before.0
    );
    assert!(!second.is_finished(), "b waits for the Spot a makes");
    gate.add_permits(PERMITS as usize);
    assert_eq!(first.await.unwrap().unwrap().0, ["a"]);
    assert_eq!(
        tokio::time::timeout(WAIT, second)
            .await
            .unwrap()
            .unwrap()
            .unwrap()
            .0,
        ["b"],
        "b's message ran on a's Spot, once"
    );
    assert_eq!(b.spots().find("slow1").await.unwrap().unwrap().rid, "a");
    stop([b, a]).await;
}
