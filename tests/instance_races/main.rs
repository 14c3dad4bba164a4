//! Instance Spots keep their promise under races, crashes and moves (seed 002 §4.3–4.4 and
//! §5, reference §2.6–2.9), over real TCP on 127.0.0.1 and a real `redis-server`, with a
//! child process killed by SIGKILL for the crashes:
//! - a move started at any point of an activation never loses the Spot;
//! - racing first calls, staggered, are all answered, and each one-way runs once;
//! - a crash before the Ready commit leaves an ID the next intent call activates anew,
//!   and only one after it leaves the ID `Unavailable`;
//! - placement prefers the calling node;
//! - after an eviction, plain calls are `NotFound` at once and intent calls activate again,
//!   from every node;
//! - a close racing a move never strands the Spot.
//!
//! A binary of its own: its races load both cores, and the other suites' timing-bound
//! tests (a 20 MiB move, liveness) should not share them.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zlink::store::{LocationStore, OwnerId, RelocationStore};
use zlink::ErrorKind;
use zlink_testkit::{wait_until, RedisServer};
use zlink_tests::instance_races::*;
use zlink_tests::*;

const WAIT: Duration = Duration::from_secs(10);

/// A mesh over one Redis: its Location Store and the shared Relocation Store.
struct Stores {
    redis: RedisServer,
    store: Arc<dyn LocationStore>,
    roots: Arc<dyn RelocationStore>,
}

fn stores() -> Stores {
    let redis = RedisServer::start().expect("redis-server");
    Stores {
        store: redis_store(&redis),
        roots: redis_relocation_store(&redis),
        redis,
    }
}

async fn sees_duel_servers(rt: &zlink::Handle, rids: &[&str]) {
    wait_until(WAIT, "the duel servers are ready", || async {
        let ready = rt.spots().ready_nodes("duel").unwrap_or_default();
        rids.iter().all(|rid| ready.iter().any(|r| r == rid))
    })
    .await;
}

fn score(
    rt: &zlink::Handle,
    id: &str,
    by: &str,
) -> impl std::future::Future<Output = zlink::Result<Log>> {
    let (rt, id, by) = (rt.clone(), id.to_string(), by.to_string());
    async move { DuelClient::instance(&rt, &id).score(&Score { by }).await }
}

fn mark(
    rt: &zlink::Handle,
    id: &str,
    by: &str,
) -> impl std::future::Future<Output = zlink::Result<()>> {
    let (rt, id, by) = (rt.clone(), id.to_string(), by.to_string());
    async move { DuelClient::instance(&rt, &id).mark(&Mark { by }).await }
}

/// Waits until duel `id`'s log (read by a plain request from `rt`) holds every one of
/// `expected`, then checks that it holds each exactly once, and nothing else.
async fn log_holds_each_once(rt: &zlink::Handle, id: &str, expected: &[String]) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + WAIT;
    let log = loop {
        // A one-way may still be activating the duel: until the deadline, a plain call
        // that does not reach it yet is asked again.
        let read = DuelClient::new(rt, id)
            .score(&Score { by: "check".into() })
            .await;
        let past = tokio::time::Instant::now() >= deadline;
        match read {
            Ok(read) if past || expected.iter().all(|m| read.0.contains(m)) => break read.0,
            Err(e) if past => panic!("{id} is reachable: {e}"),
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    let ran: Vec<&String> = log.iter().filter(|m| *m != "check").collect();
    let distinct: HashSet<&String> = ran.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        ran.len(),
        "{id}: a message ran twice: {log:?}"
    );
    let mut got: Vec<String> = ran.into_iter().cloned().collect();
    got.sort();
    let mut want = expected.to_vec();
    want.sort();
    assert_eq!(got, want, "{id}: each message once, nothing lost");
    log
}

/// Where a move begins relative to the activation it races.
#[derive(Debug, Clone, Copy)]
enum MovePoint {
    /// As soon as the owner has the Spot: before its Ready commit, so before the first
    /// handler (when the spin wins the race with the commit).
    BeforeFirstHandler,
    /// While the first handler runs (held).
    DuringFirstHandler,
    /// Right after the first call's reply.
    AfterFirstReply,
    /// While the first handler runs (held), by an operator's drain of the owner
    /// (`relocate_all`), which then returns the owner to service (`undrain`).
    DrainDuringFirstHandler,
}

/// Seed 002 §5 and the Instance table of §4.4: a planned move moves the same object and
/// generation, whenever it starts. The duel is activated on `a` (its caller's node),
/// moved to `b` at `point` (by `relocate` on its owner, or by a drain of the owner),
/// while intent calls race the move from the owner, the target and a node serving
/// nothing; every call is answered, and the duel ends Ready on `b` with every message
/// once, the activating one first.
#[tokio::test]
async fn a_move_started_at_any_point_of_an_activation_never_loses_the_spot() {
    let stores = stores();
    let (pa, pb) = (
        Probe::new(Duration::from_millis(20), false),
        Probe::new(Duration::from_millis(20), false),
    );
    let a = duel_node("a", &stores.store, &stores.roots, Some(&pa)).await;
    let b = duel_node("b", &stores.store, &stores.roots, Some(&pb)).await;
    let c = duel_node("c", &stores.store, &stores.roots, None).await;
    for rt in [&a, &b, &c] {
        sees_duel_servers(rt, &["a", "b"]).await;
    }
    let points = [
        MovePoint::BeforeFirstHandler,
        MovePoint::DuringFirstHandler,
        MovePoint::AfterFirstReply,
        MovePoint::DrainDuringFirstHandler,
    ];
    let mut moved = 0;
    // Moves sealed before the first handler: it then ran on the target.
    let mut sealed_before_first = 0;
    for round in 0..3 {
        for point in points {
            let id = format!("{point:?}-{round}");
            move_during_activation(&a, &b, &c, &pa, &id, point).await;
            let at = c.spots().find(&id).await.unwrap().expect("Ready");
            assert_eq!(at.rid, "b", "{id} ended on the move's target");
            assert_eq!(
                pa.count("init", &id) + pb.count("init", &id),
                1,
                "{id}: one activation, one on_initialize"
            );
            moved += 1;
            sealed_before_first += pb.count("first", &id);
        }
    }
    assert_eq!(moved, 12);
    assert!(
        sealed_before_first >= 1,
        "no round sealed the duel before its first handler: that point went untested"
    );
    println!(
        "moves: {moved}, of which {sealed_before_first} were sealed before the first handler (it ran on the target)"
    );
    stop([c, b, a]).await;
}

async fn move_during_activation(
    a: &zlink::Runtime,
    b: &zlink::Handle,
    c: &zlink::Handle,
    pa: &Arc<Probe>,
    id: &str,
    point: MovePoint,
) {
    let mut stages = pa.stages();
    let held = match point {
        MovePoint::DuringFirstHandler | MovePoint::DrainDuringFirstHandler => {
            Some(pa.gate.clone().acquire_many_owned(PERMITS).await.unwrap())
        }
        _ => None,
    };
    let first = tokio::spawn(score(a, id, "first"));
    let racing: Vec<_> = match point {
        MovePoint::AfterFirstReply => Vec::new(),
        _ => race_calls(a, b, c, id),
    };
    let relocated = match point {
        MovePoint::BeforeFirstHandler => {
            wait_stage(&mut stages, "initialized", id).await;
            // The owner has the Spot from its Ready commit's eve on: the first try that
            // finds it queues the move's seal ahead of the first message.
            let a = a.handle().clone();
            let id = id.to_string();
            tokio::spawn(async move {
                loop {
                    match a.spots().relocate(&id, Some("b")).await {
                        Err(e) if e.is(ErrorKind::NotFound) => tokio::task::yield_now().await,
                        other => return other,
                    }
                }
            })
        }
        MovePoint::DuringFirstHandler => {
            wait_stage(&mut stages, "first", id).await;
            let (a, id) = (a.handle().clone(), id.to_string());
            let moving = tokio::spawn(async move { a.spots().relocate(&id, Some("b")).await });
            drop(held);
            moving
        }
        MovePoint::DrainDuringFirstHandler => {
            wait_stage(&mut stages, "first", id).await;
            // The drain starts first, and seals the duel behind its held first handler;
            // the handler goes on a moment later.
            let release = async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                drop(held);
            };
            let (drained, ()) =
                tokio::join!(tokio::time::timeout(WAIT * 4, a.relocate_all()), release);
            let report = drained
                .unwrap_or_else(|_| panic!("{id}: the drain did not end"))
                .unwrap();
            assert!(report.is_complete(), "{id}: {report:?}");
            let moved: Vec<_> = report
                .moved_spots
                .iter()
                .filter(|s| s.id.as_str() == id)
                .collect();
            assert_eq!(moved.len(), 1, "{id}: the drain moved it: {report:?}");
            assert_eq!(moved[0].rid, "b");
            a.undrain().await.unwrap();
            settle_racing(racing, id).await;
            let reply = tokio::time::timeout(WAIT, first).await.unwrap().unwrap();
            assert_eq!(reply.unwrap().0[0], "first");
            let expected = ["first", "race-a", "race-b", "race-c"].map(String::from);
            let log = log_holds_each_once(c, id, &expected).await;
            assert_eq!(log[0], "first");
            return;
        }
        MovePoint::AfterFirstReply => {
            let (a, id) = (a.handle().clone(), id.to_string());
            let reply = tokio::time::timeout(WAIT, first).await.unwrap().unwrap();
            assert_eq!(reply.unwrap().0, ["first"]);
            let racing = race_calls(&a, b, c, &id);
            let moved = a.spots().relocate(&id, Some("b")).await;
            settle_racing(racing, &id).await;
            let moved = moved.unwrap_or_else(|e| panic!("{id}: the move failed: {e}"));
            assert_eq!(moved.rid, "b");
            let expected = ["first", "race-a", "race-b", "race-c"].map(String::from);
            let log = log_holds_each_once(c, &id, &expected).await;
            assert_eq!(log[0], "first");
            return;
        }
    };
    let moved = tokio::time::timeout(WAIT * 4, relocated)
        .await
        .unwrap_or_else(|_| panic!("{id}: the move did not end"))
        .unwrap();
    let moved = moved.unwrap_or_else(|e| panic!("{id}: the move at {point:?} failed: {e}"));
    assert_eq!(moved.rid, "b");
    let reply = tokio::time::timeout(WAIT, first).await.unwrap().unwrap();
    assert_eq!(
        reply.unwrap().0[0],
        "first",
        "{id}: the activating message ran first"
    );
    settle_racing(racing, id).await;
    let expected = ["first", "race-a", "race-b", "race-c"].map(String::from);
    let log = log_holds_each_once(c, id, &expected).await;
    assert_eq!(log[0], "first");
}

/// Intent requests for `id` from the owner, the target and a node serving nothing.
fn race_calls(
    a: &zlink::Handle,
    b: &zlink::Handle,
    c: &zlink::Handle,
    id: &str,
) -> Vec<tokio::task::JoinHandle<zlink::Result<Log>>> {
    [a, b, c]
        .into_iter()
        .map(|rt| tokio::spawn(score(rt, id, &format!("race-{}", rt.rid()))))
        .collect()
}

async fn settle_racing(racing: Vec<tokio::task::JoinHandle<zlink::Result<Log>>>, id: &str) {
    for call in racing {
        let reply = tokio::time::timeout(WAIT * 4, call).await.unwrap().unwrap();
        reply.unwrap_or_else(|e| panic!("{id}: a racing intent call failed: {e}"));
    }
}

async fn wait_stage(
    stages: &mut tokio::sync::broadcast::Receiver<(&'static str, String)>,
    stage: &str,
    id: &str,
) {
    tokio::time::timeout(WAIT, async {
        loop {
            let (reached, of) = stages.recv().await.expect("the probe is there");
            if reached == stage && of == id {
                return;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{id} never reached {stage}"));
}

/// Reference §2.2 and §2.6: a call that meets an activation under way joins it, and one
/// that meets the Ready Spot is delivered to it. Rounds of fresh IDs, each called by many
/// requests and one-ways at once from three serving nodes and one serving nothing, half of
/// them up to 40 ms late: every request is answered, every one-way runs once, and each ID
/// is activated once.
#[tokio::test]
async fn racing_first_calls_with_staggered_starts_are_all_answered_and_each_runs_once() {
    let stores = stores();
    let probes = [0, 1, 2].map(|_| Probe::new(Duration::from_millis(5), false));
    let mut nodes = Vec::new();
    for (rid, probe) in ["a", "b", "c"].into_iter().zip(&probes) {
        nodes.push(duel_node(rid, &stores.store, &stores.roots, Some(probe)).await);
    }
    nodes.push(duel_node("d", &stores.store, &stores.roots, None).await);
    for rt in &nodes {
        sees_duel_servers(rt, &["a", "b", "c"]).await;
    }
    let (rounds, ids, calls) = (4, 16, 24);
    let mut failed = Vec::new();
    for round in 0..rounds {
        let mut expected: HashMap<String, Vec<String>> = HashMap::new();
        let mut requests = Vec::new();
        let mut one_ways = Vec::new();
        for i in 0..ids {
            let id = format!("r{round}-{i}");
            for n in 0..calls {
                let rt = nodes[n % nodes.len()].clone();
                let by = format!("{}-{n}", rt.rid());
                expected.entry(id.clone()).or_default().push(by.clone());
                let late = (n % 2 == 1).then(|| Duration::from_millis(rand_below(40)));
                let (id, request) = (id.clone(), n % 3 != 0);
                let call = async move {
                    if let Some(late) = late {
                        tokio::time::sleep(late).await;
                    }
                    if request {
                        score(&rt, &id, &by).await.map(|_| ())
                    } else {
                        mark(&rt, &id, &by).await
                    }
                };
                if request {
                    requests.push(tokio::spawn(call));
                } else {
                    one_ways.push(tokio::spawn(call));
                }
            }
        }
        for call in requests.into_iter().chain(one_ways) {
            if let Err(e) = call.await.unwrap() {
                failed.push(e.to_string());
            }
        }
        assert!(
            failed.is_empty(),
            "round {round}: {} first calls failed: {:?}",
            failed.len(),
            &failed[..failed.len().min(5)]
        );
        let lost: u64 = nodes
            .iter()
            .map(|rt| rt.status().lost_one_ways.total())
            .sum();
        let why: Vec<_> = nodes.iter().map(|rt| rt.status().lost_one_ways).collect();
        assert_eq!(lost, 0, "round {round}: no one-way was lost: {why:?}");
        for (id, messages) in &expected {
            log_holds_each_once(&nodes[3], id, messages).await;
            let inits: usize = probes.iter().map(|p| p.count("init", id)).sum();
            assert_eq!(inits, 1, "{id}: activated once");
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} first calls failed: {:?}",
        failed.len(),
        rounds * ids * calls,
        &failed[..failed.len().min(5)]
    );
    stop(nodes.into_iter().rev()).await;
}

fn rand_below(n: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(n);
    hasher.finish() % n
}

/// The book's placement rule: an intent call activates the Spot on its own node when that
/// node serves the type and has room; from a node serving none (or one that is full),
/// placement picks among the others by weight.
#[tokio::test]
async fn an_intent_call_activates_on_its_own_node_when_that_serves_the_type_and_has_room() {
    let stores = stores();
    let (pa, pb, pf) = (
        Probe::new(Duration::ZERO, false),
        Probe::new(Duration::ZERO, false),
        Probe::new(Duration::ZERO, false),
    );
    let a = duel_node("a", &stores.store, &stores.roots, Some(&pa)).await;
    let b = duel_node("b", &stores.store, &stores.roots, Some(&pb)).await;
    let c = duel_node("c", &stores.store, &stores.roots, None).await;
    for rt in [&a, &b, &c] {
        sees_duel_servers(rt, &["a", "b"]).await;
    }
    for (rt, rid) in [(&a, "a"), (&b, "b")] {
        for i in 0..8 {
            let id = format!("{rid}-own-{i}");
            score(rt, &id, "first").await.unwrap();
            let at = c.spots().find(&id).await.unwrap().unwrap();
            assert_eq!(at.rid, rid, "{id} activated on its caller's node");
        }
    }
    // From a node serving none: placement spreads them.
    let mut landed = HashSet::new();
    for i in 0..24 {
        let id = format!("c-{i}");
        score(&c, &id, "first").await.unwrap();
        landed.insert(c.spots().find(&id).await.unwrap().unwrap().rid);
    }
    assert!(
        landed.len() >= 2,
        "placement picked among the servers: {landed:?}"
    );
    // A full caller's node: its first duel stays, the next one goes elsewhere.
    let f = start(
        discovered_node("f", &stores.store, quick_lease())
            .relocation_store(stores.roots.clone())
            .spot_type(duel_type(&pf).max_per_node(1)),
    )
    .await;
    sees_duel_servers(&f, &["a", "b", "f"]).await;
    score(&f, "f-0", "first").await.unwrap();
    assert_eq!(c.spots().find("f-0").await.unwrap().unwrap().rid, "f");
    score(&f, "f-1", "first").await.unwrap();
    let elsewhere = c.spots().find("f-1").await.unwrap().unwrap().rid;
    assert_ne!(elsewhere, "f", "f is at its limit of one duel");
    assert_eq!(pf.built_total(), 1);
    stop([f, c, b, a]).await;
}

/// Reference §2.9: after an idle eviction a plain call is `NotFound` and an intent call
/// activates anew, on the first try and from every node, even one whose cached route still
/// leads to the evicted Spot; an intent one-way on such a route is not lost.
#[tokio::test]
async fn after_an_eviction_plain_calls_are_not_found_at_once_and_intent_calls_activate_again_from_every_node(
) {
    let stores = stores();
    let idle = Duration::from_millis(300);
    let (pa, pb) = (
        Probe::new(Duration::ZERO, false),
        Probe::new(Duration::ZERO, false),
    );
    let node = |rid: &'static str, probe: Option<Arc<Probe>>| {
        let (store, roots) = (stores.store.clone(), stores.roots.clone());
        async move {
            let mut builder = discovered_node(rid, &store, quick_lease())
                .relocation_store(roots)
                .instance_spot_idle_timeout(idle);
            if let Some(probe) = &probe {
                builder = builder.spot_type(duel_type(probe));
            }
            start(builder).await
        }
    };
    let a = node("a", Some(pa.clone())).await;
    let b = node("b", Some(pb.clone())).await;
    let c = node("c", None).await;
    let nodes = [a, b, c];
    for rt in &nodes {
        sees_duel_servers(rt, &["a", "b"]).await;
    }
    let inits = || pa.count("init", "e") + pb.count("init", "e");
    let cache_then_evict = |round: usize| {
        let nodes = nodes.each_ref().map(|n| n.handle().clone());
        async move {
            // Every node caches the route to the duel, then it is evicted.
            for rt in &nodes {
                DuelClient::new(rt, "e")
                    .score(&Score {
                        by: format!("cache-{round}"),
                    })
                    .await
                    .unwrap_or_else(|e| panic!("{} reaches e: {e}", rt.rid()));
            }
            wait_until(WAIT, "e is evicted", || async {
                nodes[2].spots().find("e").await.unwrap().is_none()
            })
            .await;
        }
    };
    // Plain calls: NotFound on the first try, everywhere, and nothing is activated.
    score(&nodes[0], "e", "first").await.unwrap();
    cache_then_evict(0).await;
    for rt in &nodes {
        let plain = DuelClient::new(rt, "e")
            .score(&Score { by: "plain".into() })
            .await
            .unwrap_err();
        assert!(plain.is(ErrorKind::NotFound), "{}: {plain}", rt.rid());
    }
    assert_eq!(inits(), 1);
    // Plain one-ways: on the evicting node itself, refused at once (NotFound); from
    // another node, taken by the old owner's connection and counted lost there.
    score(&nodes[0], "e", "first").await.unwrap();
    cache_then_evict(1).await;
    let not_owner = || nodes[0].status().lost_one_ways.not_owner;
    let before = not_owner();
    let here = DuelClient::new(&nodes[0], "e")
        .mark(&Mark { by: "plain".into() })
        .await;
    assert!(here.is_err_and(|e| e.is(ErrorKind::NotFound)));
    for rt in &nodes[1..] {
        DuelClient::new(rt, "e")
            .mark(&Mark { by: "plain".into() })
            .await
            .unwrap_or_else(|e| panic!("{}: a plain one-way completes: {e}", rt.rid()));
    }
    wait_until(WAIT, "the old owner counted both", || async {
        not_owner() == before + 2
    })
    .await;
    assert_eq!(inits(), 2);
    // Intent one-ways on the stale routes: one new activation, and each one-way runs.
    score(&nodes[0], "e", "first").await.unwrap();
    cache_then_evict(2).await;
    let lost = || -> u64 {
        nodes
            .iter()
            .map(|rt| rt.status().lost_one_ways.total())
            .sum()
    };
    let lost_before = lost();
    for rt in &nodes {
        mark(rt, "e", &format!("one-way-{}", rt.rid()))
            .await
            .unwrap();
    }
    let expected = nodes.each_ref().map(|rt| format!("one-way-{}", rt.rid()));
    log_holds_each_once(&nodes[2], "e", &expected).await;
    assert_eq!(inits(), 4, "the one-ways activated e once");
    assert_eq!(lost(), lost_before, "no intent one-way was lost");
    // Intent requests on the stale routes: answered, one new activation.
    cache_then_evict(3).await;
    let replies = futures::future::join_all(
        nodes
            .iter()
            .map(|rt| score(rt, "e", &format!("request-{}", rt.rid()))),
    )
    .await;
    for reply in replies {
        reply.expect("an intent request on a stale route activates e again");
    }
    assert_eq!(inits(), 5);
    let [a, b, c] = nodes;
    stop([c, b, a]).await;
}

/// A close (or an idle eviction) and a move of one Spot take turns: whichever starts
/// first goes through and the other is refused, so the close's authority write never
/// lands in the middle of the move (whose owner change is fenced on the version it
/// sealed). The Spot ends closed, or Ready on the target: never stranded.
#[tokio::test]
async fn a_close_racing_a_move_never_strands_the_spot() {
    let stores = stores();
    let (pa, pb) = (
        Probe::new(Duration::ZERO, false),
        Probe::new(Duration::ZERO, false),
    );
    let a = duel_node("a", &stores.store, &stores.roots, Some(&pa)).await;
    let b = duel_node("b", &stores.store, &stores.roots, Some(&pb)).await;
    sees_duel_servers(&a, &["a", "b"]).await;
    let (mut closed, mut moved) = (0, 0);
    for i in 0..10u64 {
        let id = format!("cm-{i}");
        score(&a, &id, "first").await.unwrap();
        let spot = a.spots().find(&id).await.unwrap().unwrap();
        assert_eq!(spot.rid, "a");
        // A held handler keeps both waiting for the turn boundary.
        let held = pa.gate.clone().acquire_many_owned(PERMITS).await.unwrap();
        let mut stages = pa.stages();
        let busy = tokio::spawn(score(&a, &id, "busy"));
        wait_stage(&mut stages, "turn", &id).await;
        let moving = tokio::spawn({
            let (a, id) = (a.clone(), id.clone());
            async move { a.spots().relocate(&id, Some("b")).await }
        });
        tokio::time::sleep(Duration::from_micros(200 * i)).await;
        let closing = tokio::spawn({
            let a = a.clone();
            async move { a.spots().close(&spot).await }
        });
        tokio::time::sleep(Duration::from_millis(5)).await;
        drop(held);
        let _ = busy.await.unwrap();
        let (moved_to, close) = (moving.await.unwrap(), closing.await.unwrap());
        match (moved_to, close) {
            // The move went first and the close was refused meanwhile: on b, reachable.
            (Ok(at), Err(refused)) => {
                assert_eq!(at.rid, "b");
                assert!(refused.is(ErrorKind::Unavailable), "{refused}");
                let log = DuelClient::new(&a, &id)
                    .score(&Score { by: "after".into() })
                    .await
                    .unwrap_or_else(|e| panic!("{id} moved and is reachable: {e}"));
                assert!(log.0.contains(&"first".to_string()));
                moved += 1;
            }
            // The close went first (the move was refused), or after the move had ended
            // (it closed the Spot on b): closed, and an intent call activates it anew.
            (Err(_), Ok(true)) | (Ok(_), Ok(true)) => {
                assert_eq!(a.spots().find(&id).await.unwrap(), None);
                let log = score(&a, &id, "anew").await.unwrap();
                assert_eq!(log.0, ["anew"]);
                closed += 1;
            }
            (m, c) => panic!("{id}: the move and the close left the Spot stranded: {m:?}, {c:?}"),
        }
    }
    assert_eq!(closed + moved, 10, "closed {closed}, moved {moved}");
    stop([b, a]).await;
}

/// The stages a child node printed, by duel ID.
type Printed = Arc<Mutex<HashMap<String, HashSet<String>>>>;

/// Seed 002 §4.3–4.4 and reference §2.6–2.7: the factory and `on_initialize` run before the
/// Ready commit, so a node killed before it leaves a Creating record that the next intent
/// call cancels (once the dead node's lease expired) and activates anew, with a new
/// generation; a node killed after the commit leaves the ID `Unavailable`, before and
/// after its lease expired: a Ready Spot whose owner died is never activated elsewhere,
/// even when its first handler had not begun (the recovery pointer it still holds never
/// selects another node, seed 002 §10 item 11). An ID whose first handler ran is never
/// activated again.
/// A child process serving duels (`on_initialize` takes 30 ms) is killed with SIGKILL at
/// 5, 20, 40, 70 and 200 ms and at a random moment into 10 activations each, started
/// 6 ms apart.
#[tokio::test]
async fn a_crash_before_the_ready_commit_never_strands_an_id_and_one_after_it_leaves_it_unavailable(
) {
    let stores = stores();
    let caller = duel_node("caller", &stores.store, &stores.roots, None).await;
    let pb = Probe::new(Duration::ZERO, false);
    let mut reactivated = 0;
    let mut unavailable = 0;
    // Unavailable although the first handler had not begun: killed between the end of
    // on_initialize and the first handler (the Ready commit is in that gap).
    let mut between = 0;
    let kills = [5, 20, 40, 70, 200, rand_below(150)];
    for (round, kill_after) in kills.into_iter().enumerate() {
        let rid = format!("child-{round}");
        let (mut child, printed, lease) = spawn_child(&stores.redis, &rid).await;
        sees_duel_servers(&caller, &[rid.as_str()]).await;
        let ids: Vec<String> = (0..10).map(|i| format!("k{round}-{i}")).collect();
        // Staggered 6 ms apart, so one kill finds the activations at different stages.
        let firsts: Vec<_> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let call = score(&caller, id, "first");
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(6 * i as u64)).await;
                    call.await
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(kill_after)).await;
        child.start_kill().expect("SIGKILL the child");
        let _ = child.wait().await;
        for first in firsts {
            let _ = first.await.unwrap();
        }
        wait_until(WAIT, "the child's lease expired", || async {
            stores
                .store
                .read_lease(&lease.0)
                .await
                .unwrap()
                .is_none_or(|grant| grant.token.generation != lease.1)
        })
        .await;
        // A node serving duels takes over new activations.
        let b = duel_node(
            &format!("b-{round}"),
            &stores.store,
            &stores.roots,
            Some(&pb),
        )
        .await;
        sees_duel_servers(&caller, &[b.rid()]).await;
        let agains =
            futures::future::join_all(ids.iter().map(|id| score(&caller, id, "again"))).await;
        for (id, again) in ids.iter().zip(agains) {
            let stages = printed.lock().unwrap().get(id).cloned().unwrap_or_default();
            match again {
                Ok(log) => {
                    assert!(
                        !stages.contains("first"),
                        "{id}: its first handler ran on the dead node ({stages:?}), yet it was activated again"
                    );
                    assert_eq!(
                        log.0,
                        ["again"],
                        "{id}: a new incarnation, first message first"
                    );
                    assert_eq!(pb.count("init", id), 1, "{id}: activated once");
                    reactivated += 1;
                }
                Err(e) => {
                    assert!(e.is(ErrorKind::Unavailable), "{id}: {e}");
                    assert!(
                        stages.contains("initialized"),
                        "{id}: Unavailable although the dead node never finished its on_initialize ({stages:?}): the ID is stranded"
                    );
                    unavailable += 1;
                    between += usize::from(!stages.contains("first"));
                }
            }
        }
        b.shutdown().await;
    }
    assert_eq!(reactivated + unavailable, 60);
    // Killed at 5 ms, nothing is Ready yet; at 200 ms, every first handler has run.
    assert!(
        reactivated > 0 && unavailable > 0,
        "both sides of the commit were hit"
    );
    println!(
        "crashes: {reactivated} IDs activated anew, {unavailable} Unavailable after their Ready commit ({between} of them killed before the first handler began)"
    );
    caller.shutdown().await;
}

/// Starts this test binary's child duel node `rid` on `redis`; returns it, what it prints
/// (by duel ID), and its owner lease (owner, generation).
async fn spawn_child(
    redis: &RedisServer,
    rid: &str,
) -> (tokio::process::Child, Printed, (OwnerId, u64)) {
    let zlink_tests::restarts::ChildNode {
        child,
        mut lines,
        lease,
    } = zlink_tests::restarts::ChildNode::spawn("child_duel_node", &redis.url(), rid).await;
    let printed: Printed = Arc::default();
    let into = printed.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some((stage, id)) = line.split_once(' ') {
                into.lock()
                    .unwrap()
                    .entry(id.to_string())
                    .or_default()
                    .insert(stage.to_string());
            }
        }
    });
    (child, printed, lease)
}

/// The child process of the crash test: a node serving duels on the Redis the parent
/// names, printing each stage of each activation, until it is killed.
#[tokio::test]
#[ignore = "run as a child process by a_crash_before_the_ready_commit_never_strands_an_id_and_one_after_it_leaves_it_unavailable"]
async fn child_duel_node() {
    let url = std::env::var("ZLINK_CHILD_REDIS").expect("ZLINK_CHILD_REDIS");
    let rid = std::env::var("ZLINK_CHILD_RID").expect("ZLINK_CHILD_RID");
    let options = zlink::store::RedisOptions::new(url.clone(), "zlink-test")
        .operation_timeout(Duration::from_millis(500));
    let store: Arc<dyn LocationStore> =
        Arc::new(zlink::store::RedisLocationStore::new(options.clone()).expect("redis options"));
    let roots: Arc<dyn RelocationStore> =
        Arc::new(zlink::store::RedisRelocationStore::new(options).expect("redis options"));
    let probe = Probe::new(Duration::from_millis(30), true);
    let rt = duel_node(&rid, &store, &roots, Some(&probe)).await;
    let token = rt
        .discovery()
        .owner_lease()
        .and_then(|lease| lease.token)
        .expect("an owner lease");
    // On a line of its own: the harness's "test ... " has no line end yet.
    println!("\nlease {} {}", token.owner.0, token.generation);
    std::future::pending::<()>().await;
}
