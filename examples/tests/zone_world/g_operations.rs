//! G: operating the world while it is played: a zone node drained from the ops node while
//! 20 browsers move their players.

use std::time::Duration;

use zlink_examples::zone_world::desk::{DrainNode, UndrainNode, DRAIN_TIMEOUT};
use zlink_examples::zone_world::messages::Ack;
use zlink_examples::zone_world::world::Zone;

use crate::browser::Browser;
use crate::world::World;

/// Moves one browser's player every 50 ms until told to stop: even ones across the
/// north-south border (zn-a and zn-b), odd ones back and forth inside nw. Returns every
/// ack it got, after the ack of its last move.
async fn play(
    mut browser: Browser,
    n: usize,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Vec<Ack> {
    // Get next to the border first (even) or stay at the start (odd).
    let mut seq = 0;
    if n.is_multiple_of(2) {
        for _ in 0..4 {
            seq += 1;
            browser.step(seq, 0, 5).await;
        }
    }
    let mut every = tokio::time::interval(Duration::from_millis(50));
    while !*stop.borrow_and_update() {
        every.tick().await;
        seq += 1;
        let back = seq % 2 == 0;
        let (dx, dy) = match (n.is_multiple_of(2), back) {
            (true, false) => (0, 5),
            (true, true) => (0, -5),
            (false, false) => (1, 0),
            (false, true) => (-1, 0),
        };
        browser.step(seq, dx, dy).await;
    }
    browser.acks_until(seq).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_g1_a_zone_node_drained_while_20_browsers_play_loses_no_move_and_no_connection() {
    zlink_testkit::init_tracing();
    let world = World::start().await;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut playing = Vec::new();
    for n in 0..20 {
        let (browser, _) = Browser::login(&world.browsers(), &format!("p{n}")).await;
        playing.push(tokio::spawn(play(browser, n, stopped.clone())));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let drained = world
        .caller
        .nodes()
        .request("zn-a", &DrainNode)
        .timeout(DRAIN_TIMEOUT)
        .await
        .expect("drained");
    assert!(drained.left.is_empty(), "{drained:?}");
    let mut moved: Vec<&str> = drained
        .zones
        .iter()
        .map(|(zone, _)| zone.as_str())
        .collect();
    moved.sort();
    assert_eq!(moved, ["ne", "nw"], "{drained:?}");
    assert!(drained.zones.iter().all(|(_, to)| to != "zn-a"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.send(true).expect("players listen");
    for (n, player) in playing.into_iter().enumerate() {
        let acks = player.await.expect("the player played");
        let seqs: Vec<u64> = acks.iter().map(|ack| ack.seq).collect();
        let last = seqs.last().copied().unwrap_or(0);
        assert_eq!(
            seqs,
            (1..=last).collect::<Vec<_>>(),
            "p{n}: each move once, in order"
        );
        for ack in &acks {
            assert_eq!((ack.refused, &ack.failed), (None, &None), "p{n}: {ack:?}");
        }
        let after = acks.last().expect("acks");
        assert_ne!(
            after.node, "zn-a",
            "p{n} ran on the drained node at its end"
        );
        if n % 2 == 1 {
            assert_eq!(after.zone, Zone::Nw);
        }
    }
    world
        .caller
        .nodes()
        .request("zn-a", &UndrainNode)
        .await
        .expect("undrained");
    world.shutdown().await;
}
