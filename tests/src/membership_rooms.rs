//! The rooms, halls and players the membership and conformance tests share: User Spots
//! whose Actors join and leave them, SpotWide and PerActor, and the nodes that serve them.

use crate::*;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zlink::object::{
    is_entry_spot_id, Actor, ActorContext, ActorRef, EntryHooks, Execution, JoinDecision,
    JoinOutcome, Spot, SpotContext,
};
use zlink::{Bytes, ErrorKind, Handle, Runtime};
use zlink_testkit::RedisServer;

pub type Log = Arc<Mutex<Vec<String>>>;

/// One message handled, in the order handled on every node: (target, sender, sequence
/// number, the node that ran it).
pub type Handled = Arc<Mutex<Vec<(String, String, u64, String)>>>;

/// One-way: number `seq` of `sender`'s sequence.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Mark {
    pub sender: String,
    pub seq: u64,
}

/// Request: number `seq` of `sender`'s sequence; the reply names the node that ran it.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Stamped)]
pub struct Stamp {
    pub sender: String,
    pub seq: u64,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Stamped(pub String);

/// Holds the Actor's turn for this many milliseconds.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Stamped)]
pub struct Pause(pub u64);

/// Records one handled message of `target` on the node of `rt`, and answers that node.
pub fn record(handled: &Handled, target: &str, sender: &str, seq: u64, rt: &Handle) -> Stamped {
    let node = rt.rid().to_string();
    handled
        .lock()
        .unwrap()
        .push((target.to_string(), sender.to_string(), seq, node.clone()));
    Stamped(node)
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Enter {
    pub spot: String,
    pub request: String,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Exit;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Here)]
pub struct Where;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Here(pub Option<String>);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Here)]
pub struct AskRoom(pub String);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Met)]
pub struct Meet;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Met(pub bool);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Here)]
pub struct Name;

pub struct Room {
    pub log: Log,
    pub handled: Handled,
}

#[zlink::spot(type = "room", relocation = recreate, actors = Player)]
impl Room {
    #[handler]
    async fn name(&mut self, _name: Name, ctx: &SpotContext) -> zlink::Result<Here> {
        Ok(Here(Some(ctx.id().to_string())))
    }

    #[handler]
    async fn mark(&mut self, mark: Mark, ctx: &SpotContext) -> zlink::Result<()> {
        record(
            &self.handled,
            ctx.id().as_str(),
            &mark.sender,
            mark.seq,
            ctx.handle(),
        );
        Ok(())
    }

    #[handler]
    async fn stamp(&mut self, stamp: Stamp, ctx: &SpotContext) -> zlink::Result<Stamped> {
        let rt = ctx.handle();
        Ok(record(
            &self.handled,
            ctx.id().as_str(),
            &stamp.sender,
            stamp.seq,
            rt,
        ))
    }

    /// Holds the room's turn (its moves wait for it), logging `pausing ID` first.
    #[handler]
    async fn pause(&mut self, pause: Pause, ctx: &SpotContext) -> zlink::Result<Stamped> {
        self.log
            .lock()
            .unwrap()
            .push(format!("pausing {}", ctx.id()));
        tokio::time::sleep(Duration::from_millis(pause.0)).await;
        Ok(Stamped(ctx.handle().rid().to_string()))
    }

    #[on_actor_join]
    async fn admit(
        &mut self,
        actor: &ActorRef,
        request: Bytes,
        _ctx: &SpotContext,
    ) -> JoinDecision {
        self.log.lock().unwrap().push(format!("join {}", actor.id));
        if request.as_ref() == b"no" {
            JoinDecision::Reject(Bytes::from_static(b"full"))
        } else {
            JoinDecision::Accept(Bytes::from_static(b"welcome"))
        }
    }

    #[on_joined_actor]
    async fn joined(&mut self, actor: &ActorRef, _ctx: &SpotContext) {
        self.log
            .lock()
            .unwrap()
            .push(format!("joined {}", actor.id));
    }

    #[on_leave_actor]
    async fn left(&mut self, actor: &ActorRef, _ctx: &SpotContext) {
        self.log.lock().unwrap().push(format!("left {}", actor.id));
    }
}

#[zlink::async_trait]
impl Spot for Room {
    async fn on_closing(&mut self, _ctx: &SpotContext, _reason: zlink::object::ClosingReason) {
        // A slow last turn: Joins arriving meanwhile must not land.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A Spot type that takes no Actors.
pub struct Hall;

#[zlink::spot(type = "hall", relocation = disable)]
impl Hall {
    #[handler]
    async fn name(&mut self, _name: Name, ctx: &SpotContext) -> zlink::Result<Here> {
        Ok(Here(Some(ctx.id().to_string())))
    }
}

impl Spot for Hall {}

pub struct Player {
    pub log: Log,
    pub handled: Handled,
    /// How many `meet` handlers run now, across the node's players.
    pub inside: Arc<std::sync::atomic::AtomicUsize>,
}

#[zlink::actor(type = "player", relocation = recreate)]
impl Player {
    #[handler]
    async fn enter(&mut self, enter: Enter, ctx: &ActorContext) -> zlink::Result<()> {
        ctx.join_spot(&enter.spot, enter.request.into_bytes())?;
        let twice = ctx.join_spot(&enter.spot, Bytes::new()).unwrap_err();
        assert!(twice.is(ErrorKind::InvalidOperation), "{twice}");
        Ok(())
    }

    #[handler]
    async fn exit(&mut self, _exit: Exit, ctx: &ActorContext) -> zlink::Result<()> {
        ctx.leave_spot()
    }

    #[handler]
    async fn mark(&mut self, mark: Mark, ctx: &ActorContext) -> zlink::Result<()> {
        record(
            &self.handled,
            ctx.id().as_str(),
            &mark.sender,
            mark.seq,
            ctx.handle(),
        );
        Ok(())
    }

    #[handler]
    async fn stamp(&mut self, stamp: Stamp, ctx: &ActorContext) -> zlink::Result<Stamped> {
        let rt = ctx.handle();
        Ok(record(
            &self.handled,
            ctx.id().as_str(),
            &stamp.sender,
            stamp.seq,
            rt,
        ))
    }

    /// Records its start (sender "pause"), then holds the turn.
    #[handler]
    async fn pause(&mut self, pause: Pause, ctx: &ActorContext) -> zlink::Result<Stamped> {
        let started = record(&self.handled, ctx.id().as_str(), "pause", 0, ctx.handle());
        tokio::time::sleep(Duration::from_millis(pause.0)).await;
        Ok(started)
    }

    #[handler]
    async fn where_am_i(&mut self, _where: Where, ctx: &ActorContext) -> zlink::Result<Here> {
        Ok(Here(ctx.spot().map(|s| s.to_string())))
    }

    #[handler]
    async fn ask_room(&mut self, ask: AskRoom, ctx: &ActorContext) -> zlink::Result<Here> {
        RoomClient::new(ctx.handle(), ask.0).name(&Name).await
    }

    /// Whether another player's `meet` ran at the same time as this one.
    #[handler]
    async fn meet(&mut self, _meet: Meet, _ctx: &ActorContext) -> zlink::Result<Met> {
        use std::sync::atomic::Ordering::SeqCst;
        self.inside.fetch_add(1, SeqCst);
        let mut met = false;
        for _ in 0..60 {
            if self.inside.load(SeqCst) >= 2 {
                met = true;
                // Stay long enough for the other to see this one too.
                tokio::time::sleep(Duration::from_millis(50)).await;
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.inside.fetch_sub(1, SeqCst);
        Ok(Met(met))
    }
}

#[zlink::async_trait]
impl Actor for Player {
    async fn on_join_completed(&mut self, ctx: &ActorContext, outcome: JoinOutcome) {
        let line = match outcome {
            JoinOutcome::Accepted { spot, reply } => format!(
                "{} accepted {} {}",
                ctx.id(),
                if is_entry_spot_id(spot.as_str()) {
                    "entry"
                } else {
                    spot.as_str()
                },
                String::from_utf8_lossy(&reply)
            ),
            JoinOutcome::Rejected { reply } => {
                format!("{} rejected {}", ctx.id(), String::from_utf8_lossy(&reply))
            }
            JoinOutcome::Failed(e) => format!("{} failed {:?}", ctx.id(), e.kind().unwrap()),
        };
        self.log.lock().unwrap().push(line);
        // From its completion, a member asks its new room: behind the same SpotWide gate,
        // that is refused at once rather than left to time out.
        if let Some(room) = ctx.spot().filter(|s| s.as_str().starts_with("r")) {
            let asked = RoomClient::new(ctx.handle(), room.as_str())
                .name(&Name)
                .await;
            if let Err(e) = asked {
                self.log.lock().unwrap().push(format!(
                    "{} asked {room}: {:?}",
                    ctx.id(),
                    e.kind().unwrap()
                ));
            }
        }
    }
}

/// A Spot whose members may never move.
pub struct Dais {
    pub log: Log,
}

#[zlink::spot(type = "dais", relocation = recreate, actors = Pinned)]
impl Dais {
    #[on_actor_join]
    async fn admit(
        &mut self,
        actor: &ActorRef,
        _request: Bytes,
        _ctx: &SpotContext,
    ) -> JoinDecision {
        self.log.lock().unwrap().push(format!("join {}", actor.id));
        JoinDecision::Accept(Bytes::new())
    }
}

impl Spot for Dais {}

/// An Actor declared `relocation = disable`: it joins Spots of its own node only.
pub struct Pinned {
    pub log: Log,
}

#[zlink::actor(type = "pinned", relocation = disable)]
impl Pinned {
    #[handler]
    async fn enter(&mut self, enter: Enter, ctx: &ActorContext) -> zlink::Result<()> {
        ctx.join_spot(&enter.spot, enter.request.into_bytes())
    }

    #[handler]
    async fn where_am_i(&mut self, _where: Where, ctx: &ActorContext) -> zlink::Result<Here> {
        Ok(Here(ctx.spot().map(|s| s.to_string())))
    }

    /// The node that runs it.
    #[handler]
    async fn name(&mut self, _name: Name, ctx: &ActorContext) -> zlink::Result<Here> {
        Ok(Here(Some(ctx.handle().rid().to_string())))
    }
}

#[zlink::async_trait]
impl Actor for Pinned {
    async fn on_join_completed(&mut self, ctx: &ActorContext, outcome: JoinOutcome) {
        let line = match outcome {
            JoinOutcome::Accepted { spot, .. } => format!("{} accepted {spot}", ctx.id()),
            JoinOutcome::Rejected { .. } => format!("{} rejected", ctx.id()),
            JoinOutcome::Failed(e) => format!("{} failed {:?}: {e}", ctx.id(), e.kind().unwrap()),
        };
        self.log.lock().unwrap().push(line);
    }
}

/// What the Entry Spot tells the application, in order.
pub struct EntryLog(Log);

#[zlink::async_trait]
impl EntryHooks for EntryLog {
    async fn on_create_actor(&mut self, _ctx: &SpotContext, actor: &ActorRef) {
        self.0.lock().unwrap().push(format!("created {}", actor.id));
    }

    async fn on_joined_actor(&mut self, _ctx: &SpotContext, actor: &ActorRef) {
        self.0.lock().unwrap().push(format!("joined {}", actor.id));
    }

    async fn on_leave_actor(&mut self, _ctx: &SpotContext, actor: &ActorRef) {
        self.0.lock().unwrap().push(format!("left {}", actor.id));
    }
}

pub async fn node_with(
    redis: &RedisServer,
    execution: Execution,
    log: &Log,
) -> (Runtime, Arc<dyn zlink::store::LocationStore>) {
    node_with_entry_log(redis, execution, log, &Log::default()).await
}

/// A node made by [`node_with_room`]: its redis-server (held for the test), log and store.
pub struct RoomNode {
    pub _redis: RedisServer,
    pub log: Log,
    pub a: Runtime,
    pub store: Arc<dyn zlink::store::LocationStore>,
}

/// Node `a` ([`node_with`], `execution`) on a redis-server and log of its own, room "r" made.
pub async fn node_with_room(execution: Execution) -> RoomNode {
    let redis = RedisServer::start().expect("redis-server");
    let log = Log::default();
    let (a, store) = node_with(&redis, execution, &log).await;
    a.spots().get_or_create("r", "room", "").await.unwrap();
    RoomNode {
        _redis: redis,
        log,
        a,
        store,
    }
}

pub async fn node_with_entry_log(
    redis: &RedisServer,
    execution: Execution,
    log: &Log,
    entry_log: &Log,
) -> (Runtime, Arc<dyn zlink::store::LocationStore>) {
    node_as("a", 100, redis, execution, log, entry_log).await
}

/// A node with rooms and players, running at most `max_players` players (0: no limit).
pub async fn node_with_players(
    rid: &str,
    redis: &RedisServer,
    execution: Execution,
    log: &Log,
    max_players: u32,
) -> Runtime {
    node_recording(rid, redis, execution, log, max_players, &Handled::default()).await
}

/// [`node_with_players`], its rooms and players recording what they handle in `handled`.
pub async fn node_recording(
    rid: &str,
    redis: &RedisServer,
    execution: Execution,
    log: &Log,
    max_players: u32,
    handled: &Handled,
) -> Runtime {
    let store = redis_store(redis);
    let (room_log, player_log, inside) = (log.clone(), log.clone(), Arc::default());
    let (room_handled, player_handled) = (handled.clone(), handled.clone());
    let rooms = Room::spot_type(move |_| Room {
        log: room_log.clone(),
        handled: room_handled.clone(),
    })
    .and_then(|t| t.execution(execution))
    .unwrap();
    let players = Player::actor_type(move |_| Player {
        log: player_log.clone(),
        handled: player_handled.clone(),
        inside: Arc::clone(&inside),
    })
    .unwrap()
    .max_actors(max_players);
    start(
        discovered_node(rid, &store, quick_lease())
            .spot_type(rooms)
            .actor_type(players),
    )
    .await
}

pub async fn node_as(
    rid: &str,
    placement_weight: u32,
    redis: &RedisServer,
    execution: Execution,
    log: &Log,
    entry_log: &Log,
) -> (Runtime, Arc<dyn zlink::store::LocationStore>) {
    let entry_log = entry_log.clone();
    let store = redis_store(redis);
    let (room_log, player_log, inside) = (log.clone(), log.clone(), Arc::default());
    let rooms = Room::spot_type(move |_| Room {
        log: room_log.clone(),
        handled: Handled::default(),
    })
    .and_then(|t| t.execution(execution))
    .unwrap();
    let players = Player::actor_type(move |_| Player {
        log: player_log.clone(),
        handled: Handled::default(),
        inside: Arc::clone(&inside),
    })
    .unwrap();
    let halls = Hall::spot_type(|_| Hall).unwrap();
    let rt = start(
        discovered_node(rid, &store, quick_lease())
            .placement_weight(placement_weight)
            .spot_type(rooms)
            .spot_type(halls)
            .actor_type(players)
            .entry_hooks(move || EntryLog(entry_log.clone())),
    )
    .await;
    (rt, store)
}

/// Waits until the log holds `line`.
pub async fn logged(log: &Log, line: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !log.lock().unwrap().iter().any(|l| l == line) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{line:?} not logged within {WAIT:?}: {:?}",
            log.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

pub async fn spot_of(rt: &zlink::Handle, actor: &str) -> Option<String> {
    PlayerClient::new(rt, actor)
        .where_am_i(&Where)
        .await
        .unwrap()
        .0
}

/// Player `actor` on `rt` enters Spot `spot` with Join `request`; its next message finds it there.
pub async fn enters(rt: &zlink::Handle, actor: &str, spot: &str, request: &str) {
    PlayerClient::new(rt, actor)
        .enter(&Enter {
            spot: spot.into(),
            request: request.into(),
        })
        .await
        .unwrap();
    assert_eq!(spot_of(rt, actor).await.as_deref(), Some(spot));
}

/// A node serving daises and pinned Actors, logging into `log`.
pub async fn pinned_node(rid: &str, redis: &RedisServer, log: &Log) -> Runtime {
    let store = redis_store(redis);
    let (dais_log, pinned_log) = (log.clone(), log.clone());
    start(
        discovered_node(rid, &store, quick_lease())
            .spot_type(
                Dais::spot_type(move |_| Dais {
                    log: dais_log.clone(),
                })
                .unwrap(),
            )
            .actor_type(
                Pinned::actor_type(move |_| Pinned {
                    log: pinned_log.clone(),
                })
                .unwrap(),
            ),
    )
    .await
}

/// Where a sender's sequence goes: to a Spot (ToSpot) or to an Actor (ToActor).
#[derive(Clone, Copy)]
pub enum To {
    Spot,
    Actor,
}

/// Sends `sender`'s sequence 0, 1, … to `target` from `rt` until `stop`: one-ways, every
/// third a request, and the last one a request (its answer means everything before it
/// ran). Returns how many it sent and the node of each answer, in order.
pub async fn send_sequence(
    rt: zlink::Handle,
    to: To,
    target: &'static str,
    sender: &'static str,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> zlink::Result<(u64, Vec<String>)> {
    let mut answers = Vec::new();
    let mut seq = 0;
    loop {
        let last = stop.load(std::sync::atomic::Ordering::SeqCst);
        let sender = sender.to_string();
        if last || seq % 3 == 2 {
            let stamp = Stamp { sender, seq };
            let by = match to {
                To::Spot => RoomClient::new(&rt, target).stamp(&stamp).await?,
                To::Actor => PlayerClient::new(&rt, target).stamp(&stamp).await?,
            };
            answers.push(by.0);
        } else {
            let mark = Mark { sender, seq };
            match to {
                To::Spot => RoomClient::new(&rt, target).mark(&mark).await?,
                To::Actor => PlayerClient::new(&rt, target).mark(&mark).await?,
            }
        }
        seq += 1;
        if last {
            return Ok((seq, answers));
        }
    }
}

/// How many messages of `target` were handled since entry `from`.
pub fn handled_since(handled: &Handled, from: usize, target: &str) -> usize {
    let handled = handled.lock().unwrap();
    handled[from.min(handled.len())..]
        .iter()
        .filter(|h| h.0 == target)
        .count()
}

/// `nodes` is a run of `first` then a run of `then`, each at least one long.
pub fn switches_once(nodes: &[String], first: &str, then: &str) -> bool {
    let switch = nodes.iter().position(|n| n != first).unwrap_or(nodes.len());
    switch > 0 && switch < nodes.len() && nodes[switch..].iter().all(|n| n == then)
}

pub async fn owners_of(rt: &zlink::Handle, actors: &[&str]) -> Vec<String> {
    let mut owners = Vec::new();
    for actor in actors {
        owners.push(rt.actors().find(actor).await.unwrap().unwrap().rid);
    }
    owners
}
