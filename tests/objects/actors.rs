//! Actors addressed by global ID, over real TCP on 127.0.0.1 and a real `redis-server`:
//! creation in the node's Entry Spot, creation races, serial turns and FIFO order, direct
//! requests by ID from another node, destroy and its generation check, a dead owner.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use zlink::object::{is_entry_spot_id, Actor, ActorContext, ActorCreation, ClosingReason};
use zlink::{ErrorKind, Runtime};
use zlink_testkit::{wait_until, RedisServer};
use zlink_tests::*;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Scored)]
pub struct Score(pub u32);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Scored {
    pub total: u32,
    pub by: String,
    pub spot: Option<String>,
    pub generation: u64,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Note(pub u32);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Tick(pub u64);

/// Holds the Actor's turn for this many milliseconds, then answers.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Scored)]
pub struct Stall(pub u64);

/// A request with a field its encoding leaves out: what the handler sees of `kept`
/// tells whether the value was handed over or went through its encoding.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Carried)]
pub struct Carry {
    pub shown: u32,
    #[serde(skip)]
    pub kept: u32,
}

/// What the handler saw of a [`Carry`], in a reply that leaves `kept_back` out of its
/// encoding as well.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Carried {
    pub shown: u32,
    pub kept: u32,
    #[serde(skip)]
    pub kept_back: u32,
}

use zlink_tests::contract::{ById, Inspect, Inspected};

#[derive(Clone, Default)]
struct Counters {
    factories: Arc<AtomicUsize>,
    busy: Arc<AtomicUsize>,
    overlaps: Arc<AtomicUsize>,
    notes: Arc<Mutex<Vec<u32>>>,
    closings: Arc<Mutex<Vec<ClosingReason>>>,
    ticks: Arc<AtomicUsize>,
}

pub struct Player {
    node: String,
    total: u32,
    counters: Counters,
}

#[zlink::actor(type = "player", relocation = recreate)]
impl Player {
    /// Adds to the player's score.
    #[handler]
    async fn score(&mut self, score: Score, ctx: &ActorContext) -> zlink::Result<Scored> {
        if self.counters.busy.fetch_add(1, Ordering::SeqCst) > 0 {
            self.counters.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        tokio::task::yield_now().await;
        self.total += score.0;
        self.counters.busy.fetch_sub(1, Ordering::SeqCst);
        Ok(Scored {
            total: self.total,
            by: self.node.clone(),
            spot: ctx.spot().map(|s| s.to_string()),
            generation: ctx.generation(),
        })
    }

    /// Notes a number, in arrival order.
    #[handler]
    async fn note(&mut self, note: Note, _ctx: &ActorContext) -> zlink::Result<()> {
        if self.counters.busy.fetch_add(1, Ordering::SeqCst) > 0 {
            self.counters.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        tokio::task::yield_now().await;
        self.counters.notes.lock().unwrap().push(note.0);
        self.counters.busy.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }

    #[handler]
    async fn stall(&mut self, stall: Stall, ctx: &ActorContext) -> zlink::Result<Scored> {
        tokio::time::sleep(std::time::Duration::from_millis(stall.0)).await;
        Ok(Scored {
            total: self.total,
            by: self.node.clone(),
            spot: None,
            generation: ctx.generation(),
        })
    }

    #[handler]
    async fn carry(&mut self, carry: Carry, _ctx: &ActorContext) -> zlink::Result<Carried> {
        Ok(Carried {
            shown: carry.shown,
            kept: carry.kept,
            kept_back: carry.kept,
        })
    }

    #[handler]
    async fn inspect(&mut self, inspect: Inspect, ctx: &ActorContext) -> zlink::Result<Inspected> {
        zlink_tests::contract::inspected(inspect, ctx).await
    }

    /// Starts ticking every `n` milliseconds.
    #[handler]
    async fn tick(&mut self, tick: Tick, ctx: &ActorContext) -> zlink::Result<()> {
        ctx.start_timer(
            "beat",
            std::time::Duration::from_millis(tick.0),
            zlink::object::TimerPolicy::SkipLateTicks,
        )
    }
}

#[zlink::async_trait]
impl Actor for Player {
    async fn on_timer(
        &mut self,
        _ctx: &ActorContext,
        _tick: zlink::object::TimerTick,
    ) -> zlink::Result<()> {
        self.counters.ticks.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    async fn on_closing(&mut self, _ctx: &ActorContext, reason: ClosingReason) {
        self.counters.closings.lock().unwrap().push(reason);
    }
}

fn player_type(node: &str, counters: &Counters) -> zlink::object::ActorType {
    let (node, counters) = (node.to_string(), counters.clone());
    Player::actor_type(move |_ctx| {
        counters.factories.fetch_add(1, Ordering::SeqCst);
        Player {
            node: node.clone(),
            total: 0,
            counters: counters.clone(),
        }
    })
    .expect("a valid Actor type")
}

async fn actor_server(
    rid: &str,
    store: &Arc<dyn zlink::store::LocationStore>,
    counters: &Counters,
    weight: u32,
) -> Runtime {
    start(
        discovered_node(rid, store, quick_lease())
            .placement_weight(weight)
            .actor_type(player_type(rid, counters)),
    )
    .await
}

/// Player owner "a" (placement weight 100) on `redis`'s store, and the counters its
/// Players write.
async fn owner(redis: &RedisServer) -> (Arc<dyn zlink::store::LocationStore>, Counters, Runtime) {
    let store = redis_store(redis);
    let counters = Counters::default();
    let a = actor_server("a", &store, &counters, 100).await;
    (store, counters, a)
}

/// What the second node of a test is.
enum Second {
    /// A node that serves no Actor type: placement never picks it.
    Caller,
    /// A node that serves Players at placement weight 0: it takes no new ones.
    Drained,
}

/// Owner "a" as [`owner`] makes it, and node "b" once it sees a's Entry Spot.
async fn owner_and(redis: &RedisServer, second: Second) -> (Counters, Runtime, Runtime) {
    let (store, counters, a) = owner(redis).await;
    let b = match second {
        Second::Caller => start(discovered_node("b", &store, quick_lease())).await,
        Second::Drained => actor_server("b", &store, &counters, 0).await,
    };
    wait_until(WAIT, "b sees a and its Entry Spot", || async {
        entry_spot_of(&b, "a").is_some() && peer_rids(&b) == ["a"]
    })
    .await;
    (counters, a, b)
}

/// The Entry Spot `rt` published in its descriptor, as `other` sees it.
fn entry_spot_of(other: &zlink::Handle, rid: &str) -> Option<String> {
    other
        .discovery()
        .status()
        .map(|status| status.members)
        .unwrap_or_default()
        .into_iter()
        .find(|m| m.rid == rid)
        .and_then(|m| m.entry_spot)
}

#[tokio::test]
async fn a_new_actor_starts_in_its_nodes_entry_spot_and_takes_requests_by_id_from_any_node() {
    let redis = RedisServer::start().expect("redis-server");
    let (_, a, b) = owner_and(&redis, Second::Caller).await;
    // b serves no Actor type: placement puts the Actor on a.
    let created = b.actors().get_or_create("p1", "player").await.unwrap();
    let ActorCreation::Created(actor) = created else {
        panic!("created: {created:?}")
    };
    assert_eq!(actor.rid, "a");
    let client = PlayerClient::new(&b, "p1");
    let first = client.score(Score(5)).await.unwrap();
    let second = client.score(Score(2)).await.unwrap();
    assert_eq!((first.total, second.total, second.by.as_str()), (5, 7, "a"));
    let entry = entry_spot_of(&b, "a").unwrap();
    assert_eq!(second.spot.as_deref(), Some(entry.as_str()));
    assert!(is_entry_spot_id(&entry), "{entry}");
    assert_eq!(second.generation, actor.generation);
    // The Entry Spot is a Ready Spot of the store, and the Actor is found by ID.
    assert!(b.spots().find(&entry).await.unwrap().is_some());
    assert_eq!(b.actors().find("p1").await.unwrap(), Some(actor));
    assert_eq!(a.status().actors_owned, 1);
    stop([a, b]).await;
}

#[tokio::test]
async fn only_one_actor_factory_runs_under_a_creation_race_across_3_nodes() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let nodes = [
        actor_server("a", &store, &counters, 100).await,
        actor_server("b", &store, &counters, 100).await,
        actor_server("c", &store, &counters, 100).await,
    ];
    let calls = nodes.iter().flat_map(|rt| {
        (0..4).map(move |_| {
            let rt = rt.handle().clone();
            async move { rt.actors().get_or_create("racer", "player").await }
        })
    });
    let results = futures::future::join_all(calls).await;
    let created = results
        .iter()
        .filter(|r| matches!(r, Ok(ActorCreation::Created(_))))
        .count();
    let existing = results
        .iter()
        .filter(|r| matches!(r, Ok(ActorCreation::Existing(_))))
        .count();
    assert_eq!((created, existing), (1, 11), "{results:?}");
    assert_eq!(counters.factories.load(Ordering::SeqCst), 1);
    // create on an existing ID is AlreadyExists; another type under it, TypeMismatch.
    let again = nodes[1]
        .actors()
        .create("racer", "player")
        .await
        .unwrap_err();
    assert!(again.is(ErrorKind::AlreadyExists), "{again}");
    let other = nodes[2].actors().get_or_create("racer", "monster").await;
    assert!(other.unwrap_err().is(ErrorKind::TypeMismatch));
    let [a, b, c] = nodes;
    stop([a, b, c]).await;
}

#[tokio::test]
async fn two_messages_for_one_actor_never_run_at_the_same_time_and_one_origin_is_fifo() {
    let redis = RedisServer::start().expect("redis-server");
    let (counters, a, b) = owner_and(&redis, Second::Caller).await;
    b.actors().create("fifo", "player").await.unwrap();
    let client = PlayerClient::new(&b, "fifo");
    for i in 0..100 {
        client.note(Note(i)).await.unwrap();
    }
    // Concurrent requests from both nodes besides.
    let requests = (0..20).map(|i| {
        let rt = if i % 2 == 0 { a.clone() } else { b.clone() };
        async move { PlayerClient::new(&rt, "fifo").score(Score(1)).await }
    });
    for result in futures::future::join_all(requests).await {
        result.unwrap();
    }
    wait_until(WAIT, "every note ran", || async {
        counters.notes.lock().unwrap().len() == 100
    })
    .await;
    assert_eq!(
        *counters.notes.lock().unwrap(),
        (0..100).collect::<Vec<_>>()
    );
    assert_eq!(counters.overlaps.load(Ordering::SeqCst), 0);
    stop([a, b]).await;
}

#[tokio::test]
async fn destroy_checks_the_generation_and_a_destroyed_actor_is_gone() {
    let redis = RedisServer::start().expect("redis-server");
    let (counters, a, b) = owner_and(&redis, Second::Drained).await;
    let first = b.actors().create("p", "player").await.unwrap();
    assert_eq!(first.rid, "a", "b takes no new Actors (weight 0)");
    let mut stale = first.clone();
    stale.generation += 1;
    let wrong = b.actors().destroy(&stale).await.unwrap_err();
    assert!(wrong.is(ErrorKind::InvalidOperation), "{wrong}");
    // Destroyed from the other node, through the owner.
    assert!(b.actors().destroy(&first).await.unwrap());
    assert_eq!(
        *counters.closings.lock().unwrap(),
        [ClosingReason::Destroyed]
    );
    assert!(!b.actors().destroy(&first).await.unwrap(), "gone already");
    let gone = b.actors().request("p", &Score(1)).await.unwrap_err();
    assert!(gone.is(ErrorKind::NotFound), "{gone}");
    assert_eq!(b.actors().find("p").await.unwrap(), None);
    // A new incarnation has a higher generation; the old reference names nothing.
    let second = b.actors().create("p", "player").await.unwrap();
    assert!(second.generation > first.generation);
    let old = b.actors().destroy(&first).await.unwrap_err();
    assert!(old.is(ErrorKind::InvalidOperation), "{old}");
    assert_eq!(
        PlayerClient::new(&b, "p")
            .score(Score(3))
            .await
            .unwrap()
            .total,
        3,
        "the new incarnation starts fresh"
    );
    stop([a, b]).await;
}

#[tokio::test]
async fn a_dead_actor_owner_gives_unavailable_and_nothing_is_activated_elsewhere() {
    let redis = RedisServer::start().expect("redis-server");
    let (counters, a, b) = owner_and(&redis, Second::Drained).await;
    b.actors().create("p", "player").await.unwrap();
    PlayerClient::new(&b, "p").score(Score(1)).await.unwrap();
    a.crash().await;
    wait_until(WAIT, "b lost a", || async { peer_rids(&b).is_empty() }).await;
    let dead = PlayerClient::new(&b, "p")
        .score(Score(1))
        .await
        .unwrap_err();
    assert!(dead.is(ErrorKind::Unavailable), "{dead}");
    let found = b.actors().get_or_create("p", "player").await.unwrap();
    assert!(
        matches!(found, ActorCreation::Existing(ref r) if r.rid == "a"),
        "{found:?}"
    );
    assert_eq!(counters.factories.load(Ordering::SeqCst), 1);
    stop([b]).await;
}

#[tokio::test]
async fn spots_and_actors_are_separate_id_namespaces() {
    let redis = RedisServer::start().expect("redis-server");
    let (_, _, a) = owner(&redis).await;
    a.actors().create("same", "player").await.unwrap();
    // No Spot named "same" exists, though an Actor does.
    assert_eq!(a.spots().find("same").await.unwrap(), None);
    let missing = a
        .spots()
        .get_or_create("same", "room", "")
        .await
        .unwrap_err();
    assert!(
        missing.is(ErrorKind::NotFound),
        "no node serves rooms: {missing}"
    );
    assert!(!matches!(
        a.actors().get_or_create("same", "player").await.unwrap(),
        ActorCreation::Created(_)
    ));
    stop([a]).await;
}

#[tokio::test]
async fn an_actors_timer_ticks_as_its_turns_and_stops_when_it_is_destroyed() {
    let redis = RedisServer::start().expect("redis-server");
    let (_, counters, a) = owner(&redis).await;
    let actor = a.actors().create("t", "player").await.unwrap();
    PlayerClient::new(&a, "t").tick(Tick(10)).await.unwrap();
    wait_until(WAIT, "ticks run", || async {
        counters.ticks.load(Ordering::SeqCst) >= 3
    })
    .await;
    assert!(a.actors().destroy(&actor).await.unwrap());
    let after = counters.ticks.load(Ordering::SeqCst);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(
        counters.ticks.load(Ordering::SeqCst),
        after,
        "no tick of a destroyed Actor"
    );
    // The Entry Spot closes with its node only.
    let entry = a.status().entry_spot.expect("an Entry Spot");
    let entry_ref = a.spots().find(&entry).await.unwrap().unwrap();
    let refused = a.spots().close(&entry_ref).await.unwrap_err();
    assert!(refused.is(ErrorKind::InvalidOperation), "{refused}");
    stop([a]).await;
}

#[tokio::test]
async fn a_local_request_ends_at_its_deadline_and_its_late_reply_is_discarded() {
    let redis = RedisServer::start().expect("redis-server");
    let (_, _, a) = owner(&redis).await;
    a.actors().create("slow", "player").await.unwrap();
    let client = PlayerClient::new(&a, "slow");
    let started = tokio::time::Instant::now();
    let short = zlink::CallOptions::new().timeout(std::time::Duration::from_millis(150));
    let late = client.stall(Stall(600)).options(short).await.unwrap_err();
    assert!(late.is(ErrorKind::DeadlineExceeded), "{late}");
    let waited = started.elapsed();
    assert!(
        waited < std::time::Duration::from_millis(550),
        "ended at its deadline, not at the handler's end: {waited:?}"
    );
    // The stalled turn's reply finds no caller; the next request gets its own answer.
    let next = client.score(Score(4)).await.unwrap();
    assert_eq!(next.total, 4);
    stop([a]).await;
}

#[tokio::test]
async fn a_local_owner_keeps_the_metadata_and_completion_contract_of_a_remote_one() {
    let redis = RedisServer::start().expect("redis-server");
    let (a, b) = player_owner_and_caller(&redis).await;
    zlink_tests::contract::a_local_owner_answers_like_a_remote_one(ById::Actor("m"), &a, &b).await;
    stop([b, a]).await;
}

#[tokio::test]
async fn a_handler_argument_error_reaches_a_local_caller_of_an_actor_as_it_reaches_a_remote_one() {
    let redis = RedisServer::start().expect("redis-server");
    let (a, b) = player_owner_and_caller(&redis).await;
    zlink_tests::contract::an_argument_error_reaches_a_local_caller_as_a_remote_one(
        ById::Actor("m"),
        &a,
        &b,
    )
    .await;
    stop([b, a]).await;
}

#[tokio::test]
async fn a_refusal_an_actor_handler_returns_is_not_its_callers_and_the_handler_runs_once() {
    let redis = RedisServer::start().expect("redis-server");
    let (a, b) = player_owner_and_caller(&redis).await;
    zlink_tests::contract::a_refusal_a_handler_returns_is_not_its_callers(ById::Actor("m"), &a, &b)
        .await;
    stop([b, a]).await;
}

#[tokio::test]
async fn a_value_reaches_a_local_handler_as_it_is_and_leaves_the_node_encoded() {
    let redis = RedisServer::start().expect("redis-server");
    let (a, b) = player_owner_and_caller(&redis).await;
    let carry = || Carry { shown: 1, kept: 7 };
    // On the owner's node a value goes to the handler, and its reply back, as they are.
    let local = PlayerClient::new(&a, "m").carry(carry()).await.unwrap();
    assert_eq!((local.shown, local.kept, local.kept_back), (1, 7, 7));
    // A reference is encoded at once: the handler reads what the encoding carries.
    #[allow(clippy::needless_borrows_for_generic_args)]
    let by_reference = PlayerClient::new(&a, "m").carry(&carry()).await.unwrap();
    assert_eq!((by_reference.shown, by_reference.kept), (1, 0));
    // From another node the value is encoded both ways.
    let remote = PlayerClient::new(&b, "m").carry(carry()).await.unwrap();
    assert_eq!((remote.shown, remote.kept, remote.kept_back), (1, 0, 0));
    stop([b, a]).await;
}

/// An owner `a` of the Player "m" and a caller `b` on another node.
async fn player_owner_and_caller(redis: &RedisServer) -> (Runtime, Runtime) {
    let (_, a, b) = owner_and(redis, Second::Caller).await;
    a.actors().create("m", "player").await.unwrap();
    (a, b)
}

/// One-ways still queued when their Actor is destroyed never run, and no one can be told:
/// the owner counts each one lost (reason: stopped) in `status()`.
#[tokio::test]
async fn queued_one_ways_of_a_destroyed_actor_are_counted_lost() {
    use zlink_tests::relocating::{mesh, CounterClient, Hold, Log};
    let m = mesh(&["a"], None).await;
    let (a, client) = (&m.nodes[0], &m.nodes[1]);
    let created = client.actors().create("doomed", "counter").await.unwrap();
    let counter = CounterClient::new(client, "doomed");
    let holding = tokio::spawn({
        let counter = CounterClient::new(client, "doomed");
        async move { counter.hold(Hold(300)).await }
    });
    wait_until(WAIT, "the long turn runs", || async {
        m.seen.holding.load(Ordering::SeqCst) == 1
    })
    .await;
    for n in 0..5 {
        counter.log(Log(n)).await.unwrap();
    }
    assert!(client.actors().destroy(&created).await.unwrap());
    let _ = holding.await.unwrap();
    wait_until(WAIT, "the five queued one-ways are counted", || async {
        a.status().lost_one_ways.stopped == 5
    })
    .await;
    assert_eq!(a.status().lost_one_ways.total(), 5);
    stop(m.nodes).await;
}

/// A node that placement calls ready may still be claiming its Entry Spot (its store
/// writes fail for a moment here): a creation placed on it from another node waits for
/// the claim, instead of failing `NotFound` because the only node serving the type
/// refused it for now.
#[tokio::test]
async fn a_creation_placed_on_a_node_still_claiming_its_entry_spot_waits_for_the_claim() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let slow = Arc::new(zlink_testkit::FaultyLocationStore::new(store.clone()));
    slow.set_applies_down(true);
    let slow_store: Arc<dyn zlink::store::LocationStore> = slow.clone();
    let counters = Counters::default();
    let a = actor_server("a", &slow_store, &counters, 100).await;
    let b = start(discovered_node("b", &store, quick_lease())).await;
    wait_until(WAIT, "b sees a ready for Players", || async {
        b.actors().ready_nodes("player").unwrap_or_default() == ["a"]
    })
    .await;
    let claimed_later = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        slow.set_applies_down(false);
    });
    let created = b.actors().get_or_create("early", "player").await;
    claimed_later.await.unwrap();
    let created = created.expect("the creation waited for a's Entry Spot");
    assert!(
        matches!(created, ActorCreation::Created(ref actor) if actor.rid == "a"),
        "{created:?}"
    );
    stop([a, b]).await;
}
