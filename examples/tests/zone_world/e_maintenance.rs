//! E: maintenance of a zone node blocks entry into its zones. The ops node keeps it in
//! the maintenance book on Redis before telling the nodes, so it outlives a restart.

use zlink_examples::zone_world::player::PlayerClient;
use zlink_examples::zone_world::world::{Cell, Zone};

use crate::world::{status_until, until, walk, World};

async fn maintenance_reaches(world: &World, rid: &str, on: bool) {
    let bulletin = world.zone_node(rid).bulletin.clone();
    until(|| async { bulletin.under_maintenance() }, |now| *now == on).await;
}

/// From (25,45) in nw, `player`'s entry into sw (move 5 or earlier) was refused: a later
/// move inside nw (6) shows it stayed. Out of maintenance, move 7 enters sw on zn-b.
async fn refused_until_maintenance_ends(world: &World, player: &PlayerClient) {
    // A later move inside nw runs after the refused entry: once it shows, the entry was
    // refused for good.
    walk(player, 6..=6, (1, 0)).await;
    let after = status_until(player, |s| s.cell == Cell { x: 26, y: 45 }).await;
    assert_eq!((after.zone, after.node.as_str()), (Zone::Nw, "zn-a"));
    world.ops.set_maintenance("zn-b", false).await.expect("set");
    maintenance_reaches(world, "zn-b", false).await;
    walk(player, 7..=7, (0, 5)).await;
    let entered = status_until(player, |s| s.zone == Zone::Sw).await;
    assert_eq!(entered.node, "zn-b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_e6_maintenance_of_a_node_blocks_entry_into_its_zones_but_not_moves_inside_them() {
    let world = World::start().await;
    let (player, _) = world.player("cy").await;
    status_until(&player, |s| s.node == "zn-a").await;
    walk(&player, 1..=4, (0, 5)).await;
    status_until(&player, |s| s.cell == Cell { x: 25, y: 45 }).await;
    world.ops.set_maintenance("zn-b", true).await.expect("set");
    maintenance_reaches(&world, "zn-b", true).await;
    walk(&player, 5..=5, (0, 5)).await;
    refused_until_maintenance_ends(&world, &player).await;
    world.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_e7_maintenance_survives_a_restart_of_the_node() {
    let mut world = World::start().await;
    world.ops.set_maintenance("zn-b", true).await.expect("set");
    maintenance_reaches(&world, "zn-b", true).await;
    let restarted = world.restart_zone_node("zn-b").await;
    assert!(
        restarted.bulletin.under_maintenance(),
        "read from the book at start, before any board arrived"
    );
    let (player, _) = world.player("kai").await;
    status_until(&player, |s| s.node == "zn-a").await;
    walk(&player, 1..=5, (0, 5)).await;
    // Out of maintenance, the restarted node takes players again.
    refused_until_maintenance_ends(&world, &player).await;
    world.shutdown().await;
}
