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
use zlink::{Bytes, ErrorKind, Runtime};
use zlink_testkit::RedisServer;
use zlink_tests::*;

type Log = Arc<Mutex<Vec<String>>>;

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
}

#[zlink::spot(type = "room", relocation = recreate, actors = Player)]
impl Room {
    #[handler]
    async fn name(&mut self, _name: Name, ctx: &SpotContext) -> zlink::Result<Here> {
        Ok(Here(Some(ctx.id().to_string())))
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
    async fn where_am_i(&mut self, _where: Where, ctx: &ActorContext) -> zlink::Result<Here> {
        Ok(Here(ctx.spot().map(|s| s.to_string())))
    }

    #[handler]
    async fn ask_room(&mut self, ask: AskRoom, ctx: &ActorContext) -> zlink::Result<Here> {
        RoomClient::new(&ctx.runtime(), ask.0).name(&Name).await
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
            let asked = RoomClient::new(&ctx.runtime(), room.as_str())
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
    let store = redis_store(redis);
    let (room_log, player_log, inside) = (log.clone(), log.clone(), Arc::default());
    let rooms = Room::spot_type(move |_| Room {
        log: room_log.clone(),
    })
    .and_then(|t| t.execution(execution))
    .unwrap();
    let players = Player::actor_type(move |_| Player {
        log: player_log.clone(),
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
    })
    .and_then(|t| t.execution(execution))
    .unwrap();
    let players = Player::actor_type(move |_| Player {
        log: player_log.clone(),
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
    p.enter(&enter("r", "no")).await.unwrap();
    logged(&log, "p rejected full").await;
    p.enter(&enter("nowhere", "")).await.unwrap();
    logged(&log, "p failed NotFound").await;
    p.enter(&enter("h", "")).await.unwrap();
    logged(&log, "p failed InvalidOperation").await;
    // A room on a node that runs no players: no compatible node.
    let b = start(
        discovered_node("b", &store, quick_lease()).spot_type(
            Room::spot_type(|_| Room {
                log: Log::default(),
            })
            .unwrap(),
        ),
    )
    .await;
    b.spots().get_or_create("far", "room", "").await.unwrap();
    let far = b.spots().find("far").await.unwrap().unwrap();
    assert_eq!(far.rid, "b");
    p.enter(&enter("far", "")).await.unwrap();
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
        p.ask_room(&AskRoom("r".into())).await.unwrap().0.as_deref(),
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
    let own = p.ask_room(&AskRoom("r".into())).await.unwrap_err();
    assert!(own.is(ErrorKind::InvalidOperation), "{own}");
    assert_eq!(
        p.ask_room(&AskRoom("r2".into()))
            .await
            .unwrap()
            .0
            .as_deref(),
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
    zlink_testkit::wait_until(WAIT, "a sees b's Entry Spot", || async {
        a.discovery().status().is_some_and(|s| {
            s.members
                .iter()
                .any(|m| m.rid == "b" && m.entry_spot.is_some())
        })
    })
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

async fn owners_of(rt: &Runtime, actors: &[&str]) -> Vec<String> {
    let mut owners = Vec::new();
    for actor in actors {
        owners.push(rt.actors().find(actor).await.unwrap().unwrap().rid);
    }
    owners
}
