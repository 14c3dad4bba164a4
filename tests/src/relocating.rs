//! A relocatable counter Actor (`relocation = preserve`), a fixed one, and a small mesh
//! of nodes serving them over real TCP and a private `redis-server`, for the relocation
//! tests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{Actor, ActorContext, RelocationState, SpotContext};
use zlink::Runtime;
use zlink_testkit::{wait_until, RedisServer};

use crate::{
    discovered_node, peer_rids, quick_lease, redis_relocation_store, redis_store, start, WAIT,
};

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Counted)]
pub struct Add(pub u64);

#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
pub struct Counted {
    pub total: u64,
    pub by: String,
    pub generation: u64,
    /// The operation identity the handler saw (`ctx.operation()`).
    #[serde(default)]
    pub operation: Option<u64>,
}

/// One-way: appends `n` to the Actor's log.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Log(pub u64);

/// Holds the Actor's turn for this many milliseconds.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Counted)]
pub struct Hold(pub u64);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = History)]
pub struct Show;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct History {
    pub log: Vec<u64>,
    pub ticks: u64,
    pub by: String,
}

/// Starts a 50 ms timer.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Beat;

/// One `Log` a counter ran: the node, the number, and the operation its handler saw.
pub type Logged = (String, u64, Option<u64>);

#[derive(Default, Clone)]
pub struct Seen {
    /// Last turns of the Spots: (node, reason).
    pub closings: Arc<Mutex<Vec<(String, zlink::object::ClosingReason)>>>,
    pub factories: Arc<AtomicUsize>,
    pub initialized: Arc<AtomicUsize>,
    pub handled_by: Arc<Mutex<Vec<String>>>,
    /// Counter turns that began to hold.
    pub holding: Arc<AtomicUsize>,
    /// What the counters' one-way `Log` handlers saw: (node, n, `ctx.operation()`).
    pub logged: Arc<Mutex<Vec<Logged>>>,
}

/// What the test objects keep and move: a total, a log in arrival order, ticks taken.
#[derive(Default, Serialize, Deserialize)]
pub struct Tape {
    pub total: u64,
    pub log: Vec<u64>,
    pub ticks: u64,
}

impl Tape {
    fn counted<K: zlink::object::Kind>(
        &self,
        node: &str,
        ctx: &zlink::object::Context<K>,
    ) -> Counted {
        Counted {
            total: self.total,
            by: node.to_string(),
            generation: ctx.generation(),
            operation: ctx.operation(),
        }
    }

    fn history(&self, node: &str) -> History {
        History {
            log: self.log.clone(),
            ticks: self.ticks,
            by: node.to_string(),
        }
    }

    async fn hold<K: zlink::object::Kind>(
        &self,
        hold: Hold,
        node: &str,
        ctx: &zlink::object::Context<K>,
    ) -> zlink::Result<Counted> {
        tokio::time::sleep(Duration::from_millis(hold.0)).await;
        Ok(self.counted(node, ctx))
    }

    fn capture(&self) -> zlink::Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| zlink::Error::InvalidArgument(e.to_string()))
    }

    fn restore(state: &[u8]) -> zlink::Result<Self> {
        serde_json::from_slice(state).map_err(|e| zlink::Error::InvalidArgument(e.to_string()))
    }
}

/// Starts the object's 50 ms "beat" timer.
fn start_beat<K: zlink::object::Kind>(ctx: &zlink::object::Context<K>) -> zlink::Result<()> {
    ctx.start_timer(
        "beat",
        Duration::from_millis(50),
        zlink::object::TimerPolicy::SkipLateTicks,
    )
}

/// A counter whose total, log and tick count move with it.
pub struct Counter {
    node: String,
    tape: Tape,
    seen: Seen,
}

impl RelocationState for Counter {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        self.tape.capture()
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        self.tape = Tape::restore(state)?;
        Ok(())
    }
}

#[zlink::actor(type = "counter", relocation = preserve)]
impl Counter {
    #[handler]
    async fn add(&mut self, add: Add, ctx: &ActorContext) -> zlink::Result<Counted> {
        self.tape.total += add.0;
        self.seen.handled_by.lock().unwrap().push(self.node.clone());
        Ok(self.tape.counted(&self.node, ctx))
    }

    #[handler]
    async fn log(&mut self, log: Log, ctx: &ActorContext) -> zlink::Result<()> {
        self.tape.log.push(log.0);
        self.seen
            .logged
            .lock()
            .unwrap()
            .push((self.node.clone(), log.0, ctx.operation()));
        Ok(())
    }

    #[handler]
    async fn hold(&mut self, hold: Hold, ctx: &ActorContext) -> zlink::Result<Counted> {
        self.seen.holding.fetch_add(1, Ordering::SeqCst);
        self.tape.hold(hold, &self.node, ctx).await
    }

    #[handler]
    async fn show(&mut self, _show: Show, _ctx: &ActorContext) -> zlink::Result<History> {
        Ok(self.tape.history(&self.node))
    }

    #[handler]
    async fn beat(&mut self, _beat: Beat, ctx: &ActorContext) -> zlink::Result<()> {
        start_beat(ctx)
    }
}

#[zlink::async_trait]
impl Actor for Counter {
    async fn on_initialize(&mut self, _ctx: &ActorContext) -> zlink::Result<()> {
        self.seen.initialized.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    async fn on_timer(
        &mut self,
        _ctx: &ActorContext,
        _tick: zlink::object::TimerTick,
    ) -> zlink::Result<()> {
        self.tape.ticks += 1;
        Ok(())
    }
}

/// An Actor moved by a fresh instance (`relocation = recreate`): its queue and timers
/// move, its fields start again.
pub struct Fresh {
    pub node: String,
    pub tape: Tape,
}

#[zlink::actor(type = "fresh", relocation = recreate)]
impl Fresh {
    #[handler]
    async fn add(&mut self, add: Add, ctx: &ActorContext) -> zlink::Result<Counted> {
        self.tape.total += add.0;
        Ok(self.tape.counted(&self.node, ctx))
    }

    #[handler]
    async fn log(&mut self, log: Log, _ctx: &ActorContext) -> zlink::Result<()> {
        self.tape.log.push(log.0);
        Ok(())
    }

    #[handler]
    async fn hold(&mut self, hold: Hold, ctx: &ActorContext) -> zlink::Result<Counted> {
        self.tape.hold(hold, &self.node, ctx).await
    }

    #[handler]
    async fn show(&mut self, _show: Show, _ctx: &ActorContext) -> zlink::Result<History> {
        Ok(self.tape.history(&self.node))
    }

    #[handler]
    async fn beat(&mut self, _beat: Beat, ctx: &ActorContext) -> zlink::Result<()> {
        start_beat(ctx)
    }
}

#[zlink::async_trait]
impl Actor for Fresh {
    async fn on_timer(
        &mut self,
        _ctx: &ActorContext,
        _tick: zlink::object::TimerTick,
    ) -> zlink::Result<()> {
        self.tape.ticks += 1;
        Ok(())
    }
}

/// A Spot whose log and tick count move with it (`relocation = preserve`); the instances
/// it leaves behind report their last turn in `closings`.
pub struct Ledger {
    pub node: String,
    pub tape: Tape,
    pub closings: Arc<Mutex<Vec<(String, zlink::object::ClosingReason)>>>,
}

impl RelocationState for Ledger {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        self.tape.capture()
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        self.tape = Tape::restore(state)?;
        Ok(())
    }
}

#[zlink::spot(type = "ledger", relocation = preserve)]
impl Ledger {
    #[handler]
    async fn log(&mut self, log: Log, _ctx: &SpotContext) -> zlink::Result<()> {
        self.tape.log.push(log.0);
        Ok(())
    }

    #[handler]
    async fn hold(&mut self, hold: Hold, ctx: &SpotContext) -> zlink::Result<Counted> {
        self.tape.hold(hold, &self.node, ctx).await
    }

    #[handler]
    async fn show(&mut self, _show: Show, _ctx: &SpotContext) -> zlink::Result<History> {
        Ok(self.tape.history(&self.node))
    }

    #[handler]
    async fn beat(&mut self, _beat: Beat, ctx: &SpotContext) -> zlink::Result<()> {
        start_beat(ctx)
    }
}

#[zlink::async_trait]
impl zlink::object::Spot for Ledger {
    async fn on_timer(
        &mut self,
        _ctx: &SpotContext,
        _tick: zlink::object::TimerTick,
    ) -> zlink::Result<()> {
        self.tape.ticks += 1;
        Ok(())
    }

    async fn on_closing(&mut self, _ctx: &SpotContext, reason: zlink::object::ClosingReason) {
        self.closings
            .lock()
            .unwrap()
            .push((self.node.clone(), reason));
    }
}

/// The [`Ledger`] type as node `node` makes it.
pub fn ledger_type(node: &str, seen: &Seen) -> zlink::object::SpotType {
    let (node, closings) = (node.to_string(), seen.closings.clone());
    Ledger::spot_type(move |_ctx| Ledger {
        node: node.clone(),
        tape: Tape::default(),
        closings: closings.clone(),
    })
    .expect("a valid Spot type")
}

/// A fixed Actor: never moved.
pub struct Anchor;

#[zlink::actor(type = "anchor", relocation = disable)]
impl Anchor {
    #[handler]
    async fn add(&mut self, add: Add, ctx: &ActorContext) -> zlink::Result<Counted> {
        Ok(Counted {
            total: add.0,
            by: String::new(),
            generation: ctx.generation(),
            operation: None,
        })
    }
}

impl Actor for Anchor {}

pub fn counter_type(node: &str, seen: &Seen) -> zlink::object::ActorType {
    let (node, seen) = (node.to_string(), seen.clone());
    Counter::actor_type(move |_ctx| {
        seen.factories.fetch_add(1, Ordering::SeqCst);
        Counter {
            node: node.clone(),
            tape: Tape::default(),
            seen: seen.clone(),
        }
    })
    .expect("a valid Actor type")
}

/// The [`Fresh`] type as node `node` makes it.
pub fn fresh_type(node: &str) -> zlink::object::ActorType {
    let node = node.to_string();
    Fresh::actor_type(move |_ctx| Fresh {
        node: node.clone(),
        tape: Tape::default(),
    })
    .expect("a valid Actor type")
}

/// A `preserve` Actor whose state can be made bigger than one message a connection
/// carries (or than travels inside a restore): a move puts it in the Relocation Store.
pub struct Heavy {
    bytes: Vec<u8>,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Weighed)]
pub struct Fill(pub u32);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Weighed)]
pub struct Weigh;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Weighed {
    pub len: usize,
    pub sum: u64,
}

impl RelocationState for Heavy {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        Ok(self.bytes.clone())
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        self.bytes = state.to_vec();
        Ok(())
    }
}

impl Weighed {
    /// The length and byte sum of `bytes`.
    pub fn of(bytes: &[u8]) -> Weighed {
        Weighed {
            len: bytes.len(),
            sum: bytes.iter().map(|b| u64::from(*b)).sum(),
        }
    }
}

#[zlink::actor(type = "heavy", relocation = preserve)]
impl Heavy {
    // Building and summing megabytes byte by byte takes a debug build most of a second:
    // done on the blocking pool, as a handler should do CPU-heavy work, so the node's
    // workers keep renewing its lease meanwhile (CI saw every lease lost otherwise).
    #[handler]
    async fn fill(&mut self, fill: Fill, _ctx: &ActorContext) -> zlink::Result<Weighed> {
        let (bytes, weighed) = tokio::task::spawn_blocking(move || {
            let bytes: Vec<u8> = (0..fill.0).map(|i| (i % 251) as u8).collect();
            let weighed = Weighed::of(&bytes);
            (bytes, weighed)
        })
        .await
        .expect("the fill ran");
        self.bytes = bytes;
        Ok(weighed)
    }

    #[handler]
    async fn weigh(&mut self, _weigh: Weigh, _ctx: &ActorContext) -> zlink::Result<Weighed> {
        let bytes = self.bytes.clone();
        Ok(tokio::task::spawn_blocking(move || Weighed::of(&bytes))
            .await
            .expect("the weighing ran"))
    }
}

impl Actor for Heavy {}

/// The type of [`Heavy`], empty at creation.
pub fn heavy_type() -> zlink::object::ActorType {
    Heavy::actor_type(|_| Heavy { bytes: Vec::new() }).expect("a valid Actor type")
}

pub struct Mesh {
    pub redis: RedisServer,
    /// The Location Store every node was given first.
    pub store: Arc<dyn zlink::store::LocationStore>,
    pub nodes: Vec<Runtime>,
    pub seen: Seen,
}

/// `servers` nodes serving the counter type (the first takes new Actors: the others
/// have placement weight 0), plus one client node `client` that serves nothing.
pub async fn mesh(servers: &[&str], follow: Option<Duration>) -> Mesh {
    mesh_limited(servers, follow, 0).await
}

/// [`mesh`], with at most `limit` counters per node (0: no limit).
pub async fn mesh_limited(servers: &[&str], follow: Option<Duration>, limit: u32) -> Mesh {
    mesh_custom(servers, limit, |_, _, builder| match follow {
        Some(follow) => builder.message_follow_duration(follow),
        None => builder,
    })
    .await
}

/// [`mesh`] where server `faulty` reaches the Location Store through a
/// [`FaultyLocationStore`](zlink_testkit::FaultyLocationStore), returned with it.
pub async fn mesh_with_faulty_store(
    servers: &[&str],
    faulty: &str,
) -> (Mesh, Arc<zlink_testkit::FaultyLocationStore>) {
    let wrapped = Arc::new(Mutex::new(None::<Arc<zlink_testkit::FaultyLocationStore>>));
    let m = mesh_custom(servers, 0, |rid, store, builder| {
        if rid != faulty {
            return builder;
        }
        let view = Arc::new(zlink_testkit::FaultyLocationStore::new(store.clone()));
        *wrapped.lock().unwrap() = Some(view.clone());
        builder.location_store(view)
    })
    .await;
    let view = wrapped
        .lock()
        .unwrap()
        .clone()
        .expect("the faulty server started");
    (m, view)
}

/// [`mesh_limited`], each server's builder passed through `configure` (with its RID and
/// the shared store) last.
pub async fn mesh_custom(
    servers: &[&str],
    limit: u32,
    configure: impl Fn(
        &str,
        &Arc<dyn zlink::store::LocationStore>,
        zlink::RuntimeBuilder,
    ) -> zlink::RuntimeBuilder,
) -> Mesh {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let relocation_store = redis_relocation_store(&redis);
    let seen = Seen::default();
    let mut nodes = Vec::new();
    for (i, rid) in servers.iter().enumerate() {
        let builder = discovered_node(rid, &store, quick_lease())
            .relocation_store(relocation_store.clone())
            .placement_weight(if i == 0 { 100 } else { 0 })
            .actor_type(counter_type(rid, &seen).max_actors(limit))
            .actor_type(Anchor::actor_type(|_| Anchor).expect("anchor type"))
            .actor_type(fresh_type(rid))
            .spot_type(ledger_type(rid, &seen));
        nodes.push(start(configure(rid, &store, builder)).await);
    }
    nodes.push(
        start(discovered_node("client", &store, quick_lease()).relocation_store(relocation_store))
            .await,
    );
    for rt in &nodes {
        wait_until(WAIT, "every node sees every server", || async {
            let peers = peer_rids(rt);
            servers
                .iter()
                .all(|s| *s == rt.rid() || peers.iter().any(|p| p == s))
                && rt
                    .discovery()
                    .status()
                    .map(|s| s.members.iter().filter(|m| m.entry_spot.is_some()).count())
                    .unwrap_or(0)
                    == servers.iter().filter(|s| **s != rt.rid()).count()
        })
        .await;
    }
    Mesh {
        redis,
        store,
        nodes,
        seen,
    }
}

pub fn record_reads(rt: &Runtime) -> u64 {
    rt.status()
        .store_operations
        .map(|m| m.reads.record.calls)
        .unwrap_or(0)
}
