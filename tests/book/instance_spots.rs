//! The code shown in the book's "Instance Spots" section: a match Spot activated by its
//! first message, on a node serving the type, over real TCP and a real `redis-server`.

use serde::{Deserialize, Serialize};
use zlink_testkit::RedisServer;

zlink_book_snippets::snippet!("spots.md", "match");

#[tokio::test]
async fn a_match_is_activated_by_its_first_goal_and_evicted_when_idle() -> zlink::Result<()> {
    let redis = RedisServer::start().expect("redis-server");
    zlink_book_snippets::statements!("spots.md", "serve");
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
    zlink_book_snippets::statements!("spots.md", "instance_spots-call");

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
