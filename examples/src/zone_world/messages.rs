//! What the game's clients and nodes say to each other. What a browser sends or receives
//! is JSON (`codec = zlink::Json`); what only nodes exchange keeps the default codec.

use serde::{Deserialize, Serialize};

use super::broadcast::Announcement;
use super::patrol::{BotPlan, Patrol};
use super::snapshots::{BandSnapshot, Dot};
use super::world::{Cell, Refusal, Zone};

/// Client → gateway: play as `name` (its player Actor has that ID).
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
#[message(name = "login", codec = zlink::Json, reply = Welcome)]
pub struct Login {
    /// The player's name, also its Actor ID.
    pub name: String,
}

/// The answer to [`Login`]: where the player stands and who runs it.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
#[message(name = "welcome", codec = zlink::Json)]
pub struct Welcome {
    /// The player's Actor ID.
    pub player: String,
    /// Its cell.
    pub cell: Cell,
    /// Its zone.
    pub zone: Zone,
    /// The node its Actor runs on.
    pub node: String,
    /// The Actor's generation (kept across moves).
    pub generation: u64,
    /// How often it moved between nodes.
    pub relocations: u64,
    /// A bot's walk (its heading turns on each refused move); `None` for a player.
    pub patrol: Option<Patrol>,
    /// How many acks and views were pushed to its client (never any to a bot).
    pub pushed: u64,
    /// How many steps a bot took by itself.
    pub walked: u64,
    /// Numbers the player's accounts of where it stands (welcomes and acks) in the order
    /// it gave them. A login's reply and the pushes reach the client by different ways
    /// (the reply through the gateway's request, a push from wherever the player runs
    /// by then), so a client keeps the account with the highest number.
    pub version: u64,
}

/// Client → player (one-way): move by (`dx`, `dy`). `seq` numbers the client's moves;
/// each is answered once by an [`Ack`] push, in order.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
#[message(name = "move", codec = zlink::Json)]
pub struct Move {
    /// The client's number for this move.
    pub seq: u64,
    /// Change along x.
    pub dx: i32,
    /// Change along y.
    pub dy: i32,
}

/// Player → client (push): the outcome of the move numbered `seq`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, zlink::Message)]
#[message(name = "ack", codec = zlink::Json)]
pub struct Ack {
    /// The move's number.
    pub seq: u64,
    /// Why it was refused; `None` when it was made.
    pub refused: Option<Refusal>,
    /// Where the player stands now.
    pub cell: Cell,
    /// Its zone now.
    pub zone: Zone,
    /// The node its Actor runs on now.
    pub node: String,
    /// Its generation.
    pub generation: u64,
    /// How often it moved between nodes.
    pub relocations: u64,
    /// Why the move failed when the target zone could not be reached (not a refusal by
    /// the rules: the player stays where it was).
    pub failed: Option<String>,
    /// The account's number, as [`Welcome::version`] tells.
    pub version: u64,
}

/// Client → player: the player's state, as [`Welcome`] gives it.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
#[message(name = "status", codec = zlink::Json, reply = Welcome)]
pub struct Status;

/// Gateway → player: join the world (the first time: a player at the start cell in nw,
/// a bot where its plan starts).
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
#[message(reply = Welcome)]
pub struct Enter {
    /// For a bot, its plan: it then walks by itself and is never pushed to.
    pub bot: Option<BotPlan>,
}

/// Anyone → zone: what the zone shows now (as its last tick's [`View`]).
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
#[message(reply = View)]
pub struct Look;

/// Zone → player (one-way), each tick: what the player's client draws.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
#[message(name = "view", codec = zlink::Json)]
pub struct View {
    /// The zone's tick.
    pub tick: u64,
    /// The zone.
    pub zone: Zone,
    /// Everyone in the zone.
    pub here: Vec<Dot>,
    /// Players in the adjacent zones' border bands, as their last snapshots showed them.
    pub near: Vec<Dot>,
    /// The latest announcements, oldest first.
    pub news: Vec<Announcement>,
}

/// Player → zone (one-way): the player stands at `cell` in the zone now. Also the request
/// of a Join of the zone (JSON), naming the cell the player enters at. One-way, as a
/// member never waits for its own zone: the two take turns.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
pub struct Place {
    /// The player's name.
    pub player: String,
    /// Its cell.
    pub cell: Cell,
    /// Whether it is a bot (never pushed to).
    pub bot: bool,
}

/// Zone → zones (Logical Multicast): one zone's border band toward its neighbours.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
pub struct Band(pub BandSnapshot);
