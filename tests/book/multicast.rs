//! The code shown in the book's "Logical Multicast" section: match Spots publish goals,
//! scoreboard Spots on every node subscribe to them, over real TCP and a real
//! `redis-server`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use zlink_testkit::RedisServer;

zlink_book_snippets::snippet!("spots.md", "events");

zlink_book_snippets::snippet!("spots.md", "publish");

zlink_book_snippets::snippet!("spots.md", "subscribe");

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
            zlink_book_snippets::statements!("spots.md", "member");
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
    zlink_book_snippets::statements!("spots.md", "outside");
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
