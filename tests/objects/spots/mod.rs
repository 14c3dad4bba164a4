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
use zlink::{Bytes, ErrorKind, PacketKind, Payload, Runtime};
use zlink_testkit::{wait_until, RedisServer};
use zlink_tests::*;

mod admission;
mod close;
mod creation;
mod limits;
mod readiness;
mod resolve_and_cache;
mod typed_creation;

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
        payload: Payload,
    ) -> zlink::Result<Payload> {
        if self.busy.fetch_add(1, Ordering::SeqCst) > 0 {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        tokio::task::yield_now().await;
        let text = match handler {
            0 => payload.into_message::<Say>()?.0,
            _ => payload.into_message::<Shout>()?.0.to_uppercase(),
        };
        if text == "panic" {
            self.busy.fetch_sub(1, Ordering::SeqCst);
            panic!("a handler bug");
        }
        if text == "forever" {
            std::future::pending::<()>().await;
        }
        if text == "slow" {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        }
        self.lines.push(text);
        self.busy.fetch_sub(1, Ordering::SeqCst);
        Payload::of(Said {
            lines: self.lines.len(),
            by: self.node.clone(),
            trace: ctx.metadata().get("trace").map(str::to_string),
        })
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

/// A Room server `a` and a plain node `b` connected to it, over a private redis-server
/// (held here for the test's length).
struct RoomServerAndCaller {
    _redis: RedisServer,
    counters: Counters,
    a: Runtime,
    b: Runtime,
}

async fn room_server_and_caller() -> RoomServerAndCaller {
    room_server_and_caller_via(|store| store.clone()).await
}

/// [`room_server_and_caller`], `b` on a `FaultyLocationStore` over the store, returned too.
async fn room_server_and_faulty_caller(
) -> (RoomServerAndCaller, Arc<zlink_testkit::FaultyLocationStore>) {
    let mut faulty = None;
    let servers = room_server_and_caller_via(|store| {
        let view = Arc::new(zlink_testkit::FaultyLocationStore::new(store.clone()));
        faulty = Some(view.clone());
        let b_store: Arc<dyn zlink::store::LocationStore> = view;
        b_store
    })
    .await;
    (servers, faulty.expect("b's store was made"))
}

/// [`room_server_and_caller`], `b`'s store made by `b_store` from the shared one.
async fn room_server_and_caller_via<F>(b_store: F) -> RoomServerAndCaller
where
    F: FnOnce(&Arc<dyn zlink::store::LocationStore>) -> Arc<dyn zlink::store::LocationStore>,
{
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    let b = plain_node("b", &b_store(&store)).await;
    wait_until(WAIT, "a and b connected", || async {
        peer_rids(&b) == ["a"]
    })
    .await;
    RoomServerAndCaller {
        _redis: redis,
        counters,
        a,
        b,
    }
}

/// Room `id` as `rt` creates it: the incarnation and its creation reply (panics `why` if not made).
async fn created_room(rt: &zlink::Handle, id: &str, why: &str) -> (zlink::object::SpotRef, Bytes) {
    let SpotCreation::Created(room, reply) = rt
        .spots()
        .get_or_create(id, "room", Bytes::new())
        .await
        .unwrap()
    else {
        panic!("{why}")
    };
    (room, reply)
}

/// What Spot `id` answers to `rt`'s request `Say(text)`.
async fn say(rt: &zlink::Handle, id: &str, text: &str) -> zlink::Result<Said> {
    rt.spots().request(id, &Say(text.into())).await
}

fn record_reads(rt: &Runtime) -> u64 {
    rt.status()
        .store_operations
        .expect("a store")
        .reads
        .record
        .calls
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

async fn sees_servers(rt: &zlink::Handle, rids: &[&str]) {
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
            by: ctx.handle().rid().to_string(),
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

pub use zlink_tests::contract::{Inspect, Inspected};

/// A Spot that reports the metadata its handler sees, or fails as asked.
struct Probe;

#[zlink::spot(type = "probe", relocation = disable)]
impl Probe {
    #[handler]
    async fn inspect(&mut self, inspect: Inspect, ctx: &SpotContext) -> zlink::Result<Inspected> {
        zlink_tests::contract::inspected(inspect, ctx).await
    }
}

impl Spot for Probe {}
