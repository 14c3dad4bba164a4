//! Instance Spots the object and conformance tests share: a match type activated by its
//! first message, the nodes that serve it, and what they read from the Location Store.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::*;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;
use zlink::object::{ClosingReason, Spot, SpotContext, TimerPolicy, TimerTick};
use zlink::store::{MemoryRelocationStore, ReadOutcome, RecordKey, RelocationStore};
use zlink::{ErrorKind, Runtime};
use zlink_testkit::{wait_until, RedisServer};

const WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The permits of a match node's handler gate: taking them all holds every handler.
pub const PERMITS: u32 = 1 << 20;

/// Request: note `by` in the match's log; the reply is the whole log so far.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Log)]
pub struct Score {
    pub by: String,
}

/// One-way: note `by` in the match's log.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Mark {
    pub by: String,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Log(pub Vec<String>);

/// An Instance Spot: a match, activated by its first message.
pub struct Match {
    pub log: Vec<String>,
    /// Each handler takes one permit first: a test holds them back to pause a handler.
    pub gate: Arc<Semaphore>,
}

#[zlink::spot(type = "match", relocation = disable, instance)]
impl Match {
    #[handler]
    async fn score(&mut self, score: Score, _ctx: &SpotContext) -> zlink::Result<Log> {
        let _turn = self.gate.acquire().await;
        self.log.push(score.by);
        Ok(Log(self.log.clone()))
    }

    #[handler]
    async fn mark(&mut self, mark: Mark, _ctx: &SpotContext) -> zlink::Result<()> {
        let _turn = self.gate.acquire().await;
        self.log.push(mark.by);
        Ok(())
    }
}

impl Spot for Match {}

/// A User Spot type, for the type checks.
pub struct Lounge;

#[zlink::spot(type = "lounge", relocation = disable)]
impl Lounge {
    #[handler]
    async fn score(&mut self, _score: Score, _ctx: &SpotContext) -> zlink::Result<Log> {
        Ok(Log(Vec::new()))
    }
}

impl Spot for Lounge {}

/// A node serving matches and lounges, with its own Relocation Store (to count roots),
/// counting the matches it builds; `gate` paces every match handler.
pub struct MatchNode {
    pub _redis: RedisServer,
    pub store: Arc<dyn zlink::store::LocationStore>,
    pub roots: Arc<MemoryRelocationStore>,
    pub built: Arc<AtomicUsize>,
    pub gate: Arc<Semaphore>,
    pub rt: Runtime,
}

pub async fn match_node() -> MatchNode {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let roots = Arc::new(MemoryRelocationStore::new());
    let built = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(Semaphore::new(PERMITS as usize));
    let matches = Match::spot_type({
        let (built, gate) = (built.clone(), gate.clone());
        move |_| {
            built.fetch_add(1, Ordering::SeqCst);
            Match {
                log: Vec::new(),
                gate: gate.clone(),
            }
        }
    })
    .unwrap();
    let relocation: Arc<dyn RelocationStore> = roots.clone();
    let rt = start(
        discovered_node("a", &store, quick_lease())
            .relocation_store(relocation)
            .spot_type(matches)
            .spot_type(Lounge::spot_type(|_| Lounge).unwrap()),
    )
    .await;
    MatchNode {
        _redis: redis,
        store,
        roots,
        built,
        gate,
        rt,
    }
}

/// Match `id`'s log after a `Score` by `by` that `rt` sends with Instance intent.
pub async fn intent_score(rt: &zlink::Handle, id: &str, by: &str) -> zlink::Result<Log> {
    MatchClient::instance(rt, id)
        .score(&Score { by: by.into() })
        .await
}

/// Match `id`'s log after a `Score` by `by` that `rt` sends as a plain call (no intent).
pub async fn plain_score(rt: &zlink::Handle, id: &str, by: &str) -> zlink::Result<Log> {
    MatchClient::new(rt, id)
        .score(&Score { by: by.into() })
        .await
}

/// The recovery pointer of Spot `id`'s authority record, read straight from the store
/// (`None` once it is gone; the record must be there).
pub async fn recovery_pointer(
    store: &Arc<dyn zlink::store::LocationStore>,
    id: &str,
) -> Option<String> {
    #[derive(Deserialize)]
    struct Stored {
        #[serde(default)]
        activation: Option<String>,
    }
    let key = RecordKey::new(format!("zla1:s:{}:{id}", id.len()), "authority");
    match store.read(&key).await.unwrap() {
        ReadOutcome::Found { value, .. } => {
            zlink::cbor_decode::<Stored>(&value)
                .expect("an authority record")
                .activation
        }
        ReadOutcome::Missing => panic!("no authority record for {id}"),
    }
}

/// A node serving matches (its builds counted in `built`) or nothing, on `store`.
pub async fn mesh_node(
    rid: &str,
    store: &Arc<dyn zlink::store::LocationStore>,
    built: Option<&Arc<AtomicUsize>>,
) -> Runtime {
    let mut builder = discovered_node(rid, store, quick_lease());
    if let Some(built) = built {
        let built = built.clone();
        builder = builder.spot_type(
            Match::spot_type(move |_| {
                built.fetch_add(1, Ordering::SeqCst);
                Match {
                    log: Vec::new(),
                    gate: Arc::new(Semaphore::new(PERMITS as usize)),
                }
            })
            .unwrap(),
        );
    }
    start(builder).await
}

/// A match server `rid` whose factory counts into `built`, with `fault` on its builder.
pub async fn faulty_match_node(
    rid: &str,
    store: &Arc<dyn zlink::store::LocationStore>,
    built: &Arc<AtomicUsize>,
    fault: fn(zlink::RuntimeBuilder) -> zlink::RuntimeBuilder,
) -> Runtime {
    let built = built.clone();
    let matches = Match::spot_type(move |_| {
        built.fetch_add(1, Ordering::SeqCst);
        Match {
            log: Vec::new(),
            gate: Arc::new(Semaphore::new(PERMITS as usize)),
        }
    })
    .unwrap();
    start(fault(
        discovered_node(rid, store, quick_lease()).spot_type(matches),
    ))
    .await
}

/// An intent call from `caller` to match "m", whose owner (holding `lease`) died, is
/// `Unavailable`, and still is once that lease expired.
pub async fn unavailable_before_and_after_lease_expiry(
    caller: &zlink::Handle,
    store: &Arc<dyn zlink::store::LocationStore>,
    lease: &zlink::store::LeaseToken,
) {
    let call = || async { intent_score(caller, "m", caller.rid()).await.unwrap_err() };
    let dead = call().await;
    assert!(dead.is(ErrorKind::Unavailable), "{dead}");
    wait_until(WAIT, "the dead owner's lease expired", || async {
        matches!(store.read_lease(&lease.owner).await, Ok(None))
    })
    .await;
    let expired = call().await;
    assert!(expired.is(ErrorKind::Unavailable), "{expired}");
}

/// One-way: arms a timer that ticks every 20 ms until `Disarm`.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Arm;

/// One-way: stops the timer.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Disarm;

/// An Instance Spot that records how it closed.
pub struct Round {
    pub closings: Arc<std::sync::Mutex<Vec<ClosingReason>>>,
}

#[zlink::spot(type = "round", relocation = disable, instance)]
impl Round {
    #[handler]
    async fn score(&mut self, score: Score, _ctx: &SpotContext) -> zlink::Result<Log> {
        Ok(Log(vec![score.by]))
    }

    #[handler]
    async fn arm(&mut self, _arm: Arm, ctx: &SpotContext) -> zlink::Result<()> {
        ctx.start_timer(
            "beat",
            std::time::Duration::from_millis(20),
            TimerPolicy::SkipLateTicks,
        )
    }

    #[handler]
    async fn disarm(&mut self, _disarm: Disarm, ctx: &SpotContext) -> zlink::Result<()> {
        ctx.cancel_timer("beat");
        Ok(())
    }

    #[on_timer]
    async fn beat(&mut self, _tick: TimerTick, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }

    #[on_closing]
    async fn closing(&mut self, reason: ClosingReason, _ctx: &SpotContext) {
        self.closings.lock().unwrap().push(reason);
    }
}

/// A node evicting Instance Spots idle for `idle`, its rounds' closings in `closings`;
/// it serves lounges (User Spots) too.
pub async fn evicting_node(
    redis: &RedisServer,
    idle: std::time::Duration,
    closings: &Arc<std::sync::Mutex<Vec<ClosingReason>>>,
) -> Runtime {
    let store = redis_store(redis);
    let closings = closings.clone();
    start(
        discovered_node("a", &store, quick_lease())
            .instance_spot_idle_timeout(idle)
            .spot_type(
                Round::spot_type(move |_| Round {
                    closings: closings.clone(),
                })
                .unwrap(),
            )
            .spot_type(Lounge::spot_type(|_| Lounge).unwrap()),
    )
    .await
}

pub const IDLE: std::time::Duration = std::time::Duration::from_millis(300);

/// An Instance Spot that moves by being built afresh on its new node.
pub struct Heat;

#[zlink::spot(type = "heat", relocation = recreate, instance)]
impl Heat {
    #[handler]
    async fn score(&mut self, score: Score, ctx: &SpotContext) -> zlink::Result<Log> {
        Ok(Log(vec![score.by, ctx.handle().rid().to_string()]))
    }
}

impl Spot for Heat {}

/// A match server `rid` on `store` and `roots`, its handlers behind `gate`, its builds
/// counted in `built`.
pub async fn gated_match_node(
    rid: &str,
    store: &Arc<dyn zlink::store::LocationStore>,
    roots: &Arc<MemoryRelocationStore>,
    gate: &Arc<Semaphore>,
    built: &Arc<AtomicUsize>,
) -> Runtime {
    let (gate, built) = (gate.clone(), built.clone());
    let matches = Match::spot_type(move |_| {
        built.fetch_add(1, Ordering::SeqCst);
        Match {
            log: Vec::new(),
            gate: gate.clone(),
        }
    })
    .unwrap();
    let relocation: Arc<dyn RelocationStore> = roots.clone();
    start(
        discovered_node(rid, store, quick_lease())
            .relocation_store(relocation)
            .spot_type(matches),
    )
    .await
}

/// An Actor type, for the recovery rules: Actors never get a recovery pointer.
pub struct Pawn;

#[zlink::actor(type = "pawn", relocation = disable)]
impl Pawn {
    #[handler]
    async fn score(
        &mut self,
        score: Score,
        _ctx: &zlink::object::ActorContext,
    ) -> zlink::Result<Log> {
        Ok(Log(vec![score.by]))
    }
}

impl zlink::object::Actor for Pawn {}

/// A node `server` serving matches, at most one at a time, and a node `caller` serving
/// nothing, over Redis `store` and one in-memory Relocation Store; returned once the caller
/// sees the server ready for matches.
pub async fn full_after_one_match(
    store: &Arc<dyn zlink::store::LocationStore>,
    server: &str,
    caller: &str,
) -> (Runtime, Runtime) {
    let roots: Arc<dyn RelocationStore> = Arc::new(MemoryRelocationStore::new());
    let gate = Arc::new(Semaphore::new(PERMITS as usize));
    let one_match = Match::spot_type(move |_| Match {
        log: Vec::new(),
        gate: gate.clone(),
    })
    .expect("a valid Spot type")
    .max_spots(1);
    let server = start(
        discovered_node(server, store, quick_lease())
            .relocation_store(roots.clone())
            .spot_type(one_match),
    )
    .await;
    let caller = start(discovered_node(caller, store, quick_lease()).relocation_store(roots)).await;
    let rid = server.rid().to_string();
    wait_until(WAIT, "the caller sees the match server", || async {
        caller.spots().ready_nodes("match").unwrap_or_default() == [rid.clone()]
    })
    .await;
    (server, caller)
}
