//! What a chat client and the mesh say to each other. Everything a client sends or
//! receives is JSON (`codec = zlink::Json`), the codec outside clients speak; what only
//! nodes exchange keeps the default codec.

use serde::{Deserialize, Serialize};

/// Client → gateway: log in as `name` (its player Actor has that ID).
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(name = "login", codec = zlink::Json, reply = Welcome)]
pub struct Login {
    /// The player's name, also its Actor ID.
    pub name: String,
}

/// The answer to [`Login`]: the session is bound to the player.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(name = "welcome", codec = zlink::Json)]
pub struct Welcome {
    /// The player's Actor ID.
    pub player: String,
    /// The node its player runs on now.
    pub node: String,
}

/// Client → player: enter `room` (created on first use).
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(name = "join", codec = zlink::Json, reply = Joined)]
pub struct Join {
    /// The room's Spot ID.
    pub room: String,
}

/// The answer to [`Join`].
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(name = "joined", codec = zlink::Json)]
pub struct Joined {
    /// The room entered.
    pub room: String,
    /// Who is in it now.
    pub members: Vec<String>,
    /// The sequence number the room gives its next line: the first this player hears.
    pub next_seq: u64,
}

/// Client → player: say `text` in the player's room (one-way).
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(name = "say", codec = zlink::Json)]
pub struct Say {
    /// What is said.
    pub text: String,
}

/// Client → player: where does the player run now?
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(name = "where", codec = zlink::Json, reply = Here)]
pub struct Where;

/// The answer to [`Where`].
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(name = "here", codec = zlink::Json)]
pub struct Here {
    /// The node the player runs on.
    pub node: String,
}

/// Player → client (push): a line said in the player's room.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
#[message(name = "line", codec = zlink::Json)]
pub struct Line {
    /// The room it was said in.
    pub room: String,
    /// The room's number for it: consecutive, so a client sees a gap or a repeat.
    pub seq: u64,
    /// Who said it.
    pub from: String,
    /// What was said.
    pub text: String,
    /// The node the listening player ran on when it pushed the line.
    pub via: String,
}

/// Gateway → client (push): this name logged in elsewhere; this session ends.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(name = "replaced", codec = zlink::Json)]
pub struct Replaced {
    /// The player now bound to another session.
    pub player: String,
}

/// Player → room: `player` enters.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Entered)]
pub struct Enter {
    /// The entering player's Actor ID.
    pub player: String,
}

/// The answer to [`Enter`].
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Entered {
    /// Who is in the room now.
    pub members: Vec<String>,
    /// The number of the room's next line.
    pub next_seq: u64,
}

/// Player → room: `player` leaves (its client is gone).
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Leave {
    /// The leaving player's Actor ID.
    pub player: String,
}

/// Player → room: `player` says `text` (one-way).
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Spoken {
    /// Who says it.
    pub player: String,
    /// What is said.
    pub text: String,
}

/// Room → each member player: a numbered line (one-way).
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Hear {
    /// The room.
    pub room: String,
    /// The room's number for the line.
    pub seq: u64,
    /// Who said it.
    pub from: String,
    /// What was said.
    pub text: String,
}

/// Anyone → room: its last line's number.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = LastSeq)]
pub struct Tally;

/// The answer to [`Tally`]: the number of the room's last line (0: none yet).
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct LastSeq(pub u64);
