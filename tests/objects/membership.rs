//! Actor membership on one node, over real TCP on 127.0.0.1 and a real `redis-server`: an
//! Actor joins a User Spot and leaves it again with the callbacks in their order, a
//! declined or impossible Join keeps it where it was, a Spot with members does not close,
//! and SpotWide and PerActor Spots run their members one gate or one lane each.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{
    is_entry_spot_id, Actor, ActorContext, ActorRef, EntryHooks, Execution, JoinDecision,
    JoinOutcome, Spot, SpotContext,
};
use zlink::{Bytes, ErrorKind, Handle, Runtime};
use zlink_testkit::RedisServer;
use zlink_tests::*;

type Log = Arc<Mutex<Vec<String>>>;

/// One message handled, in the order handled on every node: (target, sender, sequence
/// number, the node that ran it).
type Handled = Arc<Mutex<Vec<(String, String, u64, String)>>>;

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
fn record(handled: &Handled, target: &str, sender: &str, seq: u64, rt: &Handle) -> Stamped {
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
    log: Log,
    handled: Handled,
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
    log: Log,
    handled: Handled,
    /// How many `meet` handlers run now, across the node's players.
    inside: Arc<std::sync::atomic::AtomicUsize>,
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
    log: Log,
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
    log: Log,
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
struct EntryLog(Log);

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

async fn node_with(
    redis: &RedisServer,
    execution: Execution,
    log: &Log,
) -> (Runtime, Arc<dyn zlink::store::LocationStore>) {
    node_with_entry_log(redis, execution, log, &Log::default()).await
}

async fn node_with_entry_log(
    redis: &RedisServer,
    execution: Execution,
    log: &Log,
    entry_log: &Log,
) -> (Runtime, Arc<dyn zlink::store::LocationStore>) {
    node_as("a", 100, redis, execution, log, entry_log).await
}

/// A node with rooms and players, running at most `max_players` players (0: no limit).
async fn node_with_players(
    rid: &str,
    redis: &RedisServer,
    execution: Execution,
    log: &Log,
    max_players: u32,
) -> Runtime {
    node_recording(rid, redis, execution, log, max_players, &Handled::default()).await
}

/// [`node_with_players`], its rooms and players recording what they handle in `handled`.
async fn node_recording(
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

async fn node_as(
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
async fn logged(log: &Log, line: &str) {
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

async fn spot_of(rt: &Runtime, actor: &str) -> Option<String> {
    PlayerClient::new(rt, actor)
        .where_am_i(&Where)
        .await
        .unwrap()
        .0
}

#[tokio::test]
async fn an_actor_joins_a_user_spot_on_its_node_and_leaves_it_with_the_callbacks_in_order() {
    let redis = RedisServer::start().expect("redis-server");
    let (log, entry_log) = (Log::default(), Log::default());
    let (a, _) = node_with_entry_log(&redis, Execution::SpotWide, &log, &entry_log).await;
    a.spots().get_or_create("r", "room", "").await.unwrap();
    a.actors().create("p", "player").await.unwrap();
    let entry = spot_of(&a, "p").await.unwrap();
    assert!(is_entry_spot_id(&entry));
    let p = PlayerClient::new(&a, "p");
    p.enter(&Enter {
        spot: "r".into(),
        request: "hi".into(),
    })
    .await
    .unwrap();
    // The next message runs after the Join: the Actor is in the room.
    assert_eq!(spot_of(&a, "p").await.as_deref(), Some("r"));
    p.exit(&Exit).await.unwrap();
    assert_eq!(spot_of(&a, "p").await, Some(entry));
    logged(&log, "left p").await;
    assert_eq!(
        *log.lock().unwrap(),
        [
            "join p",
            "joined p",
            "p accepted r welcome",
            "p asked r: InvalidOperation",
            "p accepted entry ",
            "left p"
        ]
    );
    // The Entry Spot saw the Actor created in it, leave, and come back.
    logged(&entry_log, "joined p").await;
    assert_eq!(
        *entry_log.lock().unwrap(),
        ["created p", "left p", "joined p"]
    );
    stop([a]).await;
}

#[tokio::test]
async fn a_declined_or_impossible_join_keeps_the_actor_where_it_was() {
    let redis = RedisServer::start().expect("redis-server");
    let log = Log::default();
    let (a, store) = node_with(&redis, Execution::SpotWide, &log).await;
    a.spots().get_or_create("r", "room", "").await.unwrap();
    a.spots().get_or_create("h", "hall", "").await.unwrap();
    a.actors().create("p", "player").await.unwrap();
    let entry = spot_of(&a, "p").await;
    let p = PlayerClient::new(&a, "p");
    let enter = |spot: &str, request: &str| Enter {
        spot: spot.into(),
        request: request.into(),
    };
    p.enter(enter("r", "no")).await.unwrap();
    logged(&log, "p rejected full").await;
    p.enter(enter("nowhere", "")).await.unwrap();
    logged(&log, "p failed NotFound").await;
    p.enter(enter("h", "")).await.unwrap();
    logged(&log, "p failed InvalidOperation").await;
    // A room on a node that runs no players: no compatible node.
    let b = start(
        discovered_node("b", &store, quick_lease()).spot_type(
            Room::spot_type(|_| Room {
                log: Log::default(),
                handled: Handled::default(),
            })
            .unwrap(),
        ),
    )
    .await;
    b.spots().get_or_create("far", "room", "").await.unwrap();
    let far = b.spots().find("far").await.unwrap().unwrap();
    assert_eq!(far.rid, "b");
    p.enter(enter("far", "")).await.unwrap();
    logged(&log, "p failed Unavailable").await;
    assert_eq!(spot_of(&a, "p").await, entry, "still in its Entry Spot");
    stop([a, b]).await;
}

#[tokio::test]
async fn a_spot_with_member_actors_closes_as_false_and_keeps_its_authority() {
    let redis = RedisServer::start().expect("redis-server");
    let log = Log::default();
    let (a, _) = node_with(&redis, Execution::SpotWide, &log).await;
    a.spots().get_or_create("r", "room", "").await.unwrap();
    let room = a.spots().find("r").await.unwrap().unwrap();
    let player = a.actors().create("p", "player").await.unwrap();
    let p = PlayerClient::new(&a, "p");
    p.enter(&Enter {
        spot: "r".into(),
        request: String::new(),
    })
    .await
    .unwrap();
    assert_eq!(spot_of(&a, "p").await.as_deref(), Some("r"));
    assert!(!a.spots().close(&room).await.unwrap(), "a member is in it");
    assert_eq!(a.spots().find("r").await.unwrap(), Some(room.clone()));
    let in_room = a.actors().destroy(&player).await.unwrap_err();
    assert!(in_room.is(ErrorKind::InvalidOperation), "{in_room}");
    p.exit(&Exit).await.unwrap();
    logged(&log, "left p").await;
    assert!(a.actors().destroy(&player).await.unwrap());
    assert!(a.spots().close(&room).await.unwrap(), "empty now");
    stop([a]).await;
}

#[tokio::test]
async fn spot_wide_members_share_one_gate_and_per_actor_members_run_at_the_same_time() {
    for (execution, together) in [(Execution::SpotWide, false), (Execution::PerActor, true)] {
        let redis = RedisServer::start().expect("redis-server");
        let log = Log::default();
        let (a, _) = node_with(&redis, execution, &log).await;
        a.spots().get_or_create("r", "room", "").await.unwrap();
        for id in ["p1", "p2"] {
            a.actors().create(id, "player").await.unwrap();
            PlayerClient::new(&a, id)
                .enter(&Enter {
                    spot: "r".into(),
                    request: String::new(),
                })
                .await
                .unwrap();
            assert_eq!(spot_of(&a, id).await.as_deref(), Some("r"));
        }
        let (one, two) = (PlayerClient::new(&a, "p1"), PlayerClient::new(&a, "p2"));
        let (m1, m2) = tokio::join!(one.meet(&Meet), two.meet(&Meet));
        let met = (m1.unwrap().0, m2.unwrap().0);
        assert_eq!(met, (together, together), "{execution:?}");
        stop([a]).await;
    }
}

#[tokio::test]
async fn a_request_to_an_object_behind_the_callers_own_gate_is_invalid_operation() {
    let redis = RedisServer::start().expect("redis-server");
    let log = Log::default();
    let (a, _) = node_with(&redis, Execution::SpotWide, &log).await;
    a.spots().get_or_create("r", "room", "").await.unwrap();
    a.spots().get_or_create("r2", "room", "").await.unwrap();
    a.actors().create("p", "player").await.unwrap();
    let p = PlayerClient::new(&a, "p");
    // From the Entry Spot, asking a room is fine.
    assert_eq!(
        p.ask_room(AskRoom("r".into())).await.unwrap().0.as_deref(),
        Some("r")
    );
    p.enter(&Enter {
        spot: "r".into(),
        request: String::new(),
    })
    .await
    .unwrap();
    assert_eq!(spot_of(&a, "p").await.as_deref(), Some("r"));
    // Inside r's gate, a request to r would wait for itself; another room is fine.
    let own = p.ask_room(AskRoom("r".into())).await.unwrap_err();
    assert!(own.is(ErrorKind::InvalidOperation), "{own}");
    assert_eq!(
        p.ask_room(AskRoom("r2".into())).await.unwrap().0.as_deref(),
        Some("r2")
    );
    stop([a]).await;
}

#[tokio::test]
async fn a_join_and_a_close_of_one_spot_never_both_succeed() {
    let redis = RedisServer::start().expect("redis-server");
    let log = Log::default();
    let (a, _) = node_with(&redis, Execution::SpotWide, &log).await;
    a.spots().get_or_create("r", "room", "").await.unwrap();
    let room = a.spots().find("r").await.unwrap().unwrap();
    a.actors().create("p", "player").await.unwrap();
    let entry = spot_of(&a, "p").await;
    // The close is under way (its last turn is slow) when the Join is registered.
    let closing = tokio::spawn({
        let (a, room) = (a.clone(), room.clone());
        async move { a.spots().close(&room).await }
    });
    zlink_testkit::wait_until(WAIT, "the close began", || async {
        a.spots().find("r").await.unwrap().is_none()
    })
    .await;
    PlayerClient::new(&a, "p")
        .enter(&Enter {
            spot: "r".into(),
            request: String::new(),
        })
        .await
        .unwrap();
    assert!(closing.await.unwrap().unwrap(), "the close went through");
    logged(&log, "p failed Unavailable").await;
    assert_eq!(
        spot_of(&a, "p").await,
        entry,
        "the Actor stayed in its Entry Spot"
    );
    stop([a]).await;
}

#[tokio::test]
async fn a_join_to_a_spot_on_another_node_moves_the_actor_with_the_callbacks_in_order() {
    let redis = RedisServer::start().expect("redis-server");
    let (log, entry_log) = (Log::default(), Log::default());
    // b alone places the room on itself; a, started next, takes the Actor.
    let (b, _) = node_as("b", 100, &redis, Execution::SpotWide, &log, &Log::default()).await;
    b.spots().get_or_create("remote", "room", "").await.unwrap();
    assert_eq!(b.spots().find("remote").await.unwrap().unwrap().rid, "b");
    let (a, _) = node_as("a", 100, &redis, Execution::SpotWide, &log, &entry_log).await;
    zlink_testkit::wait_until(WAIT, "a and b see each other's Entry Spots", || async {
        [&a, &b].iter().all(|rt| {
            rt.discovery()
                .status()
                .is_some_and(|s| s.members.iter().any(|m| m.entry_spot.is_some()))
        })
    })
    .await;
    let created = loop {
        // Placement picks a or b; the test wants an Actor on a.
        let made = a.actors().create("p", "player").await.unwrap();
        if made.rid == "a" {
            break made;
        }
        a.actors().destroy(&made).await.unwrap();
        entry_log.lock().unwrap().clear();
    };
    let p = PlayerClient::new(&a, "p");
    p.enter(&Enter {
        spot: "remote".into(),
        request: "hi".into(),
    })
    .await
    .unwrap();
    // The next message runs after the Join: on b, in the room, same incarnation.
    assert_eq!(spot_of(&a, "p").await.as_deref(), Some("remote"));
    let moved = a.actors().find("p").await.unwrap().unwrap();
    assert_eq!(
        (moved.rid.as_str(), moved.generation),
        ("b", created.generation)
    );
    logged(&log, "p asked remote: InvalidOperation").await;
    assert_eq!(
        *log.lock().unwrap(),
        [
            "join p",
            "joined p",
            "p accepted remote welcome",
            "p asked remote: InvalidOperation"
        ],
        "admitted on b, joined there, then the completion on b, behind the room's gate"
    );
    logged(&entry_log, "left p").await;
    assert_eq!(*entry_log.lock().unwrap(), ["created p", "left p"]);
    // Declined by a Spot on another node: the Actor stays, and hears it where it is.
    let q = loop {
        let made = a.actors().create("q", "player").await.unwrap();
        if made.rid == "a" {
            break made;
        }
        a.actors().destroy(&made).await.unwrap();
    };
    PlayerClient::new(&a, "q")
        .enter(&Enter {
            spot: "remote".into(),
            request: "no".into(),
        })
        .await
        .unwrap();
    logged(&log, "q rejected full").await;
    assert_eq!(a.actors().find("q").await.unwrap(), Some(q));
    assert_eq!(
        PlayerClient::new(&a, "q")
            .where_am_i(&Where)
            .await
            .unwrap()
            .0,
        spot_of(&a, "q").await
    );
    stop([a, b]).await;
}

/// A node serving daises and pinned Actors, logging into `log`.
async fn pinned_node(rid: &str, redis: &RedisServer, log: &Log) -> Runtime {
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

#[tokio::test]
async fn a_cross_node_join_of_an_actor_that_may_not_move_fails_rejected_and_keeps_it_home() {
    let redis = RedisServer::start().expect("redis-server");
    let log = Log::default();
    // b alone places the dais on itself; both nodes serve daises and pinned Actors.
    let b = pinned_node("b", &redis, &log).await;
    b.spots().get_or_create("far", "dais", "").await.unwrap();
    assert_eq!(b.spots().find("far").await.unwrap().unwrap().rid, "b");
    let a = pinned_node("a", &redis, &log).await;
    zlink_testkit::wait_until(WAIT, "a and b see each other's Entry Spots", || async {
        [&a, &b].iter().all(|rt| {
            rt.discovery()
                .status()
                .is_some_and(|s| s.members.iter().any(|m| m.entry_spot.is_some()))
        })
    })
    .await;
    let created = loop {
        // Placement picks a or b; the test wants the Actor on a.
        let made = a.actors().create("pin", "pinned").await.unwrap();
        if made.rid == "a" {
            break made;
        }
        a.actors().destroy(&made).await.unwrap();
    };
    let pin = PinnedClient::new(&a, "pin");
    let entry = pin.where_am_i(&Where).await.unwrap().0;
    assert!(entry.as_deref().is_some_and(is_entry_spot_id));
    pin.enter(&Enter {
        spot: "far".into(),
        request: "hi".into(),
    })
    .await
    .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    let outcome = loop {
        let found = log
            .lock()
            .unwrap()
            .iter()
            .find(|l| l.starts_with("pin "))
            .cloned();
        if let Some(line) = found {
            break line;
        }
        assert!(tokio::time::Instant::now() < deadline, "no Join outcome");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert!(
        outcome.starts_with("pin failed Rejected:") && outcome.contains("relocation = disable"),
        "{outcome}"
    );
    // Refused before anything: the dais on b was never asked, nothing arrived on b, and
    // the Actor runs on at a, same incarnation, in its Entry Spot.
    assert_eq!(*log.lock().unwrap(), [outcome]);
    assert_eq!(b.status().actors_owned, 0);
    assert_eq!(a.actors().find("pin").await.unwrap(), Some(created));
    assert_eq!(pin.where_am_i(&Where).await.unwrap().0, entry);
    assert_eq!(pin.name(&Name).await.unwrap().0.as_deref(), Some("a"));
    assert_eq!(
        PinnedClient::new(&b, "pin")
            .name(&Name)
            .await
            .unwrap()
            .0
            .as_deref(),
        Some("a"),
        "answered by a, from b too"
    );
    stop([a, b]).await;
}

#[tokio::test]
async fn a_per_actor_spot_moves_its_shell_then_each_member_and_to_spot_and_to_actor_follow_their_own_owners(
) {
    let redis = RedisServer::start().expect("redis-server");
    let log = Log::default();
    // a alone: the room and its players start there.
    let a = node_with_players("a", &redis, Execution::PerActor, &log, 0).await;
    a.spots().get_or_create("pa", "room", "").await.unwrap();
    for player in ["m1", "m2"] {
        a.actors().create(player, "player").await.unwrap();
        PlayerClient::new(&a, player)
            .enter(&Enter {
                spot: "pa".into(),
                request: String::new(),
            })
            .await
            .unwrap();
        assert_eq!(spot_of(&a, player).await.as_deref(), Some("pa"));
    }
    // b takes one player only: the second member cannot follow.
    let b = node_with_players("b", &redis, Execution::PerActor, &Log::default(), 1).await;
    zlink_testkit::wait_until(
        WAIT,
        "a sees b's Entry Spot and is connected to b",
        || async {
            a.discovery().status().is_some_and(|s| {
                s.members
                    .iter()
                    .any(|m| m.rid == "b" && m.entry_spot.is_some())
            }) && peer_rids(&a).iter().any(|p| p == "b")
        },
    )
    .await;
    log.lock().unwrap().clear();
    let moved = a.spots().relocate("pa", Some("b")).await.unwrap();
    assert_eq!(moved.rid, "b");
    // ToSpot follows the Spot's authority; ToActor follows each member's own owner.
    let owners: Vec<String> = owners_of(&a, &["m1", "m2"]).await;
    assert_eq!(
        owners,
        ["b", "a"],
        "m1 moved with its Spot; m2 was refused and stays"
    );
    assert_eq!(
        RoomClient::new(&a, "pa")
            .name(&Name)
            .await
            .unwrap()
            .0
            .as_deref(),
        Some("pa")
    );
    for player in ["m1", "m2"] {
        assert_eq!(
            PlayerClient::new(&a, player)
                .where_am_i(&Where)
                .await
                .unwrap()
                .0
                .as_deref(),
            Some("pa"),
            "{player} is still a member, wherever it runs"
        );
    }
    assert!(
        log.lock().unwrap().is_empty(),
        "a host move calls no membership callback: {:?}",
        log.lock().unwrap()
    );
    stop([a, b]).await;
}

/// Where a sender's sequence goes: to a Spot (ToSpot) or to an Actor (ToActor).
#[derive(Clone, Copy)]
enum To {
    Spot,
    Actor,
}

/// Sends `sender`'s sequence 0, 1, … to `target` from `rt` until `stop`: one-ways, every
/// third a request, and the last one a request (its answer means everything before it
/// ran). Returns how many it sent and the node of each answer, in order.
async fn send_sequence(
    rt: Runtime,
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
fn handled_since(handled: &Handled, from: usize, target: &str) -> usize {
    let handled = handled.lock().unwrap();
    handled[from.min(handled.len())..]
        .iter()
        .filter(|h| h.0 == target)
        .count()
}

/// `nodes` is a run of `first` then a run of `then`, each at least one long.
fn switches_once(nodes: &[String], first: &str, then: &str) -> bool {
    let switch = nodes.iter().position(|n| n != first).unwrap_or(nodes.len());
    switch > 0 && switch < nodes.len() && nodes[switch..].iter().all(|n| n == then)
}

#[tokio::test]
async fn a_per_actor_spot_member_move_under_traffic_keeps_to_spot_and_to_actor_queues_apart() {
    let redis = RedisServer::start().expect("redis-server");
    let (log, handled) = (Log::default(), Handled::default());
    // a alone: the room and its players start there.
    let a = node_recording("a", &redis, Execution::PerActor, &log, 0, &handled).await;
    a.spots().get_or_create("pt", "room", "").await.unwrap();
    for player in ["t1", "t2"] {
        a.actors().create(player, "player").await.unwrap();
        PlayerClient::new(&a, player)
            .enter(&Enter {
                spot: "pt".into(),
                request: String::new(),
            })
            .await
            .unwrap();
        assert_eq!(spot_of(&a, player).await.as_deref(), Some("pt"));
    }
    // b takes one player only: t1 follows its Spot there, t2 cannot and stays on a.
    let b = node_recording(
        "b",
        &redis,
        Execution::PerActor,
        &Log::default(),
        1,
        &handled,
    )
    .await;
    let store = redis_store(&redis);
    let client = start(discovered_node("client", &store, quick_lease())).await;
    zlink_testkit::wait_until(WAIT, "a and the client see b's Entry Spot", || async {
        [&a, &client].iter().all(|rt| {
            rt.discovery().status().is_some_and(|s| {
                s.members
                    .iter()
                    .any(|m| m.rid == "b" && m.entry_spot.is_some())
            }) && peer_rids(rt).iter().any(|p| p == "b")
        })
    })
    .await;
    log.lock().unwrap().clear();
    // Senders keep going to the Spot (from the client and from a) and to each Actor.
    let stop_flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let plan = [
        (&client, To::Spot, "pt", "client-pt"),
        (&a, To::Spot, "pt", "a-pt"),
        (&client, To::Actor, "t1", "client-t1"),
        (&client, To::Actor, "t2", "client-t2"),
    ];
    let senders: Vec<_> = plan
        .iter()
        .map(|(rt, to, target, sender)| {
            let run = send_sequence((*rt).clone(), *to, target, sender, stop_flag.clone());
            (*target, *sender, tokio::spawn(run))
        })
        .collect();
    zlink_testkit::wait_until(WAIT, "every target handles traffic", || async {
        ["pt", "t1", "t2"]
            .iter()
            .all(|t| handled_since(&handled, 0, t) >= 30)
    })
    .await;
    // t1 is in a long turn when the Spot moves: the shell moves first and serves on b
    // while t1's own queue still waits on a; then t1 moves, with its queue.
    let pausing = tokio::spawn({
        let client = client.clone();
        async move { PlayerClient::new(&client, "t1").pause(Pause(800)).await }
    });
    zlink_testkit::wait_until(WAIT, "t1 is in its long turn", || async {
        handled.lock().unwrap().iter().any(|h| h.1 == "pause")
    })
    .await;
    let moved = a.spots().relocate("pt", Some("b")).await.unwrap();
    assert_eq!(moved.rid, "b");
    assert_eq!(
        pausing.await.unwrap().unwrap().0,
        "a",
        "the long turn ended on a"
    );
    assert_eq!(owners_of(&a, &["t1", "t2"]).await, ["b", "a"]);
    let at_move = handled.lock().unwrap().len();
    zlink_testkit::wait_until(
        WAIT,
        "every target handles traffic after the move",
        || async {
            ["pt", "t1", "t2"]
                .iter()
                .all(|t| handled_since(&handled, at_move, t) >= 30)
        },
    )
    .await;
    stop_flag.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut answers = std::collections::HashMap::new();
    for (target, sender, task) in senders {
        let (sent, nodes) = task
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("{sender}: a call to {target} failed: {e}"));
        // Exactly once and in order, per sender and target.
        let seen: Vec<u64> = handled
            .lock()
            .unwrap()
            .iter()
            .filter(|h| h.0 == target && h.1 == sender)
            .map(|h| h.2)
            .collect();
        assert_eq!(
            seen,
            (0..sent).collect::<Vec<_>>(),
            "{sender} to {target}: every message handled once, in the order sent"
        );
        let on_b = nodes.iter().filter(|n| *n == "b").count();
        println!(
            "{sender} to {target}: {sent} sent, {} answered ({on_b} by b)",
            nodes.len()
        );
        answers.insert(sender, nodes);
    }
    // ToSpot follows the Spot's authority: a until the shell moved, b from then on.
    let spot_owner = a.spots().find("pt").await.unwrap().unwrap().rid;
    assert_eq!(spot_owner, "b");
    for sender in ["client-pt", "a-pt"] {
        assert!(
            switches_once(&answers[sender], "a", "b"),
            "{sender}: answered by a, then by the Spot's new owner: {:?}",
            answers[sender]
        );
    }
    // ToActor follows each member's own owner: t1 switched with its own move, t2 stayed.
    assert!(
        switches_once(&answers["client-t1"], "a", "b"),
        "{:?}",
        answers["client-t1"]
    );
    assert!(answers["client-t2"].iter().all(|n| n == "a"));
    // The two queues switched apart: the Spot already ran on b while t1's queue waited
    // on a behind the long turn.
    let order = handled.lock().unwrap().clone();
    let first_on_b = |target: &str| {
        order
            .iter()
            .position(|h| h.0 == target && h.3 == "b")
            .unwrap()
    };
    assert!(
        first_on_b("pt") < first_on_b("t1"),
        "ToSpot switched to b before ToActor of t1"
    );
    assert!(
        order[first_on_b("t1")..]
            .iter()
            .all(|h| h.0 != "t1" || h.3 == "b"),
        "nothing of t1 ran on a after it ran on b"
    );
    assert!(
        log.lock().unwrap().is_empty(),
        "a host move calls no membership callback: {:?}",
        log.lock().unwrap()
    );
    stop([a, b, client]).await;
}

async fn owners_of(rt: &Runtime, actors: &[&str]) -> Vec<String> {
    let mut owners = Vec::new();
    for actor in actors {
        owners.push(rt.actors().find(actor).await.unwrap().unwrap().rid);
    }
    owners
}
