//! The child processes of `scale` that fill one node with idle objects and measure it:
//! RSS per idle object, the creation rate as the node fills, one-way sends over a few IDs
//! and over all of them, and what is still held once every object is closed. The same
//! measurement runs on zlink Actors, zlink Spots, kameo actors and bare tokio tasks, each
//! in a process of its own so one's memory never shows in another's.

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kameo::actor::{ActorRef as KameoRef, Spawn};
use kameo::message::{Context, Message};
use tokio::sync::mpsc;
use tokio::time::Instant;
use zlink::object::{Actor, ActorContext, ActorRef, Spot, SpotContext, SpotCreation, SpotRef};
use zlink::Runtime;

use crate::stats::{release_freed_memory, rss_kib};
use crate::BoxError;

/// The creators working at once while a node fills.
const CREATORS: usize = 8;
/// The senders of the one-way phases.
const SENDERS: usize = 8;
/// The few IDs of the narrow one-way phase.
pub const FEW_IDS: usize = 100;
/// How long each one-way phase lasts.
const SEND_PHASE: Duration = Duration::from_secs(2);
/// The mailbox bound of the baselines: what a zlink object's queue admits by default
/// (tokio's bounded channels allocate as messages come, so the bound costs nothing idle).
const BASELINE_MAILBOX: usize = 4096;

/// A one-way message an idle object counts.
#[derive(Debug, serde::Serialize, serde::Deserialize, zlink::Message)]
pub struct Bump;

/// An Actor with eight bytes of state.
#[derive(Default)]
pub struct IdleActor(u64);

#[zlink::actor(type = "scale-actor", relocation = disable)]
impl IdleActor {
    #[handler]
    async fn bump(&mut self, _b: Bump, _ctx: &ActorContext) -> zlink::Result<()> {
        self.0 += 1;
        Ok(())
    }
}

impl Actor for IdleActor {}

/// A Spot with eight bytes of state.
pub struct IdleSpot(u64);

#[zlink::spot(type = "scale-spot", relocation = disable)]
impl IdleSpot {
    #[handler]
    async fn bump(&mut self, _b: Bump, _ctx: &SpotContext) -> zlink::Result<()> {
        self.0 += 1;
        Ok(())
    }
}

impl Spot for IdleSpot {}

/// The kameo baseline: an actor with eight bytes of state.
#[derive(kameo::Actor)]
pub struct KameoIdle(u64);

impl Message<Bump> for KameoIdle {
    type Reply = ();

    async fn handle(&mut self, _b: Bump, _ctx: &mut Context<Self, Self::Reply>) {
        self.0 += 1;
    }
}

/// What filling the node with `objects` took.
struct Filled<T> {
    made: Vec<T>,
    first_tenth_per_s: f64,
    last_tenth_per_s: f64,
}

/// Creates `objects` with `create(index)`, [`CREATORS`] at a time, timing the first and
/// the last tenth.
async fn fill<T, F, Fut>(objects: usize, create: F) -> Result<Filled<T>, BoxError>
where
    T: Send + 'static,
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<T, BoxError>> + Send,
{
    let tenth = (objects / 10).max(1);
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let marks = Arc::new(Mutex::new(Vec::<(usize, Instant)>::new()));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..CREATORS {
        let (next, done, marks, create) =
            (next.clone(), done.clone(), marks.clone(), create.clone());
        workers.push(tokio::spawn(async move {
            let mut made = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= objects {
                    return Ok::<_, BoxError>(made);
                }
                made.push((index, create(index).await?));
                let count = done.fetch_add(1, Ordering::Relaxed) + 1;
                if count == tenth || count == objects - tenth {
                    if let Ok(mut marks) = marks.lock() {
                        marks.push((count, Instant::now()));
                    }
                }
            }
        }));
    }
    let mut made = Vec::with_capacity(objects);
    for worker in workers {
        made.extend(worker.await??);
    }
    let ended = Instant::now();
    made.sort_unstable_by_key(|(index, _)| *index);
    let marks = marks.lock().map(|m| m.clone()).unwrap_or_default();
    let at = |count: usize| marks.iter().find(|(c, _)| *c == count).map(|(_, t)| *t);
    let rate = |from: Instant, to: Instant| tenth as f64 / (to - from).as_secs_f64().max(1e-9);
    Ok(Filled {
        made: made.into_iter().map(|(_, made)| made).collect(),
        first_tenth_per_s: at(tenth).map_or(0.0, |t| rate(started, t)),
        last_tenth_per_s: at(objects - tenth).map_or(0.0, |t| rate(t, ended)),
    })
}

/// One-way sends per second for [`SEND_PHASE`], [`SENDERS`] at a time, to IDs taken
/// from `0..ids` in a spread order.
async fn sends_per_second<F, Fut>(ids: usize, send: F) -> Result<f64, BoxError>
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), BoxError>> + Send,
{
    // A prime stride visits the IDs in an order no cache can guess from the last one.
    const STRIDE: usize = 1_000_003;
    let next = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + SEND_PHASE;
    let started = Instant::now();
    let mut senders = Vec::new();
    for _ in 0..SENDERS {
        let (next, send) = (next.clone(), send.clone());
        senders.push(tokio::spawn(async move {
            while Instant::now() < until {
                let k = next.fetch_add(1, Ordering::Relaxed) as usize;
                send(k.wrapping_mul(STRIDE) % ids).await?;
            }
            Ok::<_, BoxError>(())
        }));
    }
    for sender in senders {
        sender.await??;
    }
    Ok(next.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
}

/// The process's memory at one moment: resident pages and live heap bytes.
#[derive(Clone, Copy)]
struct Memory {
    rss_kib: u64,
    heap: isize,
}

impl Memory {
    fn now() -> Memory {
        Memory {
            rss_kib: rss_kib(),
            heap: crate::heap::in_use(),
        }
    }

    /// Once freed pages went back to the system.
    async fn settled() -> Memory {
        tokio::time::sleep(Duration::from_millis(200)).await;
        release_freed_memory();
        Memory::now()
    }

    /// RSS and heap grown since `before`, in bytes per object.
    fn per_object_since(&self, before: &Memory, objects: usize) -> (f64, f64) {
        let per = |bytes: f64| (bytes / objects as f64 * 10.0).round() / 10.0;
        (
            per((self.rss_kib as f64 - before.rss_kib as f64) * 1024.0),
            per((self.heap - before.heap) as f64),
        )
    }
}

/// What one child measured, from start to finish.
struct Run {
    kind: &'static str,
    objects: usize,
    before: Memory,
    full: Memory,
    rates: (f64, f64),
    sends: (f64, f64),
    closed: Option<Memory>,
    refilled: Option<Memory>,
}

impl Run {
    fn figures(&self) -> serde_json::Value {
        let idle = self.full.per_object_since(&self.before, self.objects);
        let left = self
            .closed
            .map(|closed| closed.per_object_since(&self.before, self.objects));
        let refill = self
            .refilled
            .map(|refilled| refilled.per_object_since(&self.full, self.objects));
        serde_json::json!({
            "kind": self.kind,
            "objects": self.objects,
            "idle_bytes_per_object": idle.0,
            "idle_heap_bytes_per_object": idle.1,
            "creation_first_tenth_per_s": self.rates.0.round(),
            "creation_last_tenth_per_s": self.rates.1.round(),
            "sends_few_ids_per_s": self.sends.0.round(),
            "sends_all_ids_per_s": self.sends.1.round(),
            "left_bytes_per_closed_object": left.map(|left| left.0),
            "left_heap_bytes_per_closed_object": left.map(|left| left.1),
            "refill_rss_growth_bytes_per_object": refill.map(|refill| refill.0),
        })
    }
}

/// Waits until `done` holds, for at most a minute.
async fn until(mut done: impl FnMut() -> bool) -> Result<(), BoxError> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        if Instant::now() > deadline {
            return Err("the closed objects did not all end within a minute".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Runs `each(index)` for every index below `count`, [`CREATORS`] at a time.
pub async fn for_each_index<F, Fut>(count: usize, each: F) -> Result<(), BoxError>
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), BoxError>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..CREATORS {
        let (next, each) = (next.clone(), each.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= count {
                    return Ok::<_, BoxError>(());
                }
                each(index).await?;
            }
        }));
    }
    for worker in workers {
        worker.await??;
    }
    Ok(())
}

/// One contestant of the fill measurement: how its objects are made, sent to and closed.
pub trait Contestant: Clone + Send + Sync + 'static {
    /// What the maker holds of one object.
    type Made: Send + Sync + 'static;
    /// Its name in the figures.
    fn kind(&self) -> &'static str;

    /// Makes object `index`.
    fn create(&self, index: usize) -> impl Future<Output = Result<Self::Made, BoxError>> + Send;

    /// Sends one one-way message to object `index`.
    fn send(
        &self,
        made: &Arc<[Self::Made]>,
        index: usize,
    ) -> impl Future<Output = Result<(), BoxError>> + Send;

    /// Closes every object, and returns once all have ended.
    fn close_all(
        &self,
        made: Arc<[Self::Made]>,
    ) -> impl Future<Output = Result<(), BoxError>> + Send;
}

/// How much of the measurement a child runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Cycle {
    /// Fill, send, close all, fill again.
    Full,
    /// Fill and send only (the closing and refilling figures are the embedded node's).
    FillAndSend,
}

/// Fills a node with `objects` of `contestant`, sends to them, closes them all, and fills
/// it again with the same IDs (as far as `cycle` says).
pub async fn measure<C: Contestant>(
    contestant: C,
    objects: usize,
    cycle: Cycle,
) -> Result<serde_json::Value, BoxError> {
    let before = Memory::settled().await;
    let maker = contestant.clone();
    let filled = fill(objects, move |i| {
        let maker = maker.clone();
        async move { maker.create(i).await }
    })
    .await?;
    let full = Memory::now();
    let made: Arc<[C::Made]> = filled.made.into();
    let send = |ids: usize| {
        let (sender, made) = (contestant.clone(), made.clone());
        sends_per_second(ids, move |i| {
            let (sender, made) = (sender.clone(), made.clone());
            async move { sender.send(&made, i).await }
        })
    };
    let sends = (send(FEW_IDS).await?, send(objects).await?);
    if cycle == Cycle::FillAndSend {
        return Ok(Run {
            kind: contestant.kind(),
            objects,
            before,
            full,
            rates: (filled.first_tenth_per_s, filled.last_tenth_per_s),
            sends,
            closed: None,
            refilled: None,
        }
        .figures());
    }
    contestant.close_all(made).await?;
    let closed = Memory::settled().await;
    let maker = contestant.clone();
    let refilled = fill(objects, move |i| {
        let maker = maker.clone();
        async move { maker.create(i).await }
    })
    .await?;
    let refilled_memory = Memory::now();
    drop(refilled);
    Ok(Run {
        kind: contestant.kind(),
        objects,
        before,
        full,
        rates: (filled.first_tenth_per_s, filled.last_tenth_per_s),
        sends,
        closed: Some(closed),
        refilled: Some(refilled_memory),
    }
    .figures())
}

/// A node on `store` serving both kinds.
pub async fn node_on(
    store: Arc<dyn zlink::store::LocationStore>,
    objects: usize,
) -> Result<Runtime, BoxError> {
    let rt = Runtime::builder()
        .mesh_name("bench-scale")
        .listen("tcp://127.0.0.1:0")
        .location_store(store)
        // Sized for the node's objects, as the book says to size it.
        .route_cache_capacity(objects)
        .actor_type(IdleActor::actor_type(|_| IdleActor(0))?)
        .spot_type(IdleSpot::spot_type(|_| IdleSpot(0))?)
        .build()?
        .start()
        .await?;
    rt.actors().ready(IdleActor::STABLE_TYPE, 1).await?;
    rt.spots().ready(IdleSpot::STABLE_TYPE, 1).await?;
    Ok(rt)
}

/// The ID of object `index`.
pub fn object_id(index: usize) -> String {
    format!("o{index}")
}

/// zlink Actors on a node.
#[derive(Clone)]
pub struct ZlinkActors {
    pub rt: Arc<Runtime>,
    /// Its name in the figures (which store the node uses).
    pub kind: &'static str,
}

impl Contestant for ZlinkActors {
    type Made = ActorRef;

    fn kind(&self) -> &'static str {
        self.kind
    }

    async fn create(&self, index: usize) -> Result<ActorRef, BoxError> {
        Ok(self
            .rt
            .handle()
            .actors()
            .create(&object_id(index), IdleActor::STABLE_TYPE)
            .await?)
    }

    async fn send(&self, _made: &Arc<[ActorRef]>, index: usize) -> Result<(), BoxError> {
        Ok(self
            .rt
            .handle()
            .actors()
            .send(&object_id(index), &Bump)
            .await?)
    }

    async fn close_all(&self, made: Arc<[ActorRef]>) -> Result<(), BoxError> {
        let handle = self.rt.handle().clone();
        for_each_index(made.len(), move |i| {
            let (handle, made) = (handle.clone(), made.clone());
            async move { Ok(handle.actors().destroy(&made[i]).await.map(|_| ())?) }
        })
        .await?;
        until(|| self.rt.status().actors_owned == 0).await
    }
}

/// zlink Spots on a node.
#[derive(Clone)]
pub struct ZlinkSpots(pub Arc<Runtime>);

impl Contestant for ZlinkSpots {
    type Made = SpotRef;

    fn kind(&self) -> &'static str {
        "zlink_spot"
    }

    async fn create(&self, index: usize) -> Result<SpotRef, BoxError> {
        let created = self
            .0
            .spots()
            .get_or_create(
                &object_id(index),
                IdleSpot::STABLE_TYPE,
                zlink::Bytes::new(),
            )
            .await?;
        match created {
            SpotCreation::Created(spot, _) | SpotCreation::Existing(spot) => Ok(spot),
            SpotCreation::Rejected(_) => Err("on_create declined a Spot".into()),
        }
    }

    async fn send(&self, _made: &Arc<[SpotRef]>, index: usize) -> Result<(), BoxError> {
        Ok(self
            .0
            .handle()
            .spots()
            .send(&object_id(index), &Bump)
            .await?)
    }

    async fn close_all(&self, made: Arc<[SpotRef]>) -> Result<(), BoxError> {
        let handle = self.0.handle().clone();
        for_each_index(made.len(), move |i| {
            let (handle, made) = (handle.clone(), made.clone());
            async move { Ok(handle.spots().close(&made[i]).await.map(|_| ())?) }
        })
        .await?;
        until(|| self.0.status().spots_owned == 0).await
    }
}

/// kameo actors with a bounded mailbox.
#[derive(Clone)]
pub struct KameoActors;

impl Contestant for KameoActors {
    type Made = KameoRef<KameoIdle>;

    fn kind(&self) -> &'static str {
        "kameo"
    }

    async fn create(&self, _index: usize) -> Result<KameoRef<KameoIdle>, BoxError> {
        Ok(KameoIdle::spawn_with_mailbox(
            KameoIdle(0),
            kameo::mailbox::bounded(BASELINE_MAILBOX),
        ))
    }

    async fn send(&self, made: &Arc<[KameoRef<KameoIdle>]>, index: usize) -> Result<(), BoxError> {
        Ok(made[index].tell(Bump).await?)
    }

    async fn close_all(&self, made: Arc<[KameoRef<KameoIdle>]>) -> Result<(), BoxError> {
        for actor in made.iter() {
            actor.kill();
        }
        for actor in made.iter() {
            actor.wait_for_shutdown().await;
        }
        Ok(())
    }
}

/// Bare tokio tasks, each reading its own bounded mpsc channel.
#[derive(Clone, Default)]
pub struct BareTasks {
    ended: Arc<AtomicUsize>,
}

impl Contestant for BareTasks {
    type Made = mpsc::Sender<Bump>;

    fn kind(&self) -> &'static str {
        "tokio_task"
    }

    async fn create(&self, _index: usize) -> Result<mpsc::Sender<Bump>, BoxError> {
        let (sender, mut receiver) = mpsc::channel::<Bump>(BASELINE_MAILBOX);
        let ended = self.ended.clone();
        tokio::spawn(async move {
            let mut state = 0u64;
            while receiver.recv().await.is_some() {
                state += 1;
            }
            ended.fetch_add(1, Ordering::Relaxed);
            state
        });
        Ok(sender)
    }

    async fn send(&self, made: &Arc<[mpsc::Sender<Bump>]>, index: usize) -> Result<(), BoxError> {
        Ok(made[index].send(Bump).await?)
    }

    async fn close_all(&self, made: Arc<[mpsc::Sender<Bump>]>) -> Result<(), BoxError> {
        let count = made.len();
        let already = self.ended.load(Ordering::Relaxed);
        drop(made);
        until(|| self.ended.load(Ordering::Relaxed) >= already + count).await
    }
}
