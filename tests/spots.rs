//! Spots addressed by global ID, over real TCP on 127.0.0.1 and a real `redis-server`:
//! creation races, serial turns, direct requests by ID from another node, the route cache,
//! close and its generation check.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use zlink::object::{CreateDecision, Relocation, Spot, SpotContext, SpotCreation, SpotType};
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
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Shout(pub String);

/// A chat room: lines said, in order. `busy` counts handlers running at once.
struct Room {
    node: String,
    lines: Vec<String>,
    busy: Arc<AtomicUsize>,
    overlaps: Arc<AtomicUsize>,
}

#[zlink::async_trait]
impl Spot for Room {
    async fn handle(
        &mut self,
        _ctx: &SpotContext,
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
        self.lines.push(text);
        self.busy.fetch_sub(1, Ordering::SeqCst);
        Said {
            lines: self.lines.len(),
            by: self.node.clone(),
        }
        .encode()
    }

    async fn on_create(&mut self, _ctx: &SpotContext, request: Bytes) -> CreateDecision {
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
    SpotType::new(
        "room",
        &[("Say", PacketKind::Request), ("Shout", PacketKind::Send)],
        Relocation::Disable,
        move |_ctx| {
            counters.factories.fetch_add(1, Ordering::SeqCst);
            Room {
                node: node.clone(),
                lines: Vec::new(),
                busy: counters.busy.clone(),
                overlaps: counters.overlaps.clone(),
            }
        },
    )
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
    // Create (not get-or-create) of an existing ID, and a type mismatch.
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
    let b = object_server("b", &store, &counters).await;
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
