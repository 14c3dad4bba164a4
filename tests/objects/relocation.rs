//! Live relocation of Actors over real TCP on 127.0.0.1 and a real `redis-server`: the
//! move itself (state, queue, timers, generation), Message Follow on the old route, the
//! follow notice, chains of moves, and the failures that keep the source (seed 000 §2.5,
//! §5 "Movement and Message Follow"; seed 002 §5).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use zlink::TestFaults;

use serde::{Deserialize, Serialize};
use zlink::object::{Actor, ActorContext, RelocationState, MAX_CAPTURED_STATE_BYTES};
use zlink::store::{ReadOutcome, RecordKey};
use zlink::ErrorKind;
use zlink_testkit::{wait_until, RedisServer};
use zlink_tests::relocating::*;
use zlink_tests::*;

#[tokio::test]
async fn a_moved_actor_keeps_its_state_generation_queue_and_timers() {
    let m = mesh(&["a", "b"], None).await;
    let (a, b, client) = (&m.nodes[0], &m.nodes[1], &m.nodes[2]);
    let created = client.actors().create("c1", "counter").await.unwrap();
    assert_eq!(created.rid, "a");
    let counter = CounterClient::new(client, "c1");
    assert_eq!(counter.add(Add(5)).await.unwrap().total, 5);
    counter.beat(&Beat).await.unwrap();
    wait_until(WAIT, "the timer ticks on a", || async {
        counter.show(&Show).await.unwrap().ticks >= 2
    })
    .await;
    // A long turn, and work queued behind it: the move waits for the turn to end, and the
    // queue moves with the Actor.
    let holding = tokio::spawn({
        let counter = CounterClient::new(client, "c1");
        async move { counter.hold(Hold(300)).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    for n in 0..20 {
        counter.log(Log(n)).await.unwrap();
    }
    let queued = tokio::spawn({
        let counter = CounterClient::new(client, "c1");
        async move { counter.add(Add(1)).await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let moved = a.actors().relocate("c1", Some("b")).await.unwrap();
    assert_eq!(moved.rid, "b");
    assert_eq!(moved.generation, created.generation, "the same incarnation");
    assert_eq!(
        holding.await.unwrap().unwrap().by,
        "a",
        "the running turn ended on a"
    );
    let after_queue = queued.await.unwrap().unwrap();
    assert_eq!((after_queue.total, after_queue.by.as_str()), (6, "b"));
    let next = counter.add(Add(10)).await.unwrap();
    assert_eq!((next.total, next.by.as_str()), (16, "b"));
    assert_eq!(next.generation, created.generation);
    let history = counter.show(&Show).await.unwrap();
    assert_eq!(
        history.log,
        (0..20).collect::<Vec<_>>(),
        "the queue moved in order"
    );
    let ticks_at_move = history.ticks;
    wait_until(WAIT, "the timer ticks on b", || async {
        counter.show(&Show).await.unwrap().ticks >= ticks_at_move + 2
    })
    .await;
    assert_eq!(
        m.seen.initialized.load(Ordering::SeqCst),
        1,
        "on_initialize ran once, on a"
    );
    assert_eq!(client.actors().find("c1").await.unwrap(), Some(moved));
    assert_eq!((a.status().actors_owned, b.status().actors_owned), (0, 1));
    stop(m.nodes).await;
}

#[tokio::test]
async fn a_follow_route_refuses_a_message_for_an_earlier_incarnation_as_invalid_operation() {
    let m = mesh(&["a", "b"], None).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    let first = client.actors().create("c9", "counter").await.unwrap();
    let counter = CounterClient::new(client, "c9");
    assert_eq!(
        counter.add(Add(1)).await.unwrap().generation,
        first.generation
    );
    // Destroyed and created again on a: the client's cached route to a still takes its
    // calls to the new incarnation (the owner does not match the generation).
    assert!(a.actors().destroy(&first).await.unwrap());
    let second = a.actors().create("c9", "counter").await.unwrap();
    assert!(second.generation > first.generation);
    let reads = record_reads(client);
    let again = counter.add(Add(1)).await.unwrap();
    assert_eq!(
        (again.total, again.by.as_str(), again.generation),
        (1, "a", second.generation)
    );
    assert_eq!(record_reads(client), reads, "the cached route was used");
    // The new incarnation moves: a's follow route carries only it, and the client's
    // route names the first one.
    a.actors().relocate("c9", Some("b")).await.unwrap();
    let err = counter.add(Add(1)).await.unwrap_err();
    assert!(err.is(ErrorKind::InvalidOperation), "{err}");
    // It ran nowhere and was not resubmitted; the refusal dropped the cached route, so
    // the next call reads the owner and goes to b.
    let next = counter.add(Add(1)).await.unwrap();
    assert_eq!(
        (next.total, next.by.as_str(), next.generation),
        (2, "b", second.generation)
    );
    assert_eq!(record_reads(client), reads + 1);
    stop(m.nodes).await;
}

#[tokio::test]
async fn a_relay_keeps_sends_and_requests_of_one_sender_in_order() {
    let m = mesh(&["a", "b"], None).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    client.actors().create("c3", "counter").await.unwrap();
    let counter = CounterClient::new(client, "c3");
    counter.log(Log(0)).await.unwrap();
    let sender = tokio::spawn({
        let counter = CounterClient::new(client, "c3");
        async move {
            for n in 1..400u64 {
                if n % 10 == 0 {
                    counter.add(Add(1)).await.unwrap();
                } else {
                    counter.log(Log(n)).await.unwrap();
                }
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(30)).await;
    a.actors().relocate("c3", Some("b")).await.unwrap();
    sender.await.unwrap();
    let history = counter.show(&Show).await.unwrap();
    let expected: Vec<u64> = (0..400).filter(|n| n % 10 != 0 || *n == 0).collect();
    assert_eq!(
        history.log, expected,
        "nothing lost, duplicated or reordered"
    );
    assert_eq!(history.by, "b");
    stop(m.nodes).await;
}

#[tokio::test]
async fn a_disabled_type_is_refused_before_anything_stops() {
    let m = mesh(&["a", "b"], None).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    client.actors().create("fixed", "anchor").await.unwrap();
    let err = a.actors().relocate("fixed", Some("b")).await.unwrap_err();
    assert!(err.is(ErrorKind::Rejected), "{err}");
    assert_eq!(
        client.actors().find("fixed").await.unwrap().unwrap().rid,
        "a"
    );
    let err = client.actors().relocate("fixed", None).await.unwrap_err();
    assert!(err.is(ErrorKind::NotFound), "{err}");
    stop(m.nodes).await;
}

#[tokio::test]
async fn a_chain_of_three_moves_within_the_follow_window_still_delivers() {
    let m = mesh(&["a", "b", "c", "d"], None).await;
    let client = &m.nodes[4];
    client.actors().create("c5", "counter").await.unwrap();
    let counter = CounterClient::new(client, "c5");
    assert_eq!(counter.add(Add(1)).await.unwrap().by, "a");
    m.nodes[0].actors().relocate("c5", Some("b")).await.unwrap();
    m.nodes[1].actors().relocate("c5", Some("c")).await.unwrap();
    m.nodes[2].actors().relocate("c5", Some("d")).await.unwrap();
    // The client's route still names a: a → b → c → d, three hops.
    let reads = record_reads(client);
    let reached = counter.add(Add(1)).await.unwrap();
    assert_eq!((reached.total, reached.by.as_str()), (2, "d"));
    assert_eq!(record_reads(client), reads);
    stop(m.nodes).await;
}

#[tokio::test]
async fn follow_hops_beyond_eight_are_unavailable() {
    let m = mesh(&["a", "b"], None).await;
    let client = &m.nodes[2];
    let ping_pong = |id: &'static str, moves: usize| {
        let nodes: Vec<_> = m.nodes.iter().map(|n| n.handle().clone()).collect();
        async move {
            for n in 0..moves {
                let (from, to) = if n % 2 == 0 { (0, "b") } else { (1, "a") };
                nodes[from].actors().relocate(id, Some(to)).await.unwrap();
            }
        }
    };
    // Eight moves between a and b: the client's route to a is eight relays behind.
    client.actors().create("eight", "counter").await.unwrap();
    let eight = CounterClient::new(client, "eight");
    assert_eq!(eight.add(Add(1)).await.unwrap().by, "a");
    ping_pong("eight", 8).await;
    assert_eq!(
        eight.add(Add(1)).await.unwrap().by,
        "a",
        "eight hops deliver"
    );
    // Nine are one too many.
    client.actors().create("c6", "counter").await.unwrap();
    let counter = CounterClient::new(client, "c6");
    assert_eq!(counter.add(Add(1)).await.unwrap().by, "a");
    ping_pong("c6", 9).await;
    let err = counter.add(Add(1)).await.unwrap_err();
    assert!(err.is(ErrorKind::Unavailable), "{err}");
    assert!(err.to_string().contains("more than 8"), "{err}");
    // Not resubmitted: the next call looks the owner up and reaches it.
    let next = counter.add(Add(1)).await.unwrap();
    assert_eq!((next.total, next.by.as_str()), (2, "b"));
    stop(m.nodes).await;
}

/// One-ways the nodes dropped past the 8-hop limit, and in all.
fn lost_one_ways(nodes: &[zlink::Runtime]) -> (u64, u64) {
    let (mut past_eight_hops, mut in_all) = (0, 0);
    for rt in nodes {
        let lost = rt.status().lost_one_ways;
        past_eight_hops += lost.follow_hops;
        in_all += lost.total();
    }
    (past_eight_hops, in_all)
}

/// A one-way has no reply, so its sender cannot hear that it was lost: the node that
/// refuses it counts it under its reason in `status()` (and logs it).
#[tokio::test]
async fn a_one_way_past_eight_hops_is_lost_and_counted_where_it_was_refused() {
    // The caller `c` holds the default owner lease, so its cached route outlives the nine
    // moves however slow the machine (a route is cached up to the caller's own lease
    // deadline, about 1 s with the tests' short lease).
    let m = mesh_custom(&["a", "b", "c"], 0, |rid, _, builder| {
        if rid == "c" {
            builder.owner_lease(zlink::store::OwnerLeaseSettings::default())
        } else {
            builder
        }
    })
    .await;
    let client = &m.nodes[2];
    client.actors().create("lost-9", "counter").await.unwrap();
    let counter = CounterClient::new(client, "lost-9");
    assert_eq!(counter.add(Add(1)).await.unwrap().by, "a");
    for n in 0..9 {
        let (from, to) = if n % 2 == 0 { (0, "b") } else { (1, "a") };
        m.nodes[from]
            .actors()
            .relocate("lost-9", Some(to))
            .await
            .unwrap();
    }
    assert_eq!(lost_one_ways(&m.nodes), (0, 0));
    // Accepted on the client's link: its send is Ok.
    counter.log(Log(9)).await.unwrap();
    wait_until(WAIT, "the ninth hop refuses it and counts it", || async {
        lost_one_ways(&m.nodes) == (1, 1)
    })
    .await;
    let history = counter.show(&Show).await.unwrap();
    assert!(history.log.is_empty(), "it ran nowhere");
    stop(m.nodes).await;
}

/// Creates Actor `id` of `stable_type` through `client` until placement puts it on node
/// `rid` (a miss is destroyed and tried again).
async fn create_on(client: &zlink::Handle, id: &str, stable_type: &str, rid: &str) {
    actor_created_on(client, id, stable_type, rid, || {}).await;
}

#[tokio::test]
async fn relocate_all_moves_every_movable_actor_while_callers_keep_calling() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let seen = Seen::default();
    let mut nodes = Vec::new();
    for rid in ["a", "b"] {
        let builder = discovered_node(rid, &store, quick_lease())
            .actor_type(counter_type(rid, &seen))
            .actor_type(Anchor::actor_type(|_| Anchor).expect("anchor type"));
        nodes.push(start(builder).await);
    }
    nodes.push(start(discovered_node("client", &store, quick_lease())).await);
    let (a, client) = (&nodes[0], &nodes[2]);
    for rt in &nodes {
        let servers_seen = if rt.rid() == "client" { 2 } else { 1 };
        wait_until(WAIT, "every node sees the other servers", || async {
            rt.discovery().status().is_some_and(|s| {
                s.members.iter().filter(|m| m.entry_spot.is_some()).count() == servers_seen
            }) && peer_rids(rt).len() >= servers_seen
        })
        .await;
    }
    // At least one counter on a; the others wherever placement puts them. One Actor that
    // may not move on each node: a's blocks a's drain, b's is not a's business.
    create_on(client, "d0", "counter", "a").await;
    for n in 1..20 {
        client
            .actors()
            .create(&format!("d{n}"), "counter")
            .await
            .unwrap();
    }
    create_on(client, "fixed-a", "anchor", "a").await;
    create_on(client, "fixed-b", "anchor", "b").await;
    let mut on_a = Vec::new();
    for n in 0..20 {
        let id = format!("d{n}");
        if client.actors().find(&id).await.unwrap().unwrap().rid == "a" {
            on_a.push(id);
        }
    }
    // A caller keeps calling every counter while a relocates them all.
    let stop_calls = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let caller = tokio::spawn({
        let client = client.handle().clone();
        let stop_calls = stop_calls.clone();
        async move {
            let mut calls = 0u64;
            while !stop_calls.load(Ordering::Relaxed) {
                let id = format!("d{}", calls % 20);
                CounterClient::new(&client, &id).add(Add(1)).await?;
                calls += 1;
            }
            Ok::<u64, zlink::Error>(calls)
        }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let report = a.relocate_all().await.unwrap();
    stop_calls.store(true, Ordering::Relaxed);
    let calls = caller
        .await
        .unwrap()
        .expect("no call failed during the drain");
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let mut moved: Vec<String> = report.moved.iter().map(|r| r.id.to_string()).collect();
    moved.sort();
    on_a.sort();
    assert_eq!(moved, on_a, "every counter a owned moved");
    assert!(report.moved.iter().all(|r| r.rid == "b"));
    let blocked: Vec<&str> = report.blocked.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(
        blocked,
        ["fixed-a"],
        "the Actor that may not move is reported"
    );
    assert!(report
        .blocked
        .iter()
        .all(|b| b.reason == zlink::object::BlockedReason::RelocationDisabled && !b.is_spot));
    assert!(!report.is_complete());
    assert_eq!(a.status().actors_owned, 1, "only the blocked Actor stayed");
    let mut total = 0;
    for n in 0..20 {
        let counted = CounterClient::new(client, format!("d{n}"))
            .add(Add(0))
            .await
            .unwrap();
        assert_eq!(counted.by, "b");
        total += counted.total;
    }
    assert_eq!(total, calls, "every call ran exactly once");
    // Not everything could leave: a serves again and takes new Actors.
    create_on(client, "back", "counter", "a").await;
    // Once nothing blocks it, the drain is complete, and a takes no new Actors.
    let fixed = client.actors().find("fixed-a").await.unwrap().unwrap();
    assert!(client.actors().destroy(&fixed).await.unwrap());
    let report = a.relocate_all().await.unwrap();
    assert!(report.is_complete(), "{report:?}");
    let moved: Vec<(&str, &str)> = report
        .moved
        .iter()
        .map(|r| (r.id.as_str(), r.rid.as_str()))
        .collect();
    assert_eq!(moved, [("back", "b")]);
    assert_eq!(a.status().actors_owned, 0);
    for n in 0..10 {
        let made = client
            .actors()
            .create(&format!("new{n}"), "counter")
            .await
            .unwrap();
        assert_eq!(
            made.rid, "b",
            "a relocated everything and takes nothing new"
        );
    }
    assert_eq!(
        client.actors().find("fixed-b").await.unwrap().unwrap().rid,
        "b"
    );
    stop(nodes).await;
}

#[tokio::test]
async fn recreate_builds_a_fresh_instance_while_the_queue_and_timers_still_move() {
    let m = mesh(&["a", "b"], None).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    let created = client.actors().create("r1", "fresh").await.unwrap();
    let fresh = FreshClient::new(client, "r1");
    assert_eq!(fresh.add(Add(7)).await.unwrap().total, 7);
    fresh.beat(&Beat).await.unwrap();
    let holding = tokio::spawn({
        let fresh = FreshClient::new(client, "r1");
        async move { fresh.hold(Hold(200)).await }
    });
    tokio::time::sleep(Duration::from_millis(30)).await;
    for n in 0..10 {
        fresh.log(Log(n)).await.unwrap();
    }
    let moved = a.actors().relocate("r1", Some("b")).await.unwrap();
    assert_eq!(moved.generation, created.generation);
    holding.await.unwrap().unwrap();
    let history = fresh.show(&Show).await.unwrap();
    assert_eq!(history.by, "b");
    assert_eq!(
        history.log,
        (0..10).collect::<Vec<_>>(),
        "the queue moved and ran on b"
    );
    assert_eq!(
        fresh.add(Add(1)).await.unwrap().total,
        1,
        "the fields started again"
    );
    wait_until(WAIT, "the timer moved and ticks on b", || async {
        fresh.show(&Show).await.unwrap().ticks >= 2
    })
    .await;
    stop(m.nodes).await;
}

#[tokio::test]
async fn a_relayed_reply_lost_with_its_connection_is_read_from_the_relocation_store() {
    // a treats every reply to what it relays as lost with the connection.
    let m = mesh_custom(&["a", "b"], 0, |rid, _, builder| {
        if rid == "a" {
            builder.test_lose_relayed_replies()
        } else {
            builder
        }
    })
    .await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    client.actors().create("t1", "counter").await.unwrap();
    let counter = CounterClient::new(client, "t1");
    counter.add(Add(1)).await.unwrap();
    a.actors().relocate("t1", Some("b")).await.unwrap();
    // Relayed by a; b recorded the result as it replied; a reads it back.
    let relayed = counter.add(Add(1)).await.unwrap();
    assert_eq!((relayed.total, relayed.by.as_str()), (2, "b"));
    // It ran exactly once.
    let next = counter.add(Add(1)).await.unwrap();
    assert_eq!(next.total, 3);
    stop(m.nodes).await;
}

#[test]
fn a_movable_type_without_a_relocation_store_is_a_startup_error() {
    let seen = Seen::default();
    let err = node("x")
        .location_store(<dyn zlink::store::LocationStore>::in_memory())
        .actor_type(counter_type("x", &seen))
        .actor_type(fresh_type("x"))
        .actor_type(Anchor::actor_type(|_| Anchor).unwrap())
        .build()
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(
        text.contains("\"counter\"")
            && text.contains("relocation = preserve: it needs a Relocation Store"),
        "{text}"
    );
    assert!(
        text.contains("\"fresh\"") && text.contains("relocation = recreate"),
        "{text}"
    );
    assert!(
        !text.contains("\"anchor\""),
        "a type that never moves needs none: {text}"
    );
    // With one, the same node builds.
    node("x")
        .location_store(<dyn zlink::store::LocationStore>::in_memory())
        .relocation_store(relocation_store())
        .actor_type(counter_type("x", &seen))
        .build()
        .expect("valid with a Relocation Store");
}

// Two workers, as a node's runtime has. The servers put the state in a Redis Relocation
// Store of their own with the default 5 s operation timeout: writing 20 MiB from a debug
// build on a loaded machine can take longer than the 500 ms the other tests allow (CI saw
// "no answer within 500ms").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_larger_than_a_message_moves_through_the_relocation_store() {
    zlink_testkit::init_tracing();
    let payloads = RedisServer::start().expect("redis-server");
    let options = zlink::store::RedisOptions::new(payloads.url(), "zlink-test");
    let store: Arc<dyn zlink::store::RelocationStore> =
        Arc::new(zlink::store::RedisRelocationStore::new(options).expect("redis options"));
    let m = mesh_custom(&["a", "b"], 0, |_, _, builder| {
        builder
            .actor_type(heavy_type())
            .relocation_store(store.clone())
    })
    .await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    client.actors().create("h1", "heavy").await.unwrap();
    let heavy = HeavyClient::new(client, "h1");
    // 20 MiB: more than the 16 MiB a connection's message may carry.
    let filled = heavy.fill(Fill(20 * 1024 * 1024)).await.unwrap();
    let moved = a.actors().relocate("h1", Some("b")).await.unwrap();
    assert_eq!(moved.rid, "b");
    let weighed = heavy.weigh(&Weigh).await.unwrap();
    assert_eq!((weighed.len, weighed.sum), (filled.len, filled.sum));
    stop(m.nodes).await;
}

#[tokio::test]
async fn a_spot_without_members_moves_with_its_state_queue_and_timers() {
    let m = mesh(&["a", "b"], None).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    client
        .spots()
        .get_or_create("l1", "ledger", "")
        .await
        .unwrap();
    let created = client.spots().find("l1").await.unwrap().unwrap();
    assert_eq!(created.rid, "a");
    let ledger = LedgerClient::new(client, "l1");
    ledger.log(Log(0)).await.unwrap();
    ledger.beat(&Beat).await.unwrap();
    let holding = tokio::spawn({
        let ledger = LedgerClient::new(client, "l1");
        async move { ledger.hold(Hold(200)).await }
    });
    tokio::time::sleep(Duration::from_millis(30)).await;
    for n in 1..10 {
        ledger.log(Log(n)).await.unwrap();
    }
    let moved = a.spots().relocate("l1", Some("b")).await.unwrap();
    assert_eq!(
        (moved.rid.as_str(), moved.generation),
        ("b", created.generation)
    );
    holding.await.unwrap().unwrap();
    let history = ledger.show(&Show).await.unwrap();
    assert_eq!(history.by, "b");
    assert_eq!(
        history.log,
        (0..10).collect::<Vec<_>>(),
        "state and queue moved in order"
    );
    let ticks = history.ticks;
    wait_until(WAIT, "the timer ticks on b", || async {
        ledger.show(&Show).await.unwrap().ticks >= ticks + 2
    })
    .await;
    // The instance left on a heard its last turn.
    assert_eq!(
        *m.seen.closings.lock().unwrap(),
        [("a".to_string(), zlink::object::ClosingReason::RelocationOut)]
    );
    // An Entry Spot stays with its node.
    let entry = a.status().entry_spot.unwrap();
    let err = a.spots().relocate(&entry, Some("b")).await.unwrap_err();
    assert!(err.is(ErrorKind::InvalidOperation), "{err}");
    stop(m.nodes).await;
}

/// Routes bound to Actors outside them (what STREAM sessions will be), recording what
/// each node tells them; the seal of `refused` fails.
#[derive(Default)]
struct BoundLog {
    node: String,
    refused: Option<String>,
    events: Arc<std::sync::Mutex<Vec<String>>>,
}

impl zlink::seams::BoundRoutes for BoundLog {
    fn seal(&self, moving: &zlink::seams::BoundMove) -> zlink::seams::BoundFuture {
        let line = format!("{} seal {} g{}", self.node, moving.actor, moving.generation);
        self.events.lock().unwrap().push(line);
        let refused = self.refused.as_deref() == Some(moving.actor.as_str());
        let carried = format!("sessions of {}", moving.actor).into_bytes();
        Box::pin(async move {
            if refused {
                return Err(zlink::Error::new(
                    ErrorKind::Unavailable,
                    "the session owner did not answer the seal",
                ));
            }
            Ok(carried)
        })
    }

    fn release(&self, moving: &zlink::seams::BoundMove) {
        let line = format!("{} release {}", self.node, moving.actor);
        self.events.lock().unwrap().push(line);
    }

    fn switch(&self, moved: &zlink::seams::BoundMove, sealed: &[u8], at: &zlink::object::ActorRef) {
        let line = format!(
            "{} switch {} to {} g{} with {:?}",
            self.node,
            moved.actor,
            at.rid,
            at.generation,
            String::from_utf8_lossy(sealed)
        );
        self.events.lock().unwrap().push(line);
    }
}

#[tokio::test]
async fn bound_routes_are_sealed_for_a_move_released_when_it_is_cancelled_and_switched_where_it_lands(
) {
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    // b runs one counter at most: a second move there is refused after the seal.
    let m = mesh_custom(&["a", "b"], 1, |rid, _, builder| {
        builder.bound_routes(Arc::new(BoundLog {
            node: rid.to_string(),
            refused: Some("refused".into()),
            events: events.clone(),
        }))
    })
    .await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    let logged = || std::mem::take(&mut *events.lock().unwrap());
    let moving = client.actors().create("moving", "counter").await.unwrap();
    a.actors().relocate("moving", Some("b")).await.unwrap();
    let g = moving.generation;
    wait_until(WAIT, "the switch on b", || async {
        events.lock().unwrap().len() == 2
    })
    .await;
    assert_eq!(
        logged(),
        [
            format!("a seal moving g{g}"),
            format!("b switch moving to b g{g} with \"sessions of moving\""),
        ],
        "sealed on the source, switched on the target with what the seal carried"
    );
    // Cancelled after the seal (b is full): released, the Actor runs on at a.
    let stays = client.actors().create("stays", "counter").await.unwrap();
    let full = a.actors().relocate("stays", Some("b")).await.unwrap_err();
    assert!(full.is(ErrorKind::CapacityExceeded), "{full}");
    assert_eq!(
        logged(),
        [
            format!("a seal stays g{}", stays.generation),
            "a release stays".to_string()
        ]
    );
    // A seal that fails cancels the move before anything is handed over.
    client.actors().destroy(&stays).await.unwrap();
    let refused = client.actors().create("refused", "counter").await.unwrap();
    let failed = a.actors().relocate("refused", Some("b")).await.unwrap_err();
    assert!(
        failed.to_string().contains("did not answer the seal"),
        "{failed}"
    );
    assert_eq!(
        logged(),
        [format!("a seal refused g{}", refused.generation)]
    );
    let counter = CounterClient::new(client, "refused");
    assert_eq!(counter.add(Add(1)).await.unwrap().by, "a");
    stop(m.nodes).await;
}

#[tokio::test]
async fn relocate_without_a_target_moves_to_a_node_picked_by_placement() {
    // a and c take placements; b serves the type with placement weight 0, so placement
    // never picks it. Whichever of a and c owns the Actor, the only node placement may
    // pick for a move without a target is the other one.
    let m = mesh_custom(&["a", "b", "c"], 0, |rid, _, builder| match rid {
        "c" => builder.placement_weight(100),
        _ => builder,
    })
    .await;
    let client = &m.nodes[3];
    let node = |rid: &str| m.nodes.iter().find(|n| n.rid() == rid).unwrap();
    let created = client.actors().create("p1", "counter").await.unwrap();
    assert_ne!(created.rid, "b", "placement skips weight 0");
    let counter = CounterClient::new(client, "p1");
    assert_eq!(counter.add(Add(5)).await.unwrap().total, 5);
    // A caller keeps calling while the Actor is moved again and again.
    let stop_calls = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let caller = tokio::spawn({
        let (client, stop_calls) = (client.handle().clone(), stop_calls.clone());
        async move {
            let counter = CounterClient::new(&client, "p1");
            let mut answers = Vec::new();
            while !stop_calls.load(Ordering::Relaxed) {
                answers.push(counter.add(Add(1)).await?);
            }
            Ok::<_, zlink::Error>(answers)
        }
    });
    wait_until(WAIT, "the caller's calls run", || async {
        m.seen.handled_by.lock().unwrap().len() >= 5
    })
    .await;
    let mut at = created.rid.clone();
    for _ in 0..6 {
        let moved = node(&at).actors().relocate("p1", None).await.unwrap();
        let other = if at == "a" { "c" } else { "a" };
        assert_eq!(
            moved.rid, other,
            "placement picks a node serving the type: not the source, not weight 0"
        );
        assert_eq!(moved.generation, created.generation, "the same incarnation");
        assert_eq!(
            client.actors().find("p1").await.unwrap(),
            Some(moved.clone())
        );
        assert_eq!(node(&at).status().actors_owned, 0, "nothing left behind");
        at = moved.rid;
    }
    stop_calls.store(true, Ordering::Relaxed);
    let answers = caller
        .await
        .unwrap()
        .expect("every call was answered during the moves");
    // State preserved across six moves: each call saw the total one higher than the last.
    let totals: Vec<u64> = answers.iter().map(|c| c.total).collect();
    let expected: Vec<u64> = (6..6 + answers.len() as u64).collect();
    assert_eq!(
        totals, expected,
        "every call ran once, in order, on the moved state"
    );
    assert!(answers.iter().all(|c| c.by != "b"), "b never ran the Actor");
    let last = counter.add(Add(0)).await.unwrap();
    assert_eq!(
        (last.total, last.by.as_str()),
        (5 + answers.len() as u64, at.as_str())
    );
    assert!(!m.seen.handled_by.lock().unwrap().iter().any(|n| n == "b"));
    assert_eq!(m.nodes[1].status().actors_owned, 0);
    stop(m.nodes).await;
}

/// One-way to a [`Brittle`]: which part of its state adapter fails from now on
/// ("capture", "restore", "oversize" for a capture over [`MAX_CAPTURED_STATE_BYTES`], or
/// anything else for none).
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Spoil(pub String);

/// What a [`Brittle`] keeps and moves.
#[derive(Default, Serialize, Deserialize)]
struct BrittleState {
    total: u64,
    log: Vec<u64>,
    /// The restore of this state fails.
    poisoned: bool,
}

/// A `preserve` Actor whose capture, or whose restore on the node it moves to, fails on
/// demand, or whose capture comes out too large to move.
pub struct Brittle {
    node: String,
    state: BrittleState,
    fail_capture: bool,
    oversize: bool,
}

impl RelocationState for Brittle {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        if self.fail_capture {
            return Err(zlink::Error::new(
                ErrorKind::InternalFailure,
                "the brittle state cannot be captured",
            ));
        }
        if self.oversize {
            // Zeroed on allocation: the pages are not touched until written.
            return Ok(vec![0; MAX_CAPTURED_STATE_BYTES + 1]);
        }
        serde_json::to_vec(&self.state).map_err(|e| zlink::Error::InvalidArgument(e.to_string()))
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        let state: BrittleState = serde_json::from_slice(state)
            .map_err(|e| zlink::Error::InvalidArgument(e.to_string()))?;
        if state.poisoned {
            return Err(zlink::Error::new(
                ErrorKind::InternalFailure,
                "the brittle state cannot be restored",
            ));
        }
        self.state = state;
        Ok(())
    }
}

impl Brittle {
    fn counted(&self, ctx: &ActorContext) -> Counted {
        Counted {
            total: self.state.total,
            by: self.node.clone(),
            generation: ctx.generation(),
            operation: None,
        }
    }
}

#[zlink::actor(type = "brittle", relocation = preserve)]
impl Brittle {
    #[handler]
    async fn add(&mut self, add: Add, ctx: &ActorContext) -> zlink::Result<Counted> {
        self.state.total += add.0;
        Ok(self.counted(ctx))
    }

    #[handler]
    async fn log(&mut self, log: Log, _ctx: &ActorContext) -> zlink::Result<()> {
        self.state.log.push(log.0);
        Ok(())
    }

    #[handler]
    async fn hold(&mut self, hold: Hold, ctx: &ActorContext) -> zlink::Result<Counted> {
        tokio::time::sleep(Duration::from_millis(hold.0)).await;
        Ok(self.counted(ctx))
    }

    #[handler]
    async fn show(&mut self, _show: Show, _ctx: &ActorContext) -> zlink::Result<History> {
        Ok(History {
            log: self.state.log.clone(),
            ticks: 0,
            by: self.node.clone(),
        })
    }

    #[handler]
    async fn spoil(&mut self, spoil: Spoil, _ctx: &ActorContext) -> zlink::Result<()> {
        self.fail_capture = spoil.0 == "capture";
        self.oversize = spoil.0 == "oversize";
        self.state.poisoned = spoil.0 == "restore";
        Ok(())
    }
}

impl Actor for Brittle {}

/// Moves a [`Brittle`] from a to b with its adapter failing at `part`, a long turn running
/// and work queued behind it: the move fails, and the Actor runs on at a with its queue
/// and state, nothing of it left on b. Returns the move's error and the nodes whose
/// factory built a Brittle.
async fn a_failing_adapter_cancels_the_move(id: &str, part: &str) -> (zlink::Error, Vec<String>) {
    let built = Arc::new(std::sync::Mutex::new(Vec::new()));
    let m = mesh_custom(&["a", "b"], 0, |rid, _, builder| {
        let (node, built) = (rid.to_string(), built.clone());
        builder.actor_type(
            Brittle::actor_type(move |_| {
                built.lock().unwrap().push(node.clone());
                Brittle {
                    node: node.clone(),
                    state: BrittleState::default(),
                    fail_capture: false,
                    oversize: false,
                }
            })
            .unwrap(),
        )
    })
    .await;
    let (a, b, client) = (&m.nodes[0], &m.nodes[1], &m.nodes[2]);
    let created = client.actors().create(id, "brittle").await.unwrap();
    assert_eq!(created.rid, "a");
    let brittle = BrittleClient::new(client, id);
    brittle.add(Add(3)).await.unwrap();
    for n in 0..5 {
        brittle.log(Log(n)).await.unwrap();
    }
    brittle.spoil(Spoil(part.to_string())).await.unwrap();
    brittle.show(&Show).await.unwrap(); // the one-way ran
    let holding = tokio::spawn({
        let brittle = BrittleClient::new(client, id);
        async move { brittle.hold(Hold(200)).await }
    });
    tokio::time::sleep(Duration::from_millis(30)).await;
    for n in 5..10 {
        brittle.log(Log(n)).await.unwrap();
    }
    let queued = tokio::spawn({
        let brittle = BrittleClient::new(client, id);
        async move { brittle.add(Add(1)).await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let err = a.actors().relocate(id, Some("b")).await.unwrap_err();
    assert_eq!(holding.await.unwrap().unwrap().by, "a");
    let after_queue = queued.await.unwrap().unwrap();
    assert_eq!(
        (after_queue.total, after_queue.by.as_str()),
        (4, "a"),
        "the queued call ran on a, on the kept state"
    );
    let history = brittle.show(&Show).await.unwrap();
    assert_eq!(
        (history.log, history.by.as_str()),
        ((0..10).collect::<Vec<_>>(), "a"),
        "the queue ran on a, in order, nothing lost"
    );
    let next = brittle.add(Add(10)).await.unwrap();
    assert_eq!((next.total, next.by.as_str()), (14, "a"));
    assert_eq!(next.generation, created.generation);
    assert_eq!(client.actors().find(id).await.unwrap(), Some(created));
    assert_eq!((a.status().actors_owned, b.status().actors_owned), (1, 0));
    let built_then = built.lock().unwrap().clone();
    // Nothing was left on b to refuse a later move: with the adapter mended, it moves
    // there with its state.
    brittle.spoil(Spoil(String::new())).await.unwrap();
    brittle.show(&Show).await.unwrap(); // the one-way ran
    let moved = a.actors().relocate(id, Some("b")).await.unwrap();
    assert_eq!(moved.rid, "b");
    let there = brittle.add(Add(0)).await.unwrap();
    assert_eq!((there.total, there.by.as_str()), (14, "b"));
    assert_eq!(
        brittle.show(&Show).await.unwrap().log,
        (0..10).collect::<Vec<_>>()
    );
    stop(m.nodes).await;
    (err, built_then)
}

#[tokio::test]
async fn a_capture_that_fails_cancels_the_move_and_the_source_keeps_serving() {
    let (err, built) = a_failing_adapter_cancels_the_move("bc1", "capture").await;
    assert!(err.is(ErrorKind::InternalFailure), "{err}");
    assert!(err.to_string().contains("cannot be captured"), "{err}");
    assert_eq!(built, ["a"], "b never built an instance");
}

#[tokio::test]
async fn a_restore_that_fails_on_the_target_cancels_the_move_and_the_source_keeps_serving() {
    let (err, built) = a_failing_adapter_cancels_the_move("br1", "restore").await;
    assert!(err.is(ErrorKind::InternalFailure), "{err}");
    assert!(err.to_string().contains("cannot be restored"), "{err}");
    assert_eq!(built, ["a", "b"], "b built one instance, and dropped it");
}

#[tokio::test]
async fn a_captured_state_over_64_mib_cancels_the_move_and_the_source_keeps_serving() {
    assert_eq!(MAX_CAPTURED_STATE_BYTES, 64 * 1024 * 1024);
    let (err, built) = a_failing_adapter_cancels_the_move("bo1", "oversize").await;
    assert!(err.is(ErrorKind::CapacityExceeded), "{err}");
    assert!(
        err.to_string()
            .contains(&format!("exceeds {MAX_CAPTURED_STATE_BYTES} bytes")),
        "{err}"
    );
    assert_eq!(built, ["a"], "b never built an instance");
}

/// The owner part of an authority record as the Location Store holds it (CBOR, the
/// fields named as zlink writes them; the others are skipped).
#[derive(Debug, Deserialize)]
struct StoredAuthority {
    fence: StoredFence,
    route: StoredRoute,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
struct StoredFence {
    /// The ObjectGeneration: the incarnation.
    object_generation: u64,
    /// The AuthorityOwnerGeneration (AOG).
    owner_generation: u64,
    owner: String,
    lease_generation: u64,
}

#[derive(Debug, Deserialize)]
struct StoredRoute {
    rid: String,
}

/// Actor `id`'s authority record, read straight from the Location Store.
async fn stored_authority(
    store: &Arc<dyn zlink::store::LocationStore>,
    id: &str,
) -> StoredAuthority {
    let key = RecordKey::new(format!("zla1:a:{}:{id}", id.len()), "authority");
    match store.read(&key).await.unwrap() {
        ReadOutcome::Found { value, .. } => {
            zlink::cbor_decode(&value).expect("an authority record")
        }
        ReadOutcome::Missing => panic!("no authority record for {id}"),
    }
}

#[tokio::test]
async fn each_move_raises_the_owner_generation_by_one_and_keeps_the_object_generation() {
    let m = mesh(&["a", "b"], None).await;
    let (a, b, client) = (&m.nodes[0], &m.nodes[1], &m.nodes[2]);
    let created = client.actors().create("g1", "counter").await.unwrap();
    assert_eq!(created.rid, "a");
    let counter = CounterClient::new(client, "g1");
    assert_eq!(counter.add(Add(1)).await.unwrap().total, 1);
    let first = stored_authority(&m.store, "g1").await;
    assert_eq!(first.route.rid, "a");
    assert_eq!(first.fence.object_generation, created.generation);
    assert_eq!(
        first.fence.owner_generation, 1,
        "a new object's first owner"
    );
    let mut before = first.fence.clone();
    let mut owners = vec![first.fence.clone()];
    for (n, (from, to)) in [(a, "b"), (b, "a"), (a, "b")].into_iter().enumerate() {
        let moved = from.actors().relocate("g1", Some(to)).await.unwrap();
        assert_eq!(moved.rid, to);
        assert_eq!(moved.generation, created.generation, "move {n}");
        let now = stored_authority(&m.store, "g1").await;
        assert_eq!(now.route.rid, to, "move {n}");
        assert_eq!(
            now.fence.owner_generation,
            before.owner_generation + 1,
            "move {n}: AOG + 1"
        );
        assert_eq!(
            now.fence.object_generation, before.object_generation,
            "move {n}: the ObjectGeneration is kept"
        );
        assert_ne!(
            (&now.fence.owner, now.fence.lease_generation),
            (&before.owner, before.lease_generation),
            "move {n}: written under the target's lease"
        );
        // The state and the incarnation went along.
        let counted = counter.add(Add(1)).await.unwrap();
        assert_eq!(
            (counted.total, counted.by.as_str(), counted.generation),
            (n as u64 + 2, to, created.generation)
        );
        assert_eq!(
            client.actors().find("g1").await.unwrap(),
            Some(moved),
            "move {n}"
        );
        owners.push(now.fence.clone());
        before = now.fence;
    }
    assert_eq!(
        owners
            .iter()
            .map(|f| f.owner_generation)
            .collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    // Back on a, the record names a's own lease again (a did not restart), and b's both
    // times it was b's.
    let fences = |f: &StoredFence| (f.owner.clone(), f.lease_generation);
    assert_eq!(fences(&owners[0]), fences(&owners[2]));
    assert_eq!(fences(&owners[1]), fences(&owners[3]));
    stop(m.nodes).await;
}
