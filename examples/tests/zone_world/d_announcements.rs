//! D: announcements go out over classic fanout from the ops node and reach every node:
//! the zone nodes, the one that owns no zone, one added after the start, and through the
//! zones every player's screen.

use zlink_examples::zone_world::broadcast::Announcement;

use crate::browser::Browser;
use crate::world::{until, World};

async fn announced(world: &World, rid: &str, text: &str) -> Vec<Announcement> {
    let bulletin = world.zone_node(rid).bulletin.clone();
    until(
        || async { bulletin.news() },
        |news| news.iter().any(|a| a.text == text),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_d1_an_announcement_reaches_every_zone_node_a_node_added_later_and_the_players() {
    let mut world = World::start().await;
    let (mut browser, _) = Browser::login(&world.browsers(), "jo").await;
    let first = world
        .ops
        .announce("servers restart at noon")
        .await
        .expect("announced");
    for rid in ["zn-a", "zn-b", "zn-c"] {
        let news = announced(&world, rid, "servers restart at noon").await;
        assert_eq!(news.last(), Some(&first), "on {rid}");
    }
    let seen = browser.view_until(|view| view.news.contains(&first)).await;
    assert_eq!(seen.news.len(), 1);
    // A node that joins later hears the board as it is, then what comes next.
    world.add_zone_node("zn-d").await;
    announced(&world, "zn-d", "servers restart at noon").await;
    let second = world
        .ops
        .announce("double points")
        .await
        .expect("announced");
    for rid in ["zn-a", "zn-b", "zn-c", "zn-d"] {
        let news = announced(&world, rid, "double points").await;
        assert_eq!(news, [first.clone(), second.clone()], "on {rid}");
    }
    assert!(second.id > first.id);
    let refused = world.ops.announce("   ").await;
    assert!(matches!(refused, Err(zlink::Error::InvalidArgument(_))));
    world.shutdown().await;
}
