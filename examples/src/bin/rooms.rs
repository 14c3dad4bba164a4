//! Chat rooms as Spots and players as Actors: three nodes in one process on 127.0.0.1 and
//! the embedded Location Store. `rooms-east` serves rooms and players, `rooms-west` serves
//! rooms, the lobby serves nothing. Rooms are opened from the lobby (placement picks a
//! server); players are created in east's Entry Spot, join a room on their node, talk,
//! and leave; everything is addressed by ID from any node. Then west stops: its rooms are
//! honestly `Unavailable`, and nothing is re-created elsewhere.
//!
//! Run: `cargo run -p zlink-examples --bin rooms`
//!
//! With `--drain rooms-east` (or `rooms-west`): players walk (requests, counted by each
//! player) from the lobby while that node moves every player it runs to the other one,
//! live; the count at the end shows no step was lost. A room moves too, with the players
//! sitting in it.
//!
//! With `--redis URL --role server [--rid NAME]` or `--redis URL --role lobby`, one node
//! per process, finding each other through Redis (`--help` shows the commands).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{
    Actor, ActorContext, ActorRef, CreateDecision, JoinDecision, JoinOutcome, RelocationState,
    Spot, SpotContext, SpotCreation,
};
use zlink::store::{
    LocationStore, RedisLocationStore, RedisOptions, RedisRelocationStore, RelocationStore,
};
use zlink::{Bytes, ErrorKind, Runtime, ShutdownOptions};
use zlink_examples::setup::{self, Security};

const USAGE: &str = "\
usage:
  rooms
      Three nodes in this process: rooms-east (rooms and players), rooms-west (rooms),
      a lobby. Rooms are placed from the lobby, players join and talk, all by ID; then
      rooms-west stops, and its rooms are honestly Unavailable.

  rooms --drain rooms-east|rooms-west
      Two room-and-player servers and a lobby: 20 players walk while the named node
      moves every player (and a room) it runs to the other, live; no step is lost.

  rooms --redis URL --role server [--rid RID]
      One room-and-player server node until Ctrl-C, found through Redis at URL.

  rooms --redis URL --role lobby [--rid RID]
      One lobby node: waits for a room server in Redis at URL, opens arena-1, creates
      its player there, joins, and exits.

example (two terminals, a redis-server on 127.0.0.1:6379):
  rooms --redis redis://127.0.0.1:6379/ --role server --rid hall-1
  rooms --redis redis://127.0.0.1:6379/ --role lobby";

/// How long a lobby waits for room servers.
const SERVER_WAIT: Duration = Duration::from_secs(10);

/// A line said in a room (one-way).
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
struct Say {
    player: String,
    text: String,
}

/// Who is in a room and what was said.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Members)]
struct Who;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
struct Members {
    host: String,
    players: Vec<String>,
    lines: Vec<String>,
}

/// One room: its players and what was said, on whichever node runs it. A room and its
/// players take one turn at a time (`SpotWide`), and move together, state and all.
struct Room {
    host: String,
    topic: String,
    players: Vec<String>,
    lines: Vec<String>,
}

/// What of a room moves with it.
#[derive(Serialize, Deserialize, zlink::Message)]
struct RoomState {
    topic: String,
    players: Vec<String>,
    lines: Vec<String>,
}

impl RelocationState for Room {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        let state = RoomState {
            topic: self.topic.clone(),
            players: self.players.clone(),
            lines: self.lines.clone(),
        };
        Ok(zlink::Message::encode(&state)?.to_vec())
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        let state: RoomState = zlink::Message::decode(state)?;
        (self.topic, self.players, self.lines) = (state.topic, state.players, state.lines);
        Ok(())
    }
}

#[zlink::spot(type = "room", relocation = preserve, actors = Player)]
impl Room {
    #[handler]
    async fn say(&mut self, say: Say, _ctx: &SpotContext) -> zlink::Result<()> {
        self.lines
            .push(format!("[{}] {}: {}", self.topic, say.player, say.text));
        Ok(())
    }

    #[handler]
    async fn who(&mut self, _who: Who, _ctx: &SpotContext) -> zlink::Result<Members> {
        Ok(Members {
            host: self.host.clone(),
            players: self.players.clone(),
            lines: self.lines.clone(),
        })
    }

    /// A room takes at most four players.
    #[on_actor_join]
    async fn admit(
        &mut self,
        _actor: &ActorRef,
        _request: Bytes,
        _ctx: &SpotContext,
    ) -> JoinDecision {
        if self.players.len() < 4 {
            JoinDecision::Accept(Bytes::from(format!("welcome to the {}", self.topic)))
        } else {
            JoinDecision::Reject(Bytes::from_static(b"the room is full"))
        }
    }

    #[on_joined_actor]
    async fn joined(&mut self, actor: &ActorRef, _ctx: &SpotContext) {
        self.players.push(actor.id.to_string());
    }

    #[on_leave_actor]
    async fn left(&mut self, actor: &ActorRef, _ctx: &SpotContext) {
        self.players.retain(|p| p != actor.id.as_str());
    }
}

#[zlink::async_trait]
impl Spot for Room {
    async fn on_create(&mut self, _ctx: &SpotContext, request: Bytes) -> CreateDecision {
        self.topic = String::from_utf8_lossy(&request).into_owned();
        CreateDecision::Accept(Bytes::new())
    }
}

/// Asks a player to join a room (one-way; the outcome arrives as `on_join_completed`).
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
struct Enter {
    room: String,
}

/// Asks a player to leave its room for its node's Entry Spot.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
struct Leave;

/// Asks a player to say something in its room.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
struct Talk {
    text: String,
}

/// A player takes one step; the reply is how many it took so far.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Steps)]
struct Step;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
struct Steps(u64);

/// Where a player is and how its last Join went.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Status)]
struct Whereabouts;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
struct Status {
    spot: Option<String>,
    last_join: String,
}

/// One player, an Actor: it belongs to one Spot at a time. Its state moves with it when
/// it moves to another node (`relocation = preserve`).
struct Player {
    last_join: String,
    steps: u64,
}

/// What of a player moves with it: the framework's own codec (CBOR) encodes it.
#[derive(Serialize, Deserialize, zlink::Message)]
struct PlayerState {
    last_join: String,
    steps: u64,
}

impl RelocationState for Player {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        let state = PlayerState {
            last_join: self.last_join.clone(),
            steps: self.steps,
        };
        Ok(zlink::Message::encode(&state)?.to_vec())
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        let state: PlayerState = zlink::Message::decode(state)?;
        self.last_join = state.last_join;
        self.steps = state.steps;
        Ok(())
    }
}

#[zlink::actor(type = "player", relocation = preserve)]
impl Player {
    #[handler]
    async fn step(&mut self, _step: Step, _ctx: &ActorContext) -> zlink::Result<Steps> {
        self.steps += 1;
        Ok(Steps(self.steps))
    }

    #[handler]
    async fn enter(&mut self, enter: Enter, ctx: &ActorContext) -> zlink::Result<()> {
        ctx.join_spot(&enter.room, Bytes::new())
    }

    #[handler]
    async fn leave(&mut self, _leave: Leave, ctx: &ActorContext) -> zlink::Result<()> {
        ctx.leave_spot()
    }

    #[handler]
    async fn talk(&mut self, talk: Talk, ctx: &ActorContext) -> zlink::Result<()> {
        let Some(room) = ctx.spot() else {
            return Ok(());
        };
        // One-way: a room's turn and its players' share one gate, so a player never
        // waits on its own room.
        RoomClient::new(ctx.handle(), room.as_str())
            .say(&Say {
                player: ctx.id().to_string(),
                text: talk.text,
            })
            .await
    }

    #[handler]
    async fn whereabouts(&mut self, _w: Whereabouts, ctx: &ActorContext) -> zlink::Result<Status> {
        Ok(Status {
            spot: ctx.spot().map(|s| s.to_string()),
            last_join: self.last_join.clone(),
        })
    }
}

#[zlink::async_trait]
impl Actor for Player {
    async fn on_join_completed(&mut self, _ctx: &ActorContext, outcome: JoinOutcome) {
        self.last_join = match outcome {
            JoinOutcome::Accepted { reply, .. } => {
                format!("accepted ({})", String::from_utf8_lossy(&reply))
            }
            JoinOutcome::Rejected { reply } => {
                format!("rejected ({})", String::from_utf8_lossy(&reply))
            }
            JoinOutcome::Failed(e) => format!(
                "failed: {:?}",
                e.kind().unwrap_or(ErrorKind::InternalFailure)
            ),
        };
    }
}

const MESH: &str = "rooms";

/// What a node serves.
#[derive(Clone, Copy, PartialEq)]
enum Serves {
    Nothing,
    Rooms,
    RoomsAndPlayers,
}

/// The stores every node of the example shares.
struct Stores {
    location: Arc<dyn LocationStore>,
    relocation: Arc<dyn RelocationStore>,
}

impl Stores {
    /// The embedded stores of one process.
    fn in_memory() -> Self {
        Stores {
            location: <dyn LocationStore>::in_memory(),
            relocation: <dyn RelocationStore>::in_memory(),
        }
    }
}

async fn start_node(
    rid: &str,
    stores: &Stores,
    serves: Serves,
    security: &Security,
) -> zlink::Result<Runtime> {
    let mut builder = Runtime::builder()
        .mesh_name(MESH)
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
        .location_store(stores.location.clone())
        .relocation_store(stores.relocation.clone());
    if serves != Serves::Nothing {
        let host = rid.to_string();
        builder = builder.spot_type(Room::spot_type(move |_| Room {
            host: host.clone(),
            topic: String::new(),
            players: Vec::new(),
            lines: Vec::new(),
        })?);
    }
    if serves == Serves::RoomsAndPlayers {
        builder = builder.actor_type(Player::actor_type(|_| Player {
            last_join: "none yet".into(),
            steps: 0,
        })?);
    }
    zlink_examples::operate::start(security, builder).await
}

/// Waits until placement on `lobby` can pick among `count` room servers (whatever their
/// RIDs, and a server itself counts), or says why not after [`SERVER_WAIT`].
async fn wait_for_servers(lobby: &Runtime, count: usize) -> zlink::Result<()> {
    match tokio::time::timeout(SERVER_WAIT, lobby.spots().ready(Room::STABLE_TYPE, count)).await {
        Ok(ready) => ready,
        Err(_) => {
            let store_down = lobby
                .discovery()
                .status()
                .is_some_and(|s| !s.store_reachable);
            let why = if store_down {
                "the Location Store is unreachable (is redis-server running at that URL?)"
                    .to_string()
            } else {
                format!(
                    "ready: {:?}; {}",
                    lobby
                        .spots()
                        .ready_nodes(Room::STABLE_TYPE)
                        .unwrap_or_default(),
                    lobby.nodes().dial_failures().join("; ")
                )
            };
            Err(zlink::Error::new(
                ErrorKind::DeadlineExceeded,
                format!(
                    "{} did not see {count} room server(s) within {} s: {why}",
                    lobby.rid(),
                    SERVER_WAIT.as_secs()
                ),
            ))
        }
    }
}

async fn open_room(lobby: &Runtime, id: &str, topic: &str) -> zlink::Result<String> {
    match lobby
        .spots()
        .get_or_create(id, Room::STABLE_TYPE, topic.to_string())
        .await?
    {
        SpotCreation::Created(room, _) | SpotCreation::Existing(room) => Ok(room.rid),
        SpotCreation::Rejected(_) => {
            Err(zlink::Error::new(ErrorKind::InvalidOperation, "declined"))
        }
    }
}

/// Asks `player` to join `room` and reports where it ended up.
async fn enter(rt: &Runtime, player: &str, room: &str) -> zlink::Result<Status> {
    let client = PlayerClient::new(rt, player);
    client.enter(&Enter { room: room.into() }).await?;
    // Its next message runs after the Join: this answer already shows the outcome.
    client.whereabouts(&Whereabouts).await
}

async fn one_process(security: &Security) -> zlink::Result<()> {
    let store = Stores::in_memory();
    let east = start_node(
        "rooms-east",
        &store,
        Serves::RoomsAndPlayers,
        &security.node(0),
    )
    .await?;
    let west = start_node("rooms-west", &store, Serves::Rooms, &security.node(1)).await?;
    let lobby = start_node("lobby", &store, Serves::Nothing, &security.node(2)).await?;
    wait_for_servers(&lobby, 2).await?;
    wait_for_servers(&west, 2).await?;

    println!("Opening rooms from the lobby (placement picks a room server):");
    // Placement is weighted at random: rooms are opened until each server runs one.
    let topics = ["arena", "tavern", "library", "garden", "forge", "harbor"];
    let mut rooms: Vec<(String, String)> = Vec::new();
    for i in 0..24 {
        let both = ["rooms-east", "rooms-west"]
            .iter()
            .all(|server| rooms.iter().any(|(_, host)| host == server));
        if i >= 4 && both {
            break;
        }
        let topic = topics[i % topics.len()];
        let id = format!("{topic}-{}", i / topics.len() + 1);
        let host = open_room(&lobby, &id, topic).await?;
        println!("  {id:<9} runs on {host}");
        rooms.push((id, host));
    }
    let room_on = |server: &str| {
        rooms
            .iter()
            .find(|(_, host)| host == server)
            .map(|(id, _)| id.as_str())
    };
    let (east_room, west_room) = (room_on("rooms-east"), room_on("rooms-west"));

    println!();
    println!("Players are Actors, created from the lobby in rooms-east's Entry Spot:");
    for player in ["ana", "bo"] {
        let created = lobby.actors().create(player, Player::STABLE_TYPE).await?;
        println!("  {player:<4} created on {}", created.rid);
    }
    if let Some(room) = east_room {
        for player in ["ana", "bo"] {
            let status = enter(&lobby, player, room).await?;
            println!(
                "  {player:<4} joins {room} (same node): {}",
                status.last_join
            );
        }
        PlayerClient::new(&west, "ana")
            .talk(&Talk {
                text: "hello".into(),
            })
            .await?;
        PlayerClient::new(&lobby, "bo")
            .talk(&Talk {
                text: "hi ana".into(),
            })
            .await?;
        // Each player's talk ran before its next message; the room's lines follow.
        PlayerClient::new(&lobby, "ana")
            .whereabouts(&Whereabouts)
            .await?;
        PlayerClient::new(&lobby, "bo")
            .whereabouts(&Whereabouts)
            .await?;
        let members = RoomClient::new(&west, room).who(&Who).await?;
        println!(
            "  {room} (on {}): players {:?}, lines {:?}",
            members.host, members.players, members.lines
        );
    }
    if let Some(room) = west_room {
        let status = enter(&lobby, "ana", room).await?;
        println!(
            "  ana  tries {room} on rooms-west: {} (rooms-west runs no players, so she cannot move there); she stays in {:?}",
            status.last_join, status.spot
        );
    }
    if let Some(room) = east_room {
        PlayerClient::new(&lobby, "bo").leave(&Leave).await?;
        let status = PlayerClient::new(&lobby, "bo")
            .whereabouts(&Whereabouts)
            .await?;
        let members = RoomClient::new(&lobby, room).who(&Who).await?;
        println!(
            "  bo   leaves {room}: back in an Entry Spot ({}); {room} has {:?}",
            status
                .spot
                .as_deref()
                .is_some_and(zlink::object::is_entry_spot_id),
            members.players
        );
    }

    stop_west(&lobby, west, &rooms, west_room).await?;
    lobby.shutdown().await;
    east.shutdown().await;
    Ok(())
}

/// Stops rooms-west cleanly and shows what the lobby sees of every room afterwards: its
/// rooms are released, and the next `get_or_create` makes one anew elsewhere.
async fn stop_west(
    lobby: &Runtime,
    west: Runtime,
    rooms: &[(String, String)],
    west_room: Option<&str>,
) -> zlink::Result<()> {
    println!();
    println!(
        "Stopping rooms-west cleanly (as Ctrl-C does): its rooms close and their IDs are free again..."
    );
    let outcome = west.shutdown().await;
    println!("  rooms-west: {outcome}");
    for (id, host) in rooms {
        let room = RoomClient::new(lobby, id.as_str());
        let mut outcome = room.who(&Who).await;
        // The first call after the stop may still be in flight to the stopped node.
        if outcome.is_err() && host != "rooms-west" {
            outcome = room.who(&Who).await;
        }
        match outcome {
            Ok(members) => println!(
                "  {id:<8} on {host}: answered ({} lines)",
                members.lines.len()
            ),
            Err(e) => println!(
                "  {id:<9} on {host}: {:?} ({e})",
                e.kind().unwrap_or(ErrorKind::InternalFailure)
            ),
        }
    }
    if let Some(room) = west_room {
        let again = lobby
            .spots()
            .get_or_create(room, Room::STABLE_TYPE, "again".to_string())
            .await?;
        let where_now = match again {
            SpotCreation::Created(room, _) => format!(
                "created anew on {} (generation {}); a crashed server's rooms would stay Unavailable until `zlink-admin reclaim`",
                room.rid, room.generation
            ),
            other => format!("{other:?}"),
        };
        println!("  get_or_create({room:?}) -> {where_now}");
    }

    Ok(())
}

/// `--drain NODE`: players walk while NODE moves every player it runs to the other node.
async fn drain_demo(drained: &str, security: &Security) -> zlink::Result<()> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    if drained != "rooms-east" && drained != "rooms-west" {
        return Err(zlink::Error::InvalidArgument(format!(
            "--drain takes rooms-east or rooms-west, not {drained:?}"
        )));
    }
    let store = Stores::in_memory();
    let east = start_node(
        "rooms-east",
        &store,
        Serves::RoomsAndPlayers,
        &security.node(0),
    )
    .await?;
    let west = start_node(
        "rooms-west",
        &store,
        Serves::RoomsAndPlayers,
        &security.node(1),
    )
    .await?;
    let lobby = start_node("lobby", &store, Serves::Nothing, &security.node(2)).await?;
    wait_for_servers(&lobby, 2).await?;
    wait_for_servers(&east, 2).await?;
    wait_for_servers(&west, 2).await?;
    lobby.actors().ready(Player::STABLE_TYPE, 2).await?;
    let (node, other) = match drained {
        "rooms-east" => (&east, &west),
        _ => (&west, &east),
    };
    let players: Vec<String> = (1..=20).map(|n| format!("walker-{n}")).collect();
    for player in &players {
        lobby.actors().create(player, Player::STABLE_TYPE).await?;
    }
    // One of them sits in a room on the drained node: the room moves with it.
    // Placement picks the room's node: rooms are opened until one lands there.
    let mut room = None;
    for n in 1..=20 {
        let id = format!("arena-{n}");
        if open_room(&lobby, &id, "arena").await? == node.rid() {
            room = Some(id);
            break;
        }
    }
    let mut on_node = Vec::new();
    for player in &players {
        if lobby
            .actors()
            .find(player)
            .await?
            .is_some_and(|at| at.rid == node.rid())
        {
            on_node.push(player.clone());
        }
    }
    println!(
        "20 players walk from the lobby; {} of them run on {drained}.",
        on_node.len()
    );
    let seated = on_node.first().zip(room.as_ref());
    if let Some((sitter, room)) = seated {
        enter(&lobby, sitter, room).await?;
        PlayerClient::new(&lobby, sitter)
            .talk(&Talk {
                text: "hello from the arena".into(),
            })
            .await?;
        println!("  {sitter} sits in {room} on {drained}");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let mut walkers = Vec::new();
    for (i, player) in players.iter().enumerate() {
        let (lobby, player) = (lobby.clone(), player.clone());
        let (stop, answered, failed) = (stop.clone(), answered.clone(), failed.clone());
        walkers.push(tokio::spawn(async move {
            let client = PlayerClient::new(&lobby, &player);
            while !stop.load(Ordering::Relaxed) {
                match client.step(&Step).await {
                    Ok(_) => answered.fetch_add(1, Ordering::Relaxed),
                    Err(_) => failed.fetch_add(1, Ordering::Relaxed),
                };
                tokio::time::sleep(Duration::from_millis(1 + i as u64 % 3)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!("Draining {drained} while they walk...");
    let started = tokio::time::Instant::now();
    let report = node.relocate_all().await?;
    println!(
        "  moved {} players and {} room(s) to {} in {:.1} ms; {} stayed: {:?}; {} moves failed",
        report.moved.len(),
        report.moved_spots.len(),
        other.rid(),
        started.elapsed().as_secs_f64() * 1000.0,
        report.blocked.len(),
        report
            .blocked
            .iter()
            .map(|b| format!("{} ({:?})", b.id, b.reason))
            .collect::<Vec<_>>(),
        report.failed.len()
    );
    if let Some((sitter, room)) = seated {
        let members = RoomClient::new(&lobby, room).who(&Who).await?;
        let status = PlayerClient::new(&lobby, sitter)
            .whereabouts(&Whereabouts)
            .await?;
        println!(
            "  {room} now runs on {} with players {:?} and {} line(s) said; {sitter} still sits in {:?}",
            members.host,
            members.players,
            members.lines.len(),
            status.spot.unwrap_or_default()
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    for walker in walkers {
        let _ = walker.await;
    }
    let mut counted = 0;
    for player in &players {
        counted += PlayerClient::new(&lobby, player).step(&Step).await?.0 - 1;
    }
    let answered = answered.load(Ordering::Relaxed);
    println!(
        "  steps answered: {answered}, steps the players counted: {counted}, failed calls: {}, lost: {}",
        failed.load(Ordering::Relaxed),
        answered.abs_diff(counted)
    );
    lobby.shutdown().await;
    east.shutdown().await;
    west.shutdown().await;
    Ok(())
}

async fn one_node(redis: &str, role: &str, rid: &str, security: &Security) -> zlink::Result<()> {
    let store = Stores {
        location: Arc::new(RedisLocationStore::new(RedisOptions::new(redis, MESH))?),
        relocation: Arc::new(RedisRelocationStore::new(RedisOptions::new(
            redis,
            "rooms-relocation",
        ))?),
    };
    match role {
        "server" => {
            let node = start_node(rid, &store, Serves::RoomsAndPlayers, security).await?;
            println!("room server {rid} is up (Location Store {redis}); press Ctrl-C to stop");
            // Its rooms and players are released as it stops: started again (any RID),
            // the lobby's get_or_create makes them anew.
            let outcome = node.shutdown_on_signal(ShutdownOptions::new()).await;
            println!("room server {rid}: {outcome}");
        }
        _ => {
            let lobby = start_node(rid, &store, Serves::Nothing, security).await?;
            println!("lobby {rid}: waiting for a room server in {redis}...");
            wait_for_servers(&lobby, 1).await?;
            lobby.actors().ready(Player::STABLE_TYPE, 1).await?;
            let host = open_room(&lobby, "arena-1", "arena").await?;
            lobby
                .actors()
                .get_or_create(rid, Player::STABLE_TYPE)
                .await?;
            let status = enter(&lobby, rid, "arena-1").await?;
            println!(
                "arena-1 runs on {host}; {rid} joins it: {}",
                status.last_join
            );
            lobby.shutdown().await;
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let (security, args) = match setup::begin("rooms", USAGE) {
        Ok(begun) => begun,
        Err(code) => return code,
    };
    let mode = match Mode::parse(&args) {
        Ok(mode) => mode,
        Err(e) => {
            eprintln!("rooms: {e}\n\n{USAGE}\n\n{}", setup::COMMON_USAGE);
            return ExitCode::from(2);
        }
    };
    println!("{}", security.describe());
    let outcome = match mode {
        Mode::OneProcess => one_process(&security).await,
        Mode::Drain(node) => drain_demo(&node, &security).await,
        Mode::OneNode { redis, role, rid } => one_node(&redis, &role, &rid, &security).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rooms: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What the command line asks for.
enum Mode {
    OneProcess,
    Drain(String),
    OneNode {
        redis: String,
        role: String,
        rid: String,
    },
}

impl Mode {
    fn parse(args: &[String]) -> Result<Mode, String> {
        let mut flags = std::collections::BTreeMap::new();
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            if !["--drain", "--redis", "--role", "--rid"].contains(&flag.as_str()) {
                return Err(format!("unknown argument {flag:?}"));
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            if flags.insert(flag.as_str(), value.clone()).is_some() {
                return Err(format!("{flag} given more than once"));
            }
        }
        let drain = flags.remove("--drain");
        let redis = flags.remove("--redis");
        match (drain, redis) {
            (Some(_), Some(_)) => Err("--drain runs in one process; it takes no --redis".into()),
            (Some(node), None) if flags.is_empty() => Ok(Mode::Drain(node)),
            (None, None) if flags.is_empty() => Ok(Mode::OneProcess),
            (_, None) => Err("--role and --rid need --redis URL".into()),
            (None, Some(redis)) => {
                let role = flags.remove("--role").unwrap_or_else(|| "lobby".into());
                if role != "server" && role != "lobby" {
                    return Err(format!("--role is server or lobby, not {role:?}"));
                }
                let rid = flags
                    .remove("--rid")
                    .unwrap_or_else(|| zlink::generate_rid(&role));
                Ok(Mode::OneNode { redis, role, rid })
            }
        }
    }
}
