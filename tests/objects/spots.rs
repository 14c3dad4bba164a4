//! Spots addressed by global ID, over real TCP on 127.0.0.1 and a real `redis-server`:
//! creation races, serial turns, direct requests by ID from another node, the route cache,
//! close and its generation check.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use zlink::object::{
    ClosingReason, CreateDecision, Relocation, Spot, SpotContext, SpotCreation, SpotHandlers,
    SpotType,
};
use zlink::{Bytes, ErrorKind, Message, PacketKind, Runtime};
use zlink_testkit::{wait_until, RedisServer};
use zlink_tests::*;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Said)]
pub struct Say(pub String);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Said {
    /// How many lines the room holds, this one included.
    pub lines: usize,
    /// Which node ran the handler.
    pub by: String,
    /// The request's `trace` metadata, as the handler saw it.
    pub trace: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Shout(pub String);

/// A chat room: lines said, in order. `busy` counts handlers running at once.
struct Room {
    node: String,
    lines: Vec<String>,
    busy: Arc<AtomicUsize>,
    overlaps: Arc<AtomicUsize>,
    /// Set by the creation request "panic-init".
    panic_on_initialize: bool,
}

#[zlink::async_trait]
impl SpotHandlers for Room {
    fn packets() -> Vec<(String, PacketKind)> {
        vec![
            ("Say".into(), PacketKind::Request),
            ("Shout".into(), PacketKind::Send),
        ]
    }

    async fn handle(
        &mut self,
        ctx: &SpotContext,
        handler: usize,
        payload: Bytes,
    ) -> zlink::Result<Bytes> {
        if self.busy.fetch_add(1, Ordering::SeqCst) > 0 {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        tokio::task::yield_now().await;
        let text = match handler {
            0 => Say::decode(&payload)?.0,
            _ => Shout::decode(&payload)?.0.to_uppercase(),
        };
        if text == "panic" {
            self.busy.fetch_sub(1, Ordering::SeqCst);
            panic!("a handler bug");
        }
        if text == "forever" {
            std::future::pending::<()>().await;
        }
        self.lines.push(text);
        self.busy.fetch_sub(1, Ordering::SeqCst);
        Said {
            lines: self.lines.len(),
            by: self.node.clone(),
            trace: ctx.metadata().get("trace").map(str::to_string),
        }
        .encode()
    }
}

#[zlink::async_trait]
impl Spot for Room {
    async fn on_initialize(&mut self, _ctx: &SpotContext) -> zlink::Result<()> {
        if self.panic_on_initialize {
            panic!("an initialisation bug");
        }
        Ok(())
    }

    async fn on_create(&mut self, _ctx: &SpotContext, request: Bytes) -> CreateDecision {
        self.panic_on_initialize = request.as_ref() == b"panic-init";
        if request.as_ref() == b"slow" {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        }
        if request.as_ref() == b"hang" {
            // A creation that never finishes: its node crashes meanwhile.
            std::future::pending::<()>().await;
        }
        if request.as_ref() == b"no" {
            CreateDecision::Reject(Bytes::from_static(b"declined"))
        } else {
            CreateDecision::Accept(Bytes::from_static(b"welcome"))
        }
    }
}

#[derive(Clone, Default)]
struct Counters {
    factories: Arc<AtomicUsize>,
    busy: Arc<AtomicUsize>,
    overlaps: Arc<AtomicUsize>,
}

fn room_type(node: &str, counters: &Counters) -> SpotType {
    let (node, counters) = (node.to_string(), counters.clone());
    SpotType::new("room", Relocation::Disable, move |_ctx| {
        counters.factories.fetch_add(1, Ordering::SeqCst);
        Room {
            node: node.clone(),
            lines: Vec::new(),
            busy: counters.busy.clone(),
            overlaps: counters.overlaps.clone(),
            panic_on_initialize: false,
        }
    })
    .expect("a valid Spot type")
}

async fn object_server(
    rid: &str,
    store: &Arc<dyn zlink::store::LocationStore>,
    counters: &Counters,
) -> Runtime {
    start(discovered_node(rid, store, quick_lease()).spot_type(room_type(rid, counters))).await
}

async fn plain_node(rid: &str, store: &Arc<dyn zlink::store::LocationStore>) -> Runtime {
    start(discovered_node(rid, store, quick_lease())).await
}

fn record_reads(rt: &Runtime) -> u64 {
    rt.status()
        .store_operations
        .expect("a store")
        .reads
        .record
        .calls
}

#[tokio::test]
async fn direct_calls_take_only_the_id_and_reach_the_owner_from_another_node() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    let b = plain_node("b", &store).await;
    wait_until(WAIT, "a and b connected", || async {
        peer_rids(&b) == ["a"]
    })
    .await;

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
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    let b = plain_node("b", &store).await;
    wait_until(WAIT, "a and b connected", || async {
        peer_rids(&b) == ["a"]
    })
    .await;
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
async fn two_messages_for_one_spot_never_run_at_the_same_time() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    let b = plain_node("b", &store).await;
    wait_until(WAIT, "a and b connected", || async {
        peer_rids(&b) == ["a"]
    })
    .await;
    a.spots()
        .get_or_create("busy", "room", Bytes::new())
        .await
        .unwrap();
    let calls = (0..50).map(|i| {
        let (a, b) = (&a, &b);
        async move {
            let from = if i % 2 == 0 { a } else { b };
            from.spots().request("busy", &Say(format!("{i}"))).await
        }
    });
    let results = futures::future::join_all(calls).await;
    let mut counts: Vec<usize> = results.into_iter().map(|r| r.unwrap().lines).collect();
    counts.sort_unstable();
    assert_eq!(
        counts,
        (1..=50).collect::<Vec<_>>(),
        "each turn saw the one before it"
    );
    assert_eq!(counters.overlaps.load(Ordering::SeqCst), 0);
    stop([b, a]).await;
}

#[tokio::test]
async fn a_declined_creation_leaves_nothing_and_close_checks_the_generation() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    let b = plain_node("b", &store).await;
    wait_until(WAIT, "a and b connected", || async {
        peer_rids(&b) == ["a"]
    })
    .await;

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
    // b's cached route is stale now: the call is refused, never sent elsewhere.
    let stale = b
        .spots()
        .request("r", &Say("late".into()))
        .await
        .unwrap_err();
    assert!(stale.is(ErrorKind::Unavailable), "{stale}");
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

/// A Spot whose handlers wait at a gate the test opens, and note what they ran.
struct Gate {
    open: Arc<tokio::sync::Semaphore>,
    entered: Arc<AtomicUsize>,
    ran: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Spot for Gate {}

#[zlink::async_trait]
impl SpotHandlers for Gate {
    fn packets() -> Vec<(String, PacketKind)> {
        vec![
            ("Say".into(), PacketKind::Request),
            ("Shout".into(), PacketKind::Send),
        ]
    }

    async fn handle(
        &mut self,
        _ctx: &SpotContext,
        handler: usize,
        payload: Bytes,
    ) -> zlink::Result<Bytes> {
        let text = match handler {
            0 => Say::decode(&payload)?.0,
            _ => Shout::decode(&payload)?.0,
        };
        self.ran.lock().unwrap().push(text);
        self.entered.fetch_add(1, Ordering::SeqCst);
        let _pass = self.open.acquire().await;
        Said {
            lines: 0,
            by: String::new(),
            trace: None,
        }
        .encode()
    }
}

#[tokio::test]
async fn queue_bounds_give_the_saturation_result_of_each_path() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let open = Arc::new(tokio::sync::Semaphore::new(0));
    let entered = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (gate_open, gate_entered, gate_ran) = (open.clone(), entered.clone(), ran.clone());
    let gate = SpotType::new("gate", Relocation::Disable, move |_ctx| Gate {
        open: gate_open.clone(),
        entered: gate_entered.clone(),
        ran: gate_ran.clone(),
    })
    .unwrap()
    .queue_limits(2, 1 << 20)
    .unwrap();
    let a = start(
        discovered_node("a", &store, quick_lease())
            .spot_type(gate)
            .send_timeout(std::time::Duration::from_millis(200)),
    )
    .await;
    let b = plain_node("b", &store).await;
    wait_until(WAIT, "a and b connected", || async {
        peer_rids(&b) == ["a"]
    })
    .await;
    a.spots().get_or_create("g", "gate", "").await.unwrap();

    // One message runs (held at the gate), one waits: the queue of 2 is full.
    let running = tokio::spawn({
        let a = a.clone();
        async move { a.spots().request("g", &Say("1".into())).await }
    });
    wait_until(WAIT, "the first message runs", || async {
        entered.load(Ordering::SeqCst) == 1
    })
    .await;
    // A local send completes once queued: now the queue of 2 is full.
    a.spots().send("g", &Shout("2".into())).await.unwrap();

    // Request to a full local queue: CapacityExceeded at once.
    let local = a.spots().request("g", &Say("3".into())).await.unwrap_err();
    assert!(local.is(ErrorKind::CapacityExceeded), "{local}");
    // Request to a full remote queue: Unavailable at once.
    let remote = b.spots().request("g", &Say("4".into())).await.unwrap_err();
    assert!(remote.is(ErrorKind::Unavailable), "{remote}");
    // A local send waits up to the send timeout, then DeadlineExceeded.
    let started = tokio::time::Instant::now();
    let send = a.spots().send("g", &Shout("5".into())).await.unwrap_err();
    assert!(send.is(ErrorKind::DeadlineExceeded), "{send}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(200));
    // A remote send completed when it left: the owner drops it, the sender hears nothing.
    b.spots().send("g", &Shout("6".into())).await.unwrap();

    open.add_permits(100);
    running.await.unwrap().unwrap();
    a.spots().request("g", &Say("after".into())).await.unwrap();
    // Nothing that was refused ran. (The remote send may have arrived before or after the
    // gate opened: the owner dropped it or ran it; either way its sender was done.)
    let ran = ran.lock().unwrap().clone();
    assert_eq!(&ran[..2], ["1", "2"], "{ran:?}");
    assert!(ran.contains(&"after".to_string()), "{ran:?}");
    for refused in ["3", "4", "5", "probe"] {
        assert!(
            !ran.contains(&refused.to_string()),
            "{refused} ran: {ran:?}"
        );
    }
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

async fn weighted_server(
    rid: &str,
    store: &Arc<dyn zlink::store::LocationStore>,
    counters: &Counters,
    weight: u32,
) -> Runtime {
    start(
        discovered_node(rid, store, quick_lease())
            .spot_type(room_type(rid, counters))
            .placement_weight(weight),
    )
    .await
}

async fn sees_servers(rt: &Runtime, rids: &[&str]) {
    let want: Vec<String> = rids.iter().map(|r| r.to_string()).collect();
    wait_until(WAIT, &format!("{} sees {want:?}", rt.rid()), || async {
        let members: Vec<String> = rt
            .discovery()
            .status()
            .unwrap()
            .members
            .into_iter()
            .filter(|m| !m.spot_types.is_empty())
            .map(|m| m.rid)
            .collect();
        want.iter()
            .all(|r| members.contains(r) && peer_rids(rt).contains(r))
    })
    .await;
}

#[tokio::test]
async fn a_node_without_the_type_places_the_spot_on_one_that_serves_it() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    let b = plain_node("b", &store).await;
    sees_servers(&b, &["a"]).await;
    let SpotCreation::Created(room, reply) =
        b.spots().get_or_create("placed", "room", "").await.unwrap()
    else {
        panic!("not created")
    };
    assert_eq!((room.rid.as_str(), &reply[..]), ("a", &b"welcome"[..]));
    assert_eq!(a.status().spots_owned, 1);
    let said = b
        .spots()
        .request("placed", &Say("hi".into()))
        .await
        .unwrap();
    assert_eq!(said.by, "a");
    let declined = b.spots().get_or_create("nope", "room", "no").await.unwrap();
    assert_eq!(
        declined,
        SpotCreation::Rejected(Bytes::from_static(b"declined"))
    );
    // Close from a node that does not own it goes to the owner.
    assert!(b.spots().close(&room).await.unwrap());
    assert_eq!(a.status().spots_owned, 0);
    assert_eq!(b.spots().find("placed").await.unwrap(), None);
    let none = b
        .spots()
        .get_or_create("x", "no-such-type", "")
        .await
        .unwrap_err();
    assert!(none.is(ErrorKind::NotFound), "{none}");
    stop([b, a]).await;
}

#[tokio::test]
async fn placement_weight_zero_takes_no_new_spots() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let drained = weighted_server("drained", &store, &counters, 0).await;
    let open = weighted_server("open", &store, &counters, 100).await;
    let caller = plain_node("caller", &store).await;
    sees_servers(&caller, &["drained", "open"]).await;
    for i in 0..20 {
        let created = caller
            .spots()
            .get_or_create(&format!("r{i}"), "room", "")
            .await
            .unwrap();
        assert!(
            matches!(created, SpotCreation::Created(ref r, _) if r.rid == "open"),
            "{created:?}"
        );
    }
    assert_eq!(drained.status().spots_owned, 0);
    assert_eq!(open.status().spots_owned, 20);
    let invalid = node("x")
        .placement_weight(10_001)
        .build()
        .err()
        .expect("refused");
    assert!(
        invalid.to_string().contains("placement_weight"),
        "{invalid}"
    );
    stop([caller, open, drained]).await;
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

    async fn handle(&mut self, _: &SpotContext, _: usize, _: Bytes) -> zlink::Result<Bytes> {
        Ok(Bytes::new())
    }
}

#[tokio::test]
async fn the_target_admission_fence_excludes_the_generation() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    let b = plain_node("b", &store).await;
    wait_until(WAIT, "a and b connected", || async {
        peer_rids(&b) == ["a"]
    })
    .await;
    let SpotCreation::Created(first, _) = a.spots().get_or_create("r", "room", "").await.unwrap()
    else {
        panic!("not created")
    };
    b.spots()
        .request("r", &Say("to the first".into()))
        .await
        .unwrap();
    // Closed and created again on the same owner: a new incarnation.
    assert!(a.spots().close(&first).await.unwrap());
    let SpotCreation::Created(second, _) = a.spots().get_or_create("r", "room", "").await.unwrap()
    else {
        panic!("not re-created")
    };
    assert!(second.generation > first.generation);
    // b's cached route still names the first incarnation; the owner admits it into the
    // current one (the generation is not part of a message's target).
    let reads = record_reads(&b);
    let said = b
        .spots()
        .request("r", &Say("to whoever is current".into()))
        .await
        .unwrap();
    assert_eq!(said.lines, 1, "the new incarnation took it");
    assert_eq!(record_reads(&b), reads, "sent on the cached route");
    stop([b, a]).await;
}

#[tokio::test]
async fn replies_use_the_reply_route_and_metadata_is_never_copied_to_them() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    let b = plain_node("b", &store).await;
    wait_until(WAIT, "a and b connected", || async {
        peer_rids(&b) == ["a"]
    })
    .await;
    a.spots().get_or_create("r", "room", "").await.unwrap();
    let owner_reads = record_reads(&a);
    let options = zlink::CallOptions::new().metadata("trace", "t-1").unwrap();
    let said = b
        .spots()
        .request_with("r", &Say("traced".into()), options)
        .await
        .unwrap();
    assert_eq!(
        said.trace.as_deref(),
        Some("t-1"),
        "the handler saw the metadata"
    );
    for i in 0..5 {
        b.spots().request("r", &Say(format!("{i}"))).await.unwrap();
    }
    assert_eq!(record_reads(&a), owner_reads, "answering looked nothing up");
    // A reply carries no metadata at all: the wire's reply head has no metadata frame,
    // and the typed reply is only the handler's value.
    let untraced = b.spots().request("r", &Say("plain".into())).await.unwrap();
    assert_eq!(untraced.trace, None);
    stop([b, a]).await;
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
async fn a_panicking_hook_or_handler_does_not_stop_the_spot() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    a.spots()
        .get_or_create("p", "room", "panic-init")
        .await
        .unwrap();
    // on_initialize panicked: the Spot still takes messages.
    assert_eq!(
        a.spots()
            .request("p", &Say("one".into()))
            .await
            .unwrap()
            .lines,
        1
    );
    let failed = a
        .spots()
        .request("p", &Say("panic".into()))
        .await
        .unwrap_err();
    assert!(failed.is(ErrorKind::InternalFailure), "{failed}");
    // ...and goes on after a handler panicked.
    assert_eq!(
        a.spots()
            .request("p", &Say("two".into()))
            .await
            .unwrap()
            .lines,
        2
    );
    stop([a]).await;
}

#[tokio::test]
async fn shutdown_does_not_wait_for_a_handler_that_never_ends() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    a.spots().get_or_create("s", "room", "").await.unwrap();
    let stuck = tokio::spawn({
        let a = a.clone();
        async move { a.spots().request("s", &Say("forever".into())).await }
    });
    wait_until(WAIT, "the handler runs", || async {
        counters.busy.load(Ordering::SeqCst) == 1
    })
    .await;
    tokio::time::timeout(std::time::Duration::from_secs(10), a.shutdown())
        .await
        .expect("shutdown finished");
    let ended = stuck.await.unwrap().unwrap_err();
    assert!(ended.is(ErrorKind::ShuttingDown), "{ended}");
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

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Echoed)]
pub struct Ask(pub String);

/// A Spot that answers by calling the echo channel: the call keeps its turn.
pub struct Relay {
    asked: usize,
}

#[zlink::spot(type = "relay", relocation = recreate)]
impl Relay {
    #[handler]
    async fn ask(&mut self, ask: Ask, ctx: &SpotContext) -> zlink::Result<Echoed> {
        self.asked += 1;
        let echo = EchoServiceClient::new(&ctx.runtime(), CHANNEL);
        let mut reply = echo.echo(&Echo { text: ask.0 }).await?;
        reply.text = format!("{} (#{})", reply.text, self.asked);
        Ok(reply)
    }
}

impl Spot for Relay {}

#[tokio::test]
async fn a_spot_handler_calls_a_channel_through_its_nodes_send_path() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let echo = start(
        discovered_node("echo-server", &store, quick_lease())
            .channel_server(CHANNEL, echo_handlers("echo-server", Default::default())),
    )
    .await;
    let a = start(
        discovered_node("a", &store, quick_lease())
            .spot_type(Relay::spot_type(|_| Relay { asked: 0 }).unwrap()),
    )
    .await;
    let b = plain_node("b", &store).await;
    wait_until(WAIT, "everyone connected", || async {
        peer_rids(&a).len() == 2 && peer_rids(&b).len() == 2
    })
    .await;
    a.spots()
        .get_or_create("relay", Relay::STABLE_TYPE, "")
        .await
        .unwrap();
    let relay = RelayClient::new(&b, "relay");
    let first = relay.ask(&Ask("hi".into())).await.unwrap();
    assert_eq!(
        (first.text.as_str(), first.by.as_str()),
        ("hi (#1)", "echo-server")
    );
    let second = relay.ask(&Ask("again".into())).await.unwrap();
    assert_eq!(
        second.text, "again (#2)",
        "the Spot's state carried over the awaited call"
    );
    stop([b, a, echo]).await;
}

#[tokio::test]
async fn per_node_limits_place_elsewhere_then_refuse_with_capacity_exceeded() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let limited = |rid: &str| {
        discovered_node(rid, &store, quick_lease())
            .spot_type(room_type(rid, &counters))
            .max_spots(2)
    };
    let a = start(limited("a")).await;
    let b = start(limited("b")).await;
    let caller = plain_node("caller", &store).await;
    sees_servers(&caller, &["a", "b"]).await;
    for i in 0..4 {
        let created = caller
            .spots()
            .get_or_create(&format!("r{i}"), "room", "")
            .await
            .unwrap();
        assert!(matches!(created, SpotCreation::Created(..)), "{created:?}");
    }
    assert_eq!((a.status().spots_owned, b.status().spots_owned), (2, 2));
    let full = caller
        .spots()
        .get_or_create("r4", "room", "")
        .await
        .unwrap_err();
    assert!(full.is(ErrorKind::CapacityExceeded), "{full}");
    assert_eq!(
        caller.spots().find("r4").await.unwrap(),
        None,
        "nothing was reserved"
    );
    // A type's own limit holds on one node too.
    let one = start(
        discovered_node("one", &store, quick_lease())
            .spot_type(room_type("one", &counters).max_spots(1)),
    )
    .await;
    stop([caller, b, a]).await;
    wait_until(WAIT, "only `one` serves rooms", || async {
        peer_rids(&one).is_empty()
    })
    .await;
    one.spots().get_or_create("x1", "room", "").await.unwrap();
    let type_full = one
        .spots()
        .get_or_create("x2", "room", "")
        .await
        .unwrap_err();
    assert!(type_full.is(ErrorKind::CapacityExceeded), "{type_full}");
    stop([one]).await;
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
async fn a_close_that_gives_up_waiting_stops_that_incarnation() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = start(
        discovered_node("a", &store, quick_lease())
            .request_timeout(std::time::Duration::from_millis(800))
            .spot_type(room_type("a", &counters)),
    )
    .await;
    let SpotCreation::Created(first, _) = a.spots().get_or_create("s", "room", "").await.unwrap()
    else {
        panic!("created")
    };
    let stuck = tokio::spawn({
        let a = a.clone();
        let patient = zlink::CallOptions::new().timeout(std::time::Duration::from_secs(10));
        async move {
            a.spots()
                .request_with("s", &Say("forever".into()), patient)
                .await
        }
    });
    wait_until(WAIT, "the handler runs", || async {
        counters.busy.load(Ordering::SeqCst) == 1
    })
    .await;
    assert!(a.spots().close(&first).await.unwrap(), "released");
    // The stuck handler was stopped with its incarnation, not left running.
    let ended = stuck.await.unwrap().unwrap_err();
    assert!(ended.is(ErrorKind::ShuttingDown), "{ended}");
    // A new incarnation under the ID runs on its own.
    counters.busy.store(0, Ordering::SeqCst);
    let again = a.spots().get_or_create("s", "room", "").await.unwrap();
    assert!(matches!(again, SpotCreation::Created(..)), "{again:?}");
    let said = a.spots().request("s", &Say("hi".into())).await.unwrap();
    assert_eq!(said.lines, 1, "the new incarnation starts empty");
    assert_eq!(counters.factories.load(Ordering::SeqCst), 2);
    stop([a]).await;
}

/// A Spot that notes every `on_closing` it hears, with its ID, into a shared log.
struct Tally {
    said: usize,
    reasons: Arc<std::sync::Mutex<Vec<(String, ClosingReason)>>>,
}

#[zlink::spot(type = "tally", relocation = disable)]
impl Tally {
    #[handler]
    async fn say(&mut self, _say: Say, ctx: &SpotContext) -> zlink::Result<Said> {
        self.said += 1;
        Ok(Said {
            lines: self.said,
            by: ctx.runtime().rid().to_string(),
            trace: None,
        })
    }
}

#[zlink::async_trait]
impl Spot for Tally {
    async fn on_closing(&mut self, ctx: &SpotContext, reason: ClosingReason) {
        self.reasons
            .lock()
            .unwrap()
            .push((ctx.id().to_string(), reason));
    }
}

type Reasons = Arc<std::sync::Mutex<Vec<(String, ClosingReason)>>>;

fn tally_type(reasons: &Reasons) -> SpotType {
    let reasons = reasons.clone();
    Tally::spot_type(move |_| Tally {
        said: 0,
        reasons: reasons.clone(),
    })
    .expect("a valid Spot type")
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
async fn a_spot_closing_hears_the_reason() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let reasons = Reasons::default();
    let a =
        start(discovered_node("a", &store, quick_lease()).spot_type(tally_type(&reasons))).await;
    let b = plain_node("b", &store).await;
    sees_servers(&b, &["a"]).await;
    let mut refs = Vec::new();
    for id in ["closed-here", "closed-remotely", "shut-down"] {
        let SpotCreation::Created(spot, _) = a
            .spots()
            .get_or_create(id, Tally::STABLE_TYPE, "")
            .await
            .unwrap()
        else {
            panic!("{id} not created")
        };
        refs.push(spot);
    }
    assert!(a.spots().close(&refs[0]).await.unwrap());
    // A close through the owner (command 48) is an explicit close too.
    assert!(b.spots().close(&refs[1]).await.unwrap());
    assert_eq!(
        *reasons.lock().unwrap(),
        [
            ("closed-here".to_string(), ClosingReason::ExplicitClose),
            ("closed-remotely".to_string(), ClosingReason::ExplicitClose),
        ]
    );
    a.shutdown().await;
    assert_eq!(
        reasons.lock().unwrap()[2..],
        [("shut-down".to_string(), ClosingReason::HostShutdown)],
        "the node's shutdown was the last turn of the Spot still open, once"
    );
    stop([b]).await;
}

/// A request the held channel answers only when the test lets it.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Echoed)]
pub struct Hold(pub String);

/// A request for what a Spot has seen.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Seen)]
pub struct Peek;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Seen {
    pub generation: u64,
    pub replies: Vec<String>,
}

const HELD: &str = "held";

/// A channel whose answers wait at a gate: `entered` handlers are waiting or done,
/// `answered` have returned their reply.
#[derive(Clone)]
pub struct HeldService {
    open: Arc<tokio::sync::Semaphore>,
    entered: Arc<AtomicUsize>,
    answered: Arc<AtomicUsize>,
}

#[zlink::channel(server)]
impl HeldService {
    #[handler]
    async fn hold(&self, hold: Hold, _ctx: &zlink::HandlerContext) -> zlink::Result<Echoed> {
        self.entered.fetch_add(1, Ordering::SeqCst);
        self.open.acquire().await.expect("open").forget();
        self.answered.fetch_add(1, Ordering::SeqCst);
        Ok(Echoed {
            text: hold.0,
            by: HELD.into(),
            trace: None,
        })
    }
}

/// A Spot whose handler asks the held channel and keeps the replies it got.
struct Asker {
    replies: Vec<String>,
    log: Arc<std::sync::Mutex<Vec<String>>>,
}

#[zlink::spot(type = "asker", relocation = disable)]
impl Asker {
    #[handler]
    async fn ask(&mut self, ask: Ask, ctx: &SpotContext) -> zlink::Result<Echoed> {
        let generation = ctx.generation();
        self.log
            .lock()
            .unwrap()
            .push(format!("gen {generation} asks {}", ask.0));
        let patient = zlink::CallOptions::new().timeout(std::time::Duration::from_secs(10));
        let reply = HeldServiceClient::new(&ctx.runtime(), HELD)
            .hold_with(&Hold(ask.0), patient)
            .await?;
        self.log
            .lock()
            .unwrap()
            .push(format!("gen {generation} resumed with {}", reply.text));
        self.replies.push(reply.text.clone());
        Ok(reply)
    }

    #[handler]
    async fn peek(&mut self, _peek: Peek, ctx: &SpotContext) -> zlink::Result<Seen> {
        Ok(Seen {
            generation: ctx.generation(),
            replies: self.replies.clone(),
        })
    }
}

impl Spot for Asker {}

#[tokio::test]
async fn a_reply_to_an_older_incarnation_is_never_delivered_to_a_re_created_spot() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let held = HeldService {
        open: Arc::new(tokio::sync::Semaphore::new(0)),
        entered: Arc::new(AtomicUsize::new(0)),
        answered: Arc::new(AtomicUsize::new(0)),
    };
    let server = start(
        discovered_node("held-server", &store, quick_lease()).channel_server(HELD, held.clone()),
    )
    .await;
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let asker_log = log.clone();
    // A short request timeout: a close waits that long for a running turn, then stops it.
    let a = start(
        discovered_node("a", &store, quick_lease())
            .request_timeout(std::time::Duration::from_millis(700))
            .spot_type(
                Asker::spot_type(move |_| Asker {
                    replies: Vec::new(),
                    log: asker_log.clone(),
                })
                .unwrap(),
            ),
    )
    .await;
    wait_until(WAIT, "a and the held server connected", || async {
        peer_rids(&a) == ["held-server"]
    })
    .await;
    let patient = || zlink::CallOptions::new().timeout(std::time::Duration::from_secs(10));

    let SpotCreation::Created(first, _) = a
        .spots()
        .get_or_create("q", Asker::STABLE_TYPE, "")
        .await
        .unwrap()
    else {
        panic!("not created")
    };
    // The first incarnation asks the channel and waits for its reply inside its turn.
    let old = tokio::spawn({
        let a = a.clone();
        async move {
            a.spots()
                .request_with("q", &Ask("for gen 1".into()), patient())
                .await
        }
    });
    wait_until(WAIT, "the first incarnation's request is held", || async {
        held.entered.load(Ordering::SeqCst) == 1
    })
    .await;
    // Closed (the close gives up on the awaiting turn) and created again on the same node.
    assert!(a.spots().close(&first).await.unwrap());
    let ended = old.await.unwrap().unwrap_err();
    assert_eq!(ended.kind(), Some(ErrorKind::ShuttingDown), "{ended}");
    let SpotCreation::Created(second, _) = a
        .spots()
        .get_or_create("q", Asker::STABLE_TYPE, "")
        .await
        .unwrap()
    else {
        panic!("not re-created")
    };
    assert!(second.generation > first.generation);
    // The new incarnation asks too, while the old reply is still outstanding.
    let new = tokio::spawn({
        let a = a.clone();
        async move {
            a.spots()
                .request_with("q", &Ask("for gen 2".into()), patient())
                .await
        }
    });
    wait_until(WAIT, "the second incarnation's request is held", || async {
        held.entered.load(Ordering::SeqCst) == 2
    })
    .await;
    // The old reply goes out first (the gate is FIFO), then the new one.
    held.open.add_permits(1);
    wait_until(WAIT, "the old reply was sent", || async {
        held.answered.load(Ordering::SeqCst) == 1
    })
    .await;
    held.open.add_permits(1);
    let got = new.await.unwrap().unwrap();
    assert_eq!(got.text, "for gen 2", "the new turn got its own reply");
    let seen = a.spots().request("q", &Peek).await.unwrap();
    assert_eq!(seen.generation, second.generation);
    assert_eq!(
        seen.replies,
        ["for gen 2"],
        "nothing of the old incarnation arrived"
    );
    let log = log.lock().unwrap().clone();
    assert_eq!(
        log,
        [
            format!("gen {} asks for gen 1", first.generation),
            format!("gen {} asks for gen 2", second.generation),
            format!("gen {} resumed with for gen 2", second.generation),
        ],
        "the old turn never resumed"
    );
    assert_eq!(held.answered.load(Ordering::SeqCst), 2);
    stop([a, server]).await;
}

/// A Spot whose `on_create` waits at a gate the test opens (one pass per creation).
struct Slowpoke {
    open: Arc<tokio::sync::Semaphore>,
    deciding: Arc<AtomicUsize>,
}

#[zlink::async_trait]
impl SpotHandlers for Slowpoke {
    fn packets() -> Vec<(String, PacketKind)> {
        Vec::new()
    }

    async fn handle(&mut self, _: &SpotContext, _: usize, _: Bytes) -> zlink::Result<Bytes> {
        Ok(Bytes::new())
    }
}

#[zlink::async_trait]
impl Spot for Slowpoke {
    async fn on_create(&mut self, _ctx: &SpotContext, _request: Bytes) -> CreateDecision {
        self.deciding.fetch_add(1, Ordering::SeqCst);
        self.open.acquire().await.expect("open").forget();
        CreateDecision::Accept(Bytes::new())
    }
}

/// How many creations one node runs at once (`MAX_ACTIVATIONS` in the object server).
const ACTIVATION_CAP: usize = 128;

/// Polls `value` for `window`: it never goes above `most`.
async fn stays_at_most(window: std::time::Duration, most: usize, value: impl Fn() -> usize) {
    let until = tokio::time::Instant::now() + window;
    while tokio::time::Instant::now() < until {
        assert!(value() <= most, "{} > {most}", value());
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(value() <= most, "{} > {most}", value());
}

#[tokio::test]
async fn the_activation_cap_bounds_concurrent_creations() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let open = Arc::new(tokio::sync::Semaphore::new(0));
    let factories = Arc::new(AtomicUsize::new(0));
    let deciding = Arc::new(AtomicUsize::new(0));
    let slow = {
        let (open, factories, deciding) = (open.clone(), factories.clone(), deciding.clone());
        SpotType::new("slowpoke", Relocation::Disable, move |_| {
            factories.fetch_add(1, Ordering::SeqCst);
            Slowpoke {
                open: open.clone(),
                deciding: deciding.clone(),
            }
        })
        .unwrap()
    };
    let a = start(discovered_node("a", &store, quick_lease()).spot_type(slow)).await;
    let done = Arc::new(AtomicUsize::new(0));
    let creations: Vec<_> = (0..ACTIVATION_CAP + 2)
        .map(|i| {
            let (a, done) = (a.clone(), done.clone());
            tokio::spawn(async move {
                let created = a
                    .spots()
                    .get_or_create(&format!("cap-{i}"), "slowpoke", "")
                    .await;
                done.fetch_add(1, Ordering::SeqCst);
                created
            })
        })
        .collect();
    wait_until(WAIT, "128 creations are deciding", || async {
        deciding.load(Ordering::SeqCst) == ACTIVATION_CAP
    })
    .await;
    // The other two wait for a slot: no factory of theirs runs while 128 are under way.
    stays_at_most(
        std::time::Duration::from_millis(300),
        ACTIVATION_CAP,
        || factories.load(Ordering::SeqCst),
    )
    .await;
    assert_eq!(done.load(Ordering::SeqCst), 0);
    // One creation finishes: exactly one waiting creation takes its slot.
    open.add_permits(1);
    wait_until(WAIT, "one finished and the 129th is deciding", || async {
        done.load(Ordering::SeqCst) == 1 && deciding.load(Ordering::SeqCst) == ACTIVATION_CAP + 1
    })
    .await;
    stays_at_most(
        std::time::Duration::from_millis(200),
        ACTIVATION_CAP + 1,
        || factories.load(Ordering::SeqCst),
    )
    .await;
    open.add_permits(ACTIVATION_CAP + 1);
    for creation in creations {
        let created = creation.await.unwrap().unwrap();
        assert!(matches!(created, SpotCreation::Created(..)), "{created:?}");
    }
    assert_eq!(factories.load(Ordering::SeqCst), ACTIVATION_CAP + 2);
    assert_eq!(a.status().spots_owned, ACTIVATION_CAP + 2);
    stop([a]).await;
}

/// Finishes `work` within `within`, or panics naming `what`.
async fn finishes_within<T>(
    within: std::time::Duration,
    what: &str,
    work: impl std::future::Future<Output = T>,
) -> T {
    tokio::time::timeout(within, work)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {within:?}"))
}

/// A Spot whose `Say("hold")` waits for the test's signal (`open`); anything else it
/// answers at once with how many lines it took.
struct Latch {
    lines: usize,
    open: Arc<tokio::sync::Semaphore>,
    held: Arc<AtomicUsize>,
}

#[zlink::spot(type = "latch", relocation = disable)]
impl Latch {
    #[handler]
    async fn say(&mut self, say: Say, ctx: &SpotContext) -> zlink::Result<Said> {
        if say.0 == "hold" {
            self.held.fetch_add(1, Ordering::SeqCst);
            self.open.acquire().await.expect("open").forget();
        }
        self.lines += 1;
        Ok(Said {
            lines: self.lines,
            by: ctx.runtime().rid().to_string(),
            trace: None,
        })
    }
}

impl Spot for Latch {}

#[tokio::test]
async fn infrastructure_work_never_waits_behind_an_application_handler() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let open = Arc::new(tokio::sync::Semaphore::new(0));
    let held = Arc::new(AtomicUsize::new(0));
    let latch = {
        let (open, held) = (open.clone(), held.clone());
        Latch::spot_type(move |_| Latch {
            lines: 0,
            open: open.clone(),
            held: held.clone(),
        })
        .unwrap()
    };
    // A close waits for a running turn up to the request timeout (1 s), then stops it.
    let request_timeout = std::time::Duration::from_secs(1);
    let a = start(
        discovered_node("a", &store, quick_lease())
            .request_timeout(request_timeout)
            .channel_server(CHANNEL, echo_handlers("a", Default::default()))
            .spot_type(latch),
    )
    .await;
    let b = plain_node("b", &store).await;
    sees_servers(&b, &["a"]).await;
    wait_until(WAIT, "b reaches a's channel", || async {
        echo_client(&b)
            .echo(&Echo { text: "?".into() })
            .await
            .is_ok()
    })
    .await;
    let mut refs = Vec::new();
    for id in ["stuck", "other", "third"] {
        let SpotCreation::Created(spot, _) = a
            .spots()
            .get_or_create(id, Latch::STABLE_TYPE, "")
            .await
            .unwrap()
        else {
            panic!("{id} not created")
        };
        refs.push(spot);
    }
    let [stuck_ref, _, third_ref] = [&refs[0], &refs[1], &refs[2]];

    // One turn is stuck in its handler until the test's signal, for up to 10 s.
    let stuck_since = tokio::time::Instant::now();
    let stuck = tokio::spawn({
        let b = b.clone();
        let patient = zlink::CallOptions::new().timeout(std::time::Duration::from_secs(10));
        async move {
            b.spots()
                .request_with("stuck", &Say("hold".into()), patient)
                .await
        }
    });
    wait_until(WAIT, "the stuck handler runs", || async {
        held.load(Ordering::SeqCst) == 1
    })
    .await;

    // Meanwhile the same node answers everything else at once.
    let quick = std::time::Duration::from_secs(2);
    let said = finishes_within(
        quick,
        "a remote request to another Spot",
        b.spots().request("other", &Say("hi".into())),
    )
    .await
    .unwrap();
    assert_eq!((said.lines, said.by.as_str()), (1, "a"));
    let said = finishes_within(
        quick,
        "a local request to another Spot",
        a.spots().request("other", &Say("hi".into())),
    )
    .await
    .unwrap();
    assert_eq!(said.lines, 2);
    let closed = finishes_within(quick, "a close of a third Spot", b.spots().close(third_ref))
        .await
        .unwrap();
    assert!(closed);
    let echoed = finishes_within(
        quick,
        "a channel call",
        echo_client(&b).echo(&Echo {
            text: "still here".into(),
        }),
    )
    .await
    .unwrap();
    assert_eq!(
        (echoed.text.as_str(), echoed.by.as_str()),
        ("still here", "a")
    );
    let found = finishes_within(quick, "find", a.spots().find("stuck"))
        .await
        .unwrap();
    assert_eq!(found.as_ref(), Some(stuck_ref));
    assert_eq!(
        finishes_within(quick, "find of the closed Spot", b.spots().find("third"))
            .await
            .unwrap(),
        None
    );
    assert_eq!(held.load(Ordering::SeqCst), 1, "the stuck turn still runs");

    // The stuck Spot's own close (its lifecycle lane) waits for the running turn for the
    // request timeout, then stops it and releases the Spot.
    let started = tokio::time::Instant::now();
    let closed = finishes_within(
        request_timeout + std::time::Duration::from_secs(1),
        "the stuck Spot's close",
        a.spots().close(stuck_ref),
    )
    .await
    .unwrap();
    assert!(closed);
    let took = started.elapsed();
    assert!(
        took >= request_timeout,
        "the close gave the turn the request timeout: {took:?}"
    );
    let ended = finishes_within(quick, "the stuck request", stuck)
        .await
        .unwrap()
        .unwrap_err();
    assert!(ended.is(ErrorKind::ShuttingDown), "{ended}");
    assert!(
        stuck_since.elapsed() < std::time::Duration::from_secs(10),
        "everything above ran while the turn was stuck"
    );
    assert_eq!(a.spots().find("stuck").await.unwrap(), None);
    open.add_permits(10);
    stop([b, a]).await;
}

/// What a Probe's handler should do.
#[derive(Debug, Default, Serialize, Deserialize, zlink::Message)]
#[message(reply = Inspected)]
pub struct Inspect {
    /// Fail with this ErrorKind code.
    pub fail: Option<u8>,
    /// Fail with `Error::InvalidArgument`.
    pub fail_argument: bool,
    /// Sleep this long first.
    pub stall_ms: u64,
}

/// What the handler saw.
#[derive(Debug, PartialEq, Serialize, Deserialize, zlink::Message)]
pub struct Inspected {
    pub metadata: Vec<(String, String)>,
    pub has_deadline: bool,
}

/// A Spot that reports the metadata its handler sees, or fails as asked.
struct Probe;

#[zlink::spot(type = "probe", relocation = disable)]
impl Probe {
    #[handler]
    async fn inspect(&mut self, inspect: Inspect, ctx: &SpotContext) -> zlink::Result<Inspected> {
        tokio::time::sleep(std::time::Duration::from_millis(inspect.stall_ms)).await;
        if let Some(code) = inspect.fail {
            let kind = ErrorKind::from_code(code).expect("a kind");
            return Err(zlink::Error::new(
                kind,
                format!("the handler failed with {kind}"),
            ));
        }
        if inspect.fail_argument {
            return Err(zlink::Error::InvalidArgument(
                "the handler refused its argument".into(),
            ));
        }
        Ok(Inspected {
            metadata: ctx
                .metadata()
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            has_deadline: ctx.deadline().is_some(),
        })
    }
}

impl Spot for Probe {}

/// An owner `a` of the Probe "p" and a caller `b` on another node.
async fn probe_owner_and_caller(
    store: &Arc<dyn zlink::store::LocationStore>,
) -> (Runtime, Runtime) {
    let a = start(
        discovered_node("a", store, quick_lease()).spot_type(Probe::spot_type(|_| Probe).unwrap()),
    )
    .await;
    let b = plain_node("b", store).await;
    sees_servers(&b, &["a"]).await;
    a.spots()
        .get_or_create("p", Probe::STABLE_TYPE, "")
        .await
        .unwrap();
    (a, b)
}

fn traced() -> zlink::CallOptions {
    zlink::CallOptions::new()
        .metadata("trace", "t-1")
        .unwrap()
        .metadata("tenant", "blue")
        .unwrap()
}

#[tokio::test]
async fn a_local_owner_keeps_the_metadata_and_completion_contract_of_a_remote_one() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let (a, b) = probe_owner_and_caller(&store).await;
    let sent = vec![
        ("tenant".to_string(), "blue".to_string()),
        ("trace".to_string(), "t-1".to_string()),
    ];
    // The same metadata reaches the handler from the owner's own node and from another.
    for rt in [&a, &b] {
        let seen = rt
            .spots()
            .request_with("p", &Inspect::default(), traced())
            .await
            .unwrap();
        assert_eq!(
            seen,
            Inspected {
                metadata: sent.clone(),
                has_deadline: true,
            },
            "caller {}",
            rt.rid()
        );
        // The reply is the handler's value only, and nothing of the metadata stays for the
        // next message.
        let plain = rt.spots().request("p", &Inspect::default()).await.unwrap();
        assert!(plain.metadata.is_empty(), "caller {}: {plain:?}", rt.rid());
    }
    // A handler's error reaches either caller as the same kind with the same detail.
    for kind in ErrorKind::ALL {
        let failing = Inspect {
            fail: Some(kind.code()),
            ..Inspect::default()
        };
        let local = a
            .spots()
            .request_with("p", &failing, traced())
            .await
            .unwrap_err();
        let remote = b
            .spots()
            .request_with("p", &failing, traced())
            .await
            .unwrap_err();
        assert_eq!(local.kind(), Some(kind), "local: {local}");
        assert_eq!(remote.kind(), Some(kind), "remote: {remote}");
        assert_eq!(local, remote);
    }
    // A request whose handler outlives its deadline ends at the deadline either way.
    let short = || zlink::CallOptions::new().timeout(std::time::Duration::from_millis(150));
    let stalled = Inspect {
        stall_ms: 600,
        ..Inspect::default()
    };
    for rt in [&a, &b] {
        let started = tokio::time::Instant::now();
        let late = rt
            .spots()
            .request_with("p", &stalled, short())
            .await
            .unwrap_err();
        assert!(
            late.is(ErrorKind::DeadlineExceeded),
            "caller {}: {late}",
            rt.rid()
        );
        let waited = started.elapsed();
        assert!(
            waited < std::time::Duration::from_millis(550),
            "caller {} waited for the handler: {waited:?}",
            rt.rid()
        );
    }
    // Both late replies are discarded; the next requests get their own answers.
    for rt in [&a, &b] {
        let seen = rt
            .spots()
            .request_with("p", &Inspect::default(), traced())
            .await
            .unwrap();
        assert_eq!(seen.metadata, sent, "caller {}", rt.rid());
    }
    stop([b, a]).await;
}

#[tokio::test]
async fn a_handler_argument_error_reaches_a_local_caller_as_it_reaches_a_remote_one() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let (a, b) = probe_owner_and_caller(&store).await;
    let failing = Inspect {
        fail_argument: true,
        ..Inspect::default()
    };
    let local = a.spots().request("p", &failing).await.unwrap_err();
    let remote = b.spots().request("p", &failing).await.unwrap_err();
    assert_eq!(
        local.kind(),
        remote.kind(),
        "local: {local}; remote: {remote}"
    );
    stop([b, a]).await;
}

#[tokio::test]
async fn a_reserved_metadata_key_reaches_a_local_handler_as_it_reaches_a_remote_one() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let (a, b) = probe_owner_and_caller(&store).await;
    let reserved = || {
        zlink::CallOptions::new()
            .metadata("zlink.relay", "r-1")
            .unwrap()
    };
    let local = a
        .spots()
        .request_with("p", &Inspect::default(), reserved())
        .await
        .unwrap();
    let remote = b
        .spots()
        .request_with("p", &Inspect::default(), reserved())
        .await
        .unwrap();
    assert_eq!(local, remote);
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
            by: ctx.runtime().rid().to_string(),
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
