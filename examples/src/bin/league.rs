//! Matches as Instance Spots and a league's goals by Logical Multicast: three nodes in one
//! process on 127.0.0.1 and the embedded stores. `arena-east` and `arena-west` serve
//! matches and scoreboards and are members of the channel "league"; the lobby serves
//! nothing. The lobby talks to matches by ID with Instance intent, so the first goal of a
//! match starts it on an arena; each goal is published from the match to every
//! scoreboard in the league. An idle match is evicted, and its next goal starts a new one.
//!
//! Run: `cargo run -p zlink-examples --bin league`

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{ClosingReason, Spot, SpotContext};
use zlink::store::{LocationStore, RelocationStore};
use zlink::{Bytes, ErrorKind, Runtime};
use zlink_examples::setup::{self, Security};

const USAGE: &str = "\
usage:
  league
      Three nodes in this process: arena-east and arena-west (matches and scoreboards,
      members of channel \"league\") and a lobby. The lobby scores goals in matches by
      ID: the first goal starts a match on an arena (Instance Spots), every goal reaches
      the scoreboards on both arenas (Logical Multicast), and an idle match is evicted.";

const MESH: &str = "league";
const CHANNEL: &str = "league";
const GOALS: &str = "goals";
/// An arena evicts a match idle this long.
const IDLE: Duration = Duration::from_millis(300);

/// A goal for `team` in a match (request: the score so far).
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Standing)]
struct Goal {
    team: String,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
struct Standing {
    arena: String,
    goals: Vec<String>,
}

/// What a match tells the league about each goal.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
struct GoalScored {
    match_id: String,
    team: String,
    nth: usize,
}

/// One match: it exists from its first goal until it is idle for a while.
struct Match {
    arena: String,
    goals: Vec<String>,
}

#[zlink::spot(type = "match", relocation = disable, instance)]
impl Match {
    #[handler]
    async fn goal(&mut self, goal: Goal, ctx: &SpotContext) -> zlink::Result<Standing> {
        self.goals.push(goal.team.clone());
        let scored = GoalScored {
            match_id: ctx.id().to_string(),
            team: goal.team,
            nth: self.goals.len(),
        };
        ctx.publish(CHANNEL, GOALS, &scored).await?;
        Ok(Standing {
            arena: self.arena.clone(),
            goals: self.goals.clone(),
        })
    }

    #[on_closing]
    async fn closing(&mut self, reason: ClosingReason, ctx: &SpotContext) {
        if reason == ClosingReason::IdleEvicted {
            println!("  {} on {} was idle: evicted", ctx.id(), self.arena);
        }
    }
}

/// A scoreboard on one arena: every goal of the league, as it hears of them.
struct Scoreboard {
    lines: Arc<Mutex<Vec<String>>>,
}

/// The lines of a scoreboard.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Lines)]
struct Show;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
struct Lines(Vec<String>);

#[zlink::spot(type = "scoreboard", relocation = disable)]
impl Scoreboard {
    #[subscribe(channel = "league", topic = "goals")]
    async fn goal_scored(&mut self, goal: GoalScored, _ctx: &SpotContext) -> zlink::Result<()> {
        let line = format!("{} goal {} for {}", goal.match_id, goal.nth, goal.team);
        self.lines.lock().map_err(|_| poisoned())?.push(line);
        Ok(())
    }

    #[handler]
    async fn show(&mut self, _show: Show, _ctx: &SpotContext) -> zlink::Result<Lines> {
        Ok(Lines(self.lines.lock().map_err(|_| poisoned())?.clone()))
    }
}

impl Spot for Scoreboard {}

fn poisoned() -> zlink::Error {
    zlink::Error::new(
        ErrorKind::InternalFailure,
        "a scoreboard's lock was poisoned",
    )
}

async fn arena(
    rid: &str,
    location: &Arc<dyn LocationStore>,
    relocation: &Arc<dyn RelocationStore>,
    security: &Security,
) -> zlink::Result<Runtime> {
    let name = rid.to_string();
    let builder = Runtime::builder()
        .mesh_name(MESH)
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
        .location_store(location.clone())
        // Instance Spots keep their first message here until it ran.
        .relocation_store(relocation.clone())
        .multicast_channel(CHANNEL)
        .instance_spot_idle_timeout(IDLE)
        .spot_type(Match::spot_type(move |_| Match {
            arena: name.clone(),
            goals: Vec::new(),
        })?)
        .spot_type(Scoreboard::spot_type(|_| Scoreboard {
            lines: Arc::default(),
        })?);
    zlink_examples::operate::start(security, builder).await
}

async fn league(security: &Security) -> zlink::Result<()> {
    let location = <dyn LocationStore>::in_memory();
    let relocation = <dyn RelocationStore>::in_memory();
    let east = arena("arena-east", &location, &relocation, &security.node(0)).await?;
    let west = arena("arena-west", &location, &relocation, &security.node(1)).await?;
    let lobby = Runtime::builder()
        .mesh_name(MESH)
        .rid("lobby")
        .listen("tcp://127.0.0.1:0")
        .location_store(location.clone());
    let lobby = zlink_examples::operate::start(&security.node(2), lobby).await?;
    lobby.spots().ready("match", 2).await?;
    for rt in [&east, &west] {
        rt.channels().ready(CHANNEL, 1).await?;
    }
    // One scoreboard on each arena.
    for (rt, id) in [(&east, "board-east"), (&west, "board-west")] {
        rt.spots()
            .get_or_create(id, "scoreboard", Bytes::new())
            .await?;
    }

    println!("a plain call to a match nobody started:");
    let plain = MatchClient::new(&lobby, "final")
        .goal(&Goal { team: "red".into() })
        .await;
    match plain {
        Err(e) if e.is(ErrorKind::NotFound) => println!("  NotFound (a plain call starts nothing)"),
        other => println!("  unexpected: {other:?}"),
    }

    println!("goals with Instance intent, from the lobby:");
    for (id, team) in [
        ("final", "red"),
        ("semi-1", "blue"),
        ("final", "blue"),
        ("final", "red"),
    ] {
        let standing = MatchClient::instance(&lobby, id)
            .goal(&Goal { team: team.into() })
            .await?;
        println!(
            "  {id}: {team} scores; {} on {}",
            standing.goals.join("-"),
            standing.arena
        );
    }
    for id in ["board-east", "board-west"] {
        let mut lines = Vec::new();
        for _ in 0..100 {
            lines = ScoreboardClient::new(&lobby, id).show(&Show).await?.0;
            if lines.len() == 4 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        lines.sort();
        println!("{id} heard {} goals: {}", lines.len(), lines.join(", "));
    }

    println!("the matches go idle:");
    let first = lobby.spots().find("final").await?;
    for _ in 0..100 {
        if lobby.spots().find("final").await?.is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let standing = MatchClient::instance(&lobby, "final")
        .goal(&Goal {
            team: "green".into(),
        })
        .await?;
    let again = lobby.spots().find("final").await?;
    println!(
        "  a new goal in final starts it again: {} on {} (generation {} -> {})",
        standing.goals.join("-"),
        standing.arena,
        first.map_or(0, |s| s.generation),
        again.map_or(0, |s| s.generation)
    );

    lobby.shutdown().await;
    west.shutdown().await;
    east.shutdown().await;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let (security, args) = match setup::begin("league", USAGE) {
        Ok(begun) => begun,
        Err(code) => return code,
    };
    if let Err(code) = setup::no_more_args("league", USAGE, &args) {
        return code;
    }
    println!("{}", security.describe());
    match league(&security).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("league: error: {e}");
            ExitCode::FAILURE
        }
    }
}
