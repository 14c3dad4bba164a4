//! A: entering the world, moving in it, and the order in which moves are refused.

use zlink_examples::zone_world::world::{Cell, Refusal, Zone, START};

use crate::browser::Browser;
use crate::world::{status_until, walk, World};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_a1_a_player_enters_at_the_start_in_nw_and_moves_inside_it() {
    let world = World::start().await;
    let (player, _) = world.player("ana").await;
    let entered = status_until(&player, |s| s.zone == Zone::Nw && s.node == "zn-a").await;
    assert_eq!(entered.cell, START);
    walk(&player, 1..=3, (5, 0)).await;
    let moved = status_until(&player, |s| s.cell == Cell { x: 40, y: 25 }).await;
    assert_eq!((moved.zone, moved.node.as_str()), (Zone::Nw, "zn-a"));
    assert_eq!(moved.relocations, 0);
    world.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_a2_refusal_order_is_out_of_range_then_too_far_then_diagonal_then_maintenance() {
    let world = World::start().await;
    let (mut browser, welcome) = Browser::login(&world.browsers(), "al").await;
    assert_eq!((welcome.cell, welcome.zone), (START, Zone::Nw));
    // Off the grid and too far: off the grid wins.
    browser.step(1, -30, 0).await;
    browser.step(2, 6, 0).await;
    // To (45,45), next to the corner, then diagonally into se.
    for seq in 3..=6 {
        browser.step(seq, 5, 5).await;
    }
    browser.step(7, 5, 5).await;
    let acks = browser.acks_until(7).await;
    let refused: Vec<_> = acks.iter().map(|ack| ack.refused).collect();
    assert_eq!(
        refused,
        [
            Some(Refusal::OutOfRange),
            Some(Refusal::TooFar),
            None,
            None,
            None,
            None,
            Some(Refusal::DiagonalCrossing)
        ]
    );
    assert_eq!(
        acks[6].cell,
        Cell { x: 45, y: 45 },
        "a refused move leaves the player"
    );
    world
        .ops
        .set_maintenance("zn-b", true)
        .await
        .expect("maintenance set");
    crate::world::until(
        || async { world.zone_node("zn-b").bulletin.under_maintenance() },
        |on| *on,
    )
    .await;
    // Under maintenance of sw's node: too far and diagonal still come first.
    browser.step(8, 0, 6).await;
    browser.step(9, 5, 5).await;
    browser.step(10, 0, 5).await;
    let acks = browser.acks_until(10).await;
    let refused: Vec<_> = acks.iter().map(|ack| ack.refused).collect();
    assert_eq!(
        refused,
        [
            Some(Refusal::TooFar),
            Some(Refusal::DiagonalCrossing),
            Some(Refusal::ZoneMaintenance)
        ]
    );
    assert!(acks.iter().all(|ack| ack.cell == Cell { x: 45, y: 45 }));
    world.shutdown().await;
}

/// A login's answer and the player's pushes reach the client by different ways (the
/// welcome push may come first), so the player numbers its accounts of where it stands
/// in the order it gave them, and a client keeps the newest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_a3_a_players_accounts_of_where_it_stands_are_numbered_in_the_order_it_gave_them() {
    let world = World::start().await;
    let (mut browser, answered) = Browser::login(&world.browsers(), "ada").await;
    let entered = browser.entered().await;
    assert_eq!((entered.zone, entered.node.as_str()), (Zone::Nw, "zn-a"));
    assert!(
        answered.version < entered.version,
        "the login's answer ({}) is older than the welcome pushed once the player entered ({})",
        answered.version,
        entered.version
    );
    browser.step(1, 5, 0).await;
    browser.step(2, 0, 5).await;
    let acks = browser.acks_until(2).await;
    let versions: Vec<u64> = acks.iter().map(|ack| ack.version).collect();
    assert!(
        entered.version < versions[0] && versions[0] < versions[1],
        "each ack is newer than the welcome and the ack before: {} then {versions:?}",
        entered.version
    );
    world.shutdown().await;
}
