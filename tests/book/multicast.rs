//! The code shown in the book's "Logical Multicast" section: match Spots publish goals,
//! scoreboard Spots on every node subscribe to them, over real TCP and a real
//! `redis-server`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use zlink::object::SpotContext;
use zlink::store::{RedisLocationStore, RedisOptions};
use zlink::Runtime;
use zlink_testkit::RedisServer;

// ANCHOR: events
/// Published by a match whenever a team scores.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
pub struct GoalScored {
    pub match_id: String,
    pub team: String,
}

/// Asks a match to score a goal for `team`.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Scored)]
pub struct Score {
    pub team: String,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Scored;
// ANCHOR_END: events

// ANCHOR: publish
pub struct Match;

#[zlink::spot(type = "match", relocation = disable)]
impl Match {
    #[handler]
    async fn score(&mut self, score: Score, ctx: &SpotContext) -> zlink::Result<Scored> {
        let goal = GoalScored {
            match_id: ctx.id().to_string(),
            team: score.team,
        };
        // Every scoreboard subscribed to "goals" on "league", on every node, gets it.
        ctx.publish("league", "goals", &goal).await?;
        Ok(Scored)
    }
}
// ANCHOR_END: publish

// ANCHOR: subscribe
/// One scoreboard: it shows the goals of every match in the league.
pub struct Scoreboard {
    goals: Arc<Mutex<Vec<String>>>,
}

#[zlink::spot(type = "scoreboard", relocation = disable)]
impl Scoreboard {
    #[subscribe(channel = "league", topic = "goals")]
    async fn goal(&mut self, goal: GoalScored, _ctx: &SpotContext) -> zlink::Result<()> {
        let mut goals = self.goals.lock().unwrap();
        goals.push(format!("{}: {}", goal.match_id, goal.team));
        Ok(())
    }
}
// ANCHOR_END: subscribe

impl zlink::object::Spot for Match {}
impl zlink::object::Spot for Scoreboard {}

#[tokio::test]
async fn scoreboards_on_every_node_see_every_goal() -> zlink::Result<()> {
    let redis = RedisServer::start().expect("redis-server");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let league_node = |rid: &'static str| {
        let (url, seen) = (redis.url(), seen.clone());
        async move {
            let goals = seen.clone();
            // ANCHOR: member
            let node = Runtime::builder()
                .mesh_name("league")
                .rid(rid)
                .listen("tcp://127.0.0.1:0")
                .location_store(Arc::new(RedisLocationStore::new(RedisOptions::new(
                    url, "league",
                ))?))
                // Receivers are the Server members of the channel with weight > 0.
                .multicast_channel("league")
                .spot_type(Match::spot_type(|_| Match)?)
                .spot_type(Scoreboard::spot_type(move |_| Scoreboard {
                    goals: goals.clone(),
                })?)
                .discovery_interval(Duration::from_millis(100))
                .build()?
                .start()
                .await?;
            // ANCHOR_END: member
            Ok::<Runtime, zlink::Error>(node)
        }
    };
    let (east, west) = (league_node("east").await?, league_node("west").await?);
    for rt in [&east, &west] {
        rt.channels().ready("league", 1).await?;
    }
    east.spots()
        .get_or_create("board-east", "scoreboard", Bytes::new())
        .await?;
    west.spots()
        .get_or_create("board-west", "scoreboard", Bytes::new())
        .await?;
    MatchClient::get_or_create(&east, "final").await?;
    MatchClient::new(&east, "final")
        .score(&Score { team: "red".into() })
        .await?;
    // ANCHOR: outside
    // From outside any Spot: the same event, through the runtime.
    let goal = GoalScored {
        match_id: "friendly".into(),
        team: "blue".into(),
    };
    west.multicast().publish("league", "goals", &goal).await?;
    // ANCHOR_END: outside
    zlink_testkit::wait_until(
        Duration::from_secs(5),
        "both boards saw both goals",
        || async { seen.lock().unwrap().len() == 4 },
    )
    .await;
    let mut goals = seen.lock().unwrap().clone();
    goals.sort();
    assert_eq!(
        goals,
        [
            "final: red",
            "final: red",
            "friendly: blue",
            "friendly: blue"
        ]
    );
    west.shutdown().await;
    east.shutdown().await;
    Ok(())
}
