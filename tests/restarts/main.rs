//! A restart never locks users out (reference §7.5, rule 80; seed 002 §4.2–4.4), over real
//! TCP on 127.0.0.1 and a real `redis-server`, with player nodes in child processes
//! stopped by SIGINT (Ctrl-C) or SIGTERM and started again under the same RID:
//! - a clean shutdown releases every authority it holds, so the same IDs are created anew;
//! - shutting down with `relocate_first` moves the objects, live, instead, and releases
//!   only what may not move;
//! - a drained node serves again after `undrain`;
//! - what a shutdown of 1,000 owned objects costs.
//!
//! A binary of its own: it runs child processes and waits on owner leases.

use std::sync::Arc;
use std::time::{Duration, Instant};

use zlink::object::ActorCreation;
use zlink::{Runtime, ShutdownOptions, ShutdownOutcome};
use zlink_testkit::{wait_until, RedisServer};
use zlink_tests::instance_races::{DuelClient, Probe, Score};
use zlink_tests::restarts::*;
use zlink_tests::{actor_created_on, discovered_node, quick_lease, start, WAIT};

const CHILD: &str = "child_player_node";

/// The child process of these tests: a player node until SIGINT.
#[tokio::test]
#[ignore = "run as a child process by the restart tests"]
async fn child_player_node() {
    run_child_player().await;
}

async fn gateway(redis: &RedisServer) -> Runtime {
    let (store, roots) = redis_stores(&redis.url());
    start(discovered_node("gateway", &store, quick_lease()).relocation_store(roots)).await
}

/// Player nodes `a` then `b` on a fresh redis-server (returned, held for the test) and its stores.
async fn players_a_and_b() -> (RedisServer, Runtime, Runtime) {
    let redis = RedisServer::start().expect("redis-server");
    let (store, roots) = redis_stores(&redis.url());
    let probe = Probe::new(Duration::ZERO, false);
    let counts = Counts::default();
    let a = player_node("a", &store, &roots, &probe, &counts).await;
    let b = player_node("b", &store, &roots, &probe, &counts).await;
    (redis, a, b)
}

async fn tally(rt: &zlink::Handle, id: &str, n: u64) -> zlink::Result<Tallied> {
    TallierClient::new(rt, id).tally(Tally(n)).await
}

fn created(outcome: ActorCreation) -> (bool, u64, String) {
    match outcome {
        ActorCreation::Created(actor) => (true, actor.generation, actor.rid),
        ActorCreation::Existing(actor) => (false, actor.generation, actor.rid),
    }
}

/// Ctrl-C on a player node, then a start under the same RID on the same Redis: every
/// Actor it owned is created anew by `get_or_create` (a new ObjectGeneration, state from
/// its factory), every Instance Spot activates anew on its next intent call, and nothing
/// reads `Unavailable` in between. SIGTERM stops the second start as cleanly.
#[tokio::test]
async fn a_node_stopped_with_ctrl_c_and_started_under_its_rid_again_leaves_every_id_usable() {
    let redis = RedisServer::start().expect("redis-server");
    let gateway = gateway(&redis).await;
    let players = ChildNode::spawn(CHILD, &redis.url(), "players").await;
    gateway
        .actors()
        .ready("tally", 1)
        .await
        .expect("players ready");
    let ids: Vec<String> = (0..10).map(|i| format!("p{i}")).collect();
    let mut before = Vec::new();
    for id in &ids {
        let (new, generation, rid) =
            created(gateway.actors().get_or_create(id, "tally").await.unwrap());
        assert!(new && rid == "players", "{id} created on the players node");
        assert_eq!(tally(&gateway, id, 5).await.unwrap().total, 5);
        before.push(generation);
    }
    for d in 0..5 {
        let log = DuelClient::instance(&gateway, format!("d{d}"))
            .score(&Score { by: "first".into() })
            .await
            .unwrap();
        assert_eq!(log.0, ["first"]);
    }
    let (said, status) = players.interrupt().await;
    assert_eq!(said, format!("{:?}", ShutdownOutcome::Stopped));
    assert!(status.success(), "the child exits cleanly: {status}");
    for id in &ids {
        assert!(
            gateway.actors().find(id).await.unwrap().is_none(),
            "{id} reads Missing after a clean shutdown"
        );
    }
    assert!(gateway.spots().find("d0").await.unwrap().is_none());
    let again = ChildNode::spawn(CHILD, &redis.url(), "players").await;
    wait_until(WAIT, "the restarted node takes tallies", || async {
        gateway
            .actors()
            .ready_nodes("tally")
            .is_ok_and(|nodes| nodes.iter().any(|n| n == "players"))
    })
    .await;
    for (id, old) in ids.iter().zip(before) {
        let (new, generation, rid) =
            created(gateway.actors().get_or_create(id, "tally").await.unwrap());
        assert!(new, "{id}: created anew, not Existing");
        assert!(generation > old, "{id}: a new ObjectGeneration");
        assert_eq!(rid, "players");
        let answer = tally(&gateway, id, 1).await.unwrap();
        assert_eq!(
            (answer.total, answer.generation),
            (1, generation),
            "{id}: a fresh incarnation"
        );
    }
    for d in 0..5 {
        let log = DuelClient::instance(&gateway, format!("d{d}"))
            .score(&Score { by: "again".into() })
            .await
            .unwrap();
        assert_eq!(log.0, ["again"], "d{d} activated anew");
    }
    // The second incarnation is stopped as a service manager stops it: SIGTERM.
    let (said, status) = again.terminate().await;
    assert_eq!(said, format!("{:?}", ShutdownOutcome::Stopped));
    assert!(
        status.success(),
        "the child exits cleanly on SIGTERM: {status}"
    );
    for id in &ids {
        assert!(
            gateway.actors().find(id).await.unwrap().is_none(),
            "{id} reads Missing after SIGTERM too"
        );
    }
    gateway.shutdown().await;
}

/// `relocate_first`: the rolling-restart shutdown moves each Actor, with its state, to
/// the other serving node, and releases nothing that moved. What may not move
/// (`relocation = disable`) is released, so its ID reads Missing and is created anew
/// elsewhere.
#[tokio::test]
async fn a_shutdown_with_relocate_first_moves_the_objects_live_instead_of_releasing_them() {
    let (_redis, a, b) = players_a_and_b().await;
    a.actors().ready("tally", 2).await.unwrap();
    for i in 0..8 {
        let id = format!("r{i}");
        a.actors().create(&id, "tally").await.unwrap();
        // Placement may have put it on b: its owner moves it to a.
        if a.actors().find(&id).await.unwrap().unwrap().rid != "a" {
            b.actors().relocate(&id, Some("a")).await.unwrap();
        }
        tally(&b, &id, 7).await.unwrap();
    }
    // Two that may not move, on a.
    for i in 0..2 {
        actor_created_on(&a, &format!("fixed{i}"), "phoenix", "a", || {}).await;
    }
    let outcome = a
        .shutdown_with(ShutdownOptions::new().relocate_first())
        .await;
    assert_eq!(outcome, ShutdownOutcome::Stopped);
    for i in 0..2 {
        let id = format!("fixed{i}");
        assert_eq!(
            b.actors().find(&id).await.unwrap(),
            None,
            "{id} could not move: it was released"
        );
        let again = b.actors().get_or_create(&id, "phoenix").await.unwrap();
        assert!(
            matches!(&again, ActorCreation::Created(actor) if actor.rid == "b"),
            "{id} created anew on b: {again:?}"
        );
    }
    for i in 0..8 {
        let id = format!("r{i}");
        let answer = tally(&b, &id, 1).await.unwrap();
        assert_eq!(
            (answer.total, answer.by.as_str()),
            (8, "b"),
            "{id} moved with its state"
        );
    }
    b.shutdown().await;
}

/// A drained node takes no new objects (its peers' placement reads that it is draining)
/// until `undrain` returns it to service.
#[tokio::test]
async fn a_drained_node_takes_new_objects_again_after_undrain() {
    let (redis, a, b) = players_a_and_b().await;
    let c = gateway(&redis).await;
    c.actors().ready("tally", 2).await.unwrap();
    let report = a.relocate_all().await.unwrap();
    assert!(report.is_complete());
    wait_until(WAIT, "the gateway sees a draining", || async {
        c.discovery()
            .status()
            .is_some_and(|s| s.members.iter().any(|m| m.rid == "a" && m.draining))
    })
    .await;
    for i in 0..20 {
        let actor = c.actors().create(&format!("n{i}"), "tally").await.unwrap();
        assert_eq!(actor.rid, "b", "a draining node takes no new Actor");
    }
    assert!(a.status().draining, "a says it is draining");
    a.undrain().await.unwrap();
    assert!(!a.status().draining);
    wait_until(WAIT, "the gateway sees a serving again", || async {
        c.discovery()
            .status()
            .is_some_and(|s| s.members.iter().any(|m| m.rid == "a" && !m.draining))
    })
    .await;
    let mut on_a = 0;
    for i in 0..20 {
        let actor = c.actors().create(&format!("u{i}"), "tally").await.unwrap();
        on_a += usize::from(actor.rid == "a");
    }
    assert!(on_a > 0, "placement puts new Actors on the undrained node");
    for rt in [c, b, a] {
        rt.shutdown().await;
    }
}

/// The figure: how long a clean shutdown of a node owning 1,000 Actors takes, every one
/// of them released (each ID reads Missing from another node afterwards).
#[tokio::test]
async fn a_clean_shutdown_releases_a_thousand_owned_objects() {
    let redis = RedisServer::start().expect("redis-server");
    let (_store, holder, ids) = holder_of_a_thousand(&redis).await;
    let reader = gateway(&redis).await;
    assert_eq!(holder.status().actors_owned, 1000);
    let started = Instant::now();
    let outcome = holder.shutdown().await;
    let took = started.elapsed();
    assert_eq!(outcome, ShutdownOutcome::Stopped);
    let found = futures::future::join_all(ids.iter().map(|id| reader.actors().find(id))).await;
    assert!(
        found.iter().all(|f| matches!(f, Ok(None))),
        "every ID reads Missing"
    );
    println!("shutdown of a node owning 1000 Actors: {took:?}, every authority released");
    reader.shutdown().await;
}

mod recovery;

/// A node on `redis` that owns 1,000 tallies (`t0`..`t999`): the store, the node and
/// the IDs.
async fn holder_of_a_thousand(
    redis: &RedisServer,
) -> (Arc<dyn zlink::store::LocationStore>, Runtime, Vec<String>) {
    let (store, roots) = redis_stores(&redis.url());
    let probe = Probe::new(Duration::ZERO, false);
    let holder = player_node("holder", &store, &roots, &probe, &Counts::default()).await;
    let ids: Vec<String> = (0..1000).map(|i| format!("t{i}")).collect();
    futures::future::join_all(ids.chunks(100).map(|chunk| {
        let holder = holder.clone();
        async move {
            for id in chunk {
                holder.actors().create(id, "tally").await.unwrap();
            }
        }
    }))
    .await;
    (store, holder, ids)
}

/// The figure: how long `reclaim_node` takes for a crashed node that owned 1,000 Actors,
/// once its lease expired; every ID reads Missing after it.
#[tokio::test]
async fn reclaiming_a_crashed_nodes_thousand_objects() {
    let redis = RedisServer::start().expect("redis-server");
    let (store, holder, ids) = holder_of_a_thousand(&redis).await;
    let operator = gateway(&redis).await;
    let lease = lease_of(&holder);
    holder.crash().await;
    lease_expired(&store, &lease).await;
    let started = Instant::now();
    let report = operator
        .objects()
        .unwrap()
        .reclaim_node("holder")
        .await
        .unwrap();
    let took = started.elapsed();
    assert_eq!(
        report.released.len(),
        1001,
        "1000 Actors and the Entry Spot"
    );
    assert!(report.refused.is_empty());
    let found = futures::future::join_all(ids.iter().map(|id| operator.actors().find(id))).await;
    assert!(found.iter().all(|f| matches!(f, Ok(None))));
    println!("reclaim_node of a crashed node owning 1000 Actors: {took:?}");
    operator.shutdown().await;
}

/// An ID created again on the node its older incarnation moved away from answers there
/// at once: the older incarnation's Message Follow route (kept for
/// MessageFollowDuration, 30 s) is for messages to that incarnation only. (The new one
/// starts its owner changes at 1 again, so the two routes look alike but for the
/// generation.) Callers on the node itself and elsewhere.
#[tokio::test]
async fn an_id_created_again_where_its_older_incarnation_moved_away_from_answers_at_once() {
    let redis = RedisServer::start().expect("redis-server");
    let (store, roots) = redis_stores(&redis.url());
    let probe = Probe::new(Duration::ZERO, false);
    let counts = Counts::default();
    let b = player_node("b", &store, &roots, &probe, &counts).await;
    let caller = gateway(&redis).await;
    caller.actors().ready("tally", 1).await.unwrap();
    let first = b.actors().create("again", "tally").await.unwrap();
    assert_eq!(first.rid, "b");
    let a = player_node("a", &store, &roots, &probe, &counts).await;
    b.actors().ready("tally", 2).await.unwrap();
    b.actors().relocate("again", Some("a")).await.unwrap();
    let moved = b.actors().find("again").await.unwrap().unwrap();
    assert!(a.actors().destroy(&moved).await.unwrap());
    assert_eq!(a.shutdown().await, ShutdownOutcome::Stopped);
    let second = b.actors().create("again", "tally").await.unwrap();
    assert_eq!(second.rid, "b");
    assert!(second.generation > first.generation);
    for rt in [&b, &caller] {
        let answer = tally(rt, "again", 1).await.unwrap();
        assert_eq!(
            (answer.by.as_str(), answer.generation),
            ("b", second.generation),
            "from {}",
            rt.rid()
        );
    }
    caller.shutdown().await;
    b.shutdown().await;
}

/// A clean shutdown stops keeping its owner lease before it releases it: no renewal or
/// claim under way lands after the release, so the RID is free at once and the same RID
/// starts again right away. Each round stops at another point of the 200 ms renew cycle.
#[tokio::test]
async fn a_clean_shutdown_leaves_no_owner_lease_behind_and_its_rid_free_at_once() {
    let redis = RedisServer::start().expect("redis-server");
    let (store, _) = redis_stores(&redis.url());
    for round in 0..12u64 {
        // Started under the RID the previous round released: refused if it were taken.
        let rt = start(discovered_node("lone", &store, quick_lease())).await;
        let lease = lease_of(&rt);
        tokio::time::sleep(Duration::from_millis(17 * round)).await;
        assert_eq!(rt.shutdown().await, ShutdownOutcome::Stopped);
        // Longer than one renew interval: a keep loop left running would have claimed a
        // lease again by now (absence over a window has no condition to wait for).
        tokio::time::sleep(Duration::from_millis(300)).await;
        let left = store
            .read_lease(&lease.owner)
            .await
            .expect("the lease read");
        assert!(
            left.is_none(),
            "round {round}: a lease of the stopped node is live: {left:?}"
        );
    }
}
