//! The code shown in the book's "Instance Spots" section: a match Spot activated by its
//! first message, on a node serving the type, over real TCP and a real `redis-server`.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{ClosingReason, SpotContext};
use zlink::store::{RedisLocationStore, RedisOptions, RedisRelocationStore};
use zlink::{ErrorKind, Runtime};
use zlink_testkit::RedisServer;

// ANCHOR: match
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Standing)]
pub struct Goal {
    pub team: String,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Standing {
    pub goals: Vec<String>,
}

/// One match: it exists from its first message until it is closed or evicted.
#[derive(Default)]
pub struct Match {
    goals: Vec<String>,
}

#[zlink::spot(type = "match", relocation = disable, instance)]
impl Match {
    #[handler]
    async fn goal(&mut self, goal: Goal, _ctx: &SpotContext) -> zlink::Result<Standing> {
        self.goals.push(goal.team);
        Ok(Standing {
            goals: self.goals.clone(),
        })
    }

    #[on_closing]
    async fn closing(&mut self, reason: ClosingReason, ctx: &SpotContext) {
        tracing::info!(spot = %ctx.id(), ?reason, "match over");
    }
}
// ANCHOR_END: match

#[tokio::test]
async fn a_match_is_activated_by_its_first_goal_and_evicted_when_idle() -> zlink::Result<()> {
    let redis = RedisServer::start().expect("redis-server");
    // ANCHOR: serve
    let server: Runtime = Runtime::builder()
        .mesh_name("game")
        .rid("match-server")
        .listen("tcp://127.0.0.1:0")
        .location_store(Arc::new(RedisLocationStore::new(RedisOptions::new(
            redis.url(),
            "game",
        ))?))
        // Instance Spots need a Relocation Store shared by the mesh: each first
        // message is written there before the ID is reserved.
        .relocation_store(Arc::new(RedisRelocationStore::new(RedisOptions::new(
            redis.url(),
            "game-relocation",
        ))?))
        .spot_type(Match::spot_type(|_| Match::default())?)
        // An idle match goes after 200 ms (default: never).
        .instance_spot_idle_timeout(Duration::from_millis(200))
        .build()?
        .start()
        .await?;
    // ANCHOR_END: serve
    let caller = Runtime::builder()
        .mesh_name("game")
        .rid("caller")
        .listen("tcp://127.0.0.1:0")
        .location_store(Arc::new(RedisLocationStore::new(RedisOptions::new(
            redis.url(),
            "game",
        ))?))
        .discovery_interval(Duration::from_millis(100))
        .build()?
        .start()
        .await?;
    zlink_testkit::wait_until(
        Duration::from_secs(5),
        "the caller sees the server",
        || async { caller.spots().ready_nodes("match").unwrap_or_default() == ["match-server"] },
    )
    .await;
    // ANCHOR: call
    // A plain client never creates anything: there is no match "m-42" yet.
    let plain = MatchClient::new(&caller, "m-42");
    let missing = plain.goal(&Goal { team: "red".into() }).await.unwrap_err();
    assert!(missing.is(ErrorKind::NotFound));

    // With Instance intent, the first goal activates the match on a node serving the
    // type, and it is the match's first handler call.
    let live = MatchClient::instance(&caller, "m-42");
    let standing = live.goal(&Goal { team: "red".into() }).await?;
    assert_eq!(standing.goals, ["red"]);

    // From then on it is a Spot like any other: plain calls reach it too.
    let standing = plain
        .goal(&Goal {
            team: "blue".into(),
        })
        .await?;
    assert_eq!(standing.goals, ["red", "blue"]);
    // ANCHOR_END: call

    // Idle for its timeout, it is evicted; the next intent call starts a new match.
    zlink_testkit::wait_until(Duration::from_secs(5), "the match was evicted", || async {
        caller.spots().find("m-42").await.ok().flatten().is_none()
    })
    .await;
    let standing = live
        .goal(&Goal {
            team: "green".into(),
        })
        .await?;
    assert_eq!(standing.goals, ["green"]);
    caller.shutdown().await;
    server.shutdown().await;
    Ok(())
}
