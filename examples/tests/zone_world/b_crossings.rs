//! B: crossing between zones: the player moves to the node of the zone it enters, keeping
//! its generation and its connection, and nothing sent to it on the way is lost.

use std::time::Duration;

use zlink_examples::zone_world::messages::Move;
use zlink_examples::zone_world::player::PlayerClient;
use zlink_examples::zone_world::world::{Cell, Refusal, Zone};

use crate::browser::Browser;
use crate::world::{status_until, walk, World};
use zlink_examples::zone_world::messages::Look;
use zlink_examples::zone_world::zone::ZoneSpotClient;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_b2_entering_a_zone_of_the_other_node_moves_the_player_there_keeping_its_generation() {
    let world = World::start().await;
    let (player, _) = world.player("bo").await;
    let entered = status_until(&player, |s| s.node == "zn-a" && s.zone == Zone::Nw).await;
    // South from (25,25): (25,50) is in sw, which zn-b owns.
    walk(&player, 1..=5, (0, 5)).await;
    let crossed = status_until(&player, |s| s.zone == Zone::Sw).await;
    assert_eq!(crossed.cell, Cell { x: 25, y: 50 });
    assert_eq!(crossed.node, "zn-b", "the player runs where its zone runs");
    assert_eq!(
        crossed.generation, entered.generation,
        "the move kept the generation"
    );
    assert_eq!(crossed.relocations, 1);
    // East into se stays on zn-b.
    walk(&player, 6..=10, (5, 0)).await;
    let east = status_until(&player, |s| s.zone == Zone::Se).await;
    assert_eq!((east.node.as_str(), east.relocations), ("zn-b", 1));
    world.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_b3_message_follow_carries_moves_sent_from_every_node_while_the_player_changes_node() {
    let world = World::start().await;
    let (player, entered) = world.player("flo").await;
    status_until(&player, |s| s.node == "zn-a").await;
    walk(&player, 1..=4, (0, 5)).await;
    status_until(&player, |s| s.cell == Cell { x: 25, y: 45 }).await;
    // The crossing, and at once one step east from each node: the source (zn-a), the
    // target (zn-b), the third zone node and the caller. Those on their way while the
    // player moves follow it; none is lost, whichever order they run in.
    player
        .step(&Move {
            seq: 5,
            dx: 0,
            dy: 5,
        })
        .await
        .expect("move");
    let senders: Vec<PlayerClient> = world
        .zone_nodes
        .iter()
        .map(|node| PlayerClient::new(&node.runtime, "flo"))
        .chain([PlayerClient::new(&world.caller, "flo")])
        .collect();
    let steps = senders.iter().enumerate().map(|(at, sender)| async move {
        for seq in 0..2 {
            let step = Move {
                seq: 100 + 10 * at as u64 + seq,
                dx: 1,
                dy: 0,
            };
            sender.step(&step).await.expect("a step sent");
        }
    });
    futures::future::join_all(steps).await;
    let east = 25 + 2 * senders.len() as i32;
    let after = status_until(&player, |s| s.cell.x == east).await;
    assert_eq!(
        (after.cell.y, after.zone),
        (50, Zone::Sw),
        "every step arrived once"
    );
    assert_eq!(after.node, "zn-b");
    assert_eq!(after.generation, entered.generation);
    // Nothing more arrives later.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let settled = player
        .status(&zlink_examples::zone_world::messages::Status)
        .await;
    assert_eq!(settled.expect("status").cell, after.cell);
    world.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_b4_a_move_every_tick_across_the_border_is_acknowledged_contiguously_and_stays_visible_on_both_sides(
) {
    let world = World::start().await;
    let (mut browser, welcome) = Browser::login(&world.browsers(), "gus").await;
    for seq in 1..=4 {
        browser.step(seq, 0, 5).await;
    }
    browser.acks_until(4).await;
    // (25,45) <-> (25,50), a move every tick: 30 crossings between zn-a and zn-b.
    let crossings: u64 = 30;
    let watch = watch_both_sides(&world, "gus");
    let mut every_tick = tokio::time::interval(Duration::from_millis(100));
    for n in 0..crossings {
        every_tick.tick().await;
        let dy = if n % 2 == 0 { 5 } else { -5 };
        browser.step(5 + n, 0, dy).await;
    }
    let last = 4 + crossings;
    let acks = browser.acks_until(last).await;
    let (unseen_nw, unseen_sw) = watch.stop().await;
    println!("longest unseen: nw {unseen_nw:?}, sw {unseen_sw:?}");
    let seqs: Vec<u64> = acks.iter().map(|ack| ack.seq).collect();
    assert_eq!(
        seqs,
        (5..=last).collect::<Vec<_>>(),
        "contiguous, once each"
    );
    for (ack, n) in acks.iter().zip(0..) {
        assert_eq!((ack.refused, &ack.failed), (None, &None), "{ack:?}");
        let (zone, node) = if n % 2 == 0 {
            (Zone::Sw, "zn-b")
        } else {
            (Zone::Nw, "zn-a")
        };
        assert_eq!((ack.zone, ack.node.as_str()), (zone, node), "{ack:?}");
        assert_eq!(ack.generation, welcome.generation);
    }
    assert_eq!(acks.last().map(|ack| ack.relocations), Some(crossings));
    // A zone learns that a player left into its neighbour's band from the neighbour's
    // next snapshot: at most a tick and the multicast's way later.
    let most = Duration::from_millis(400);
    assert!(unseen_nw <= most, "nw lost sight of gus for {unseen_nw:?}");
    assert!(unseen_sw <= most, "sw lost sight of gus for {unseen_sw:?}");
    world.shutdown().await;
}

/// Looks at nw and sw every 20 ms until stopped; the longest each went without showing
/// `name` (in it, or in its neighbour's band).
struct Watch {
    stop: tokio::sync::oneshot::Sender<()>,
    done: tokio::task::JoinHandle<(Duration, Duration)>,
}

impl Watch {
    async fn stop(self) -> (Duration, Duration) {
        let _ = self.stop.send(());
        self.done.await.expect("the watch ran")
    }
}

fn watch_both_sides(world: &World, name: &'static str) -> Watch {
    let (stop, mut stopped) = tokio::sync::oneshot::channel();
    let (nw, sw) = (
        ZoneSpotClient::new(&world.caller, "nw"),
        ZoneSpotClient::new(&world.caller, "sw"),
    );
    let done = tokio::spawn(async move {
        let now = tokio::time::Instant::now();
        let (mut seen, mut longest) = ([now, now], [Duration::ZERO; 2]);
        while stopped.try_recv().is_err() {
            for (at, zone) in [&nw, &sw].into_iter().enumerate() {
                let view = zone.look(&Look).await.expect("look");
                let shows = view
                    .here
                    .iter()
                    .chain(&view.near)
                    .any(|dot| dot.name == name);
                let now = tokio::time::Instant::now();
                if shows {
                    seen[at] = now;
                }
                longest[at] = longest[at].max(now - seen[at]);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        (longest[0], longest[1])
    });
    Watch { stop, done }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_b5_a_browser_keeps_its_connection_and_every_ack_in_order_while_its_player_changes_node()
{
    let world = World::start().await;
    let (mut browser, _) = Browser::login(&world.browsers(), "eve").await;
    // (25,25) down to (25,45) in nw, then (25,50) in sw: zn-a, then zn-b.
    for seq in 1..=5 {
        browser.step(seq, 0, 5).await;
    }
    let acks = browser.acks_until(5).await;
    let seqs: Vec<u64> = acks.iter().map(|ack| ack.seq).collect();
    assert_eq!(
        seqs,
        [1, 2, 3, 4, 5],
        "each move acknowledged once, in order"
    );
    assert!(acks
        .iter()
        .all(|ack| ack.refused.is_none() && ack.failed.is_none()));
    let (before, after) = (&acks[3], &acks[4]);
    assert_eq!((before.zone, before.node.as_str()), (Zone::Nw, "zn-a"));
    assert_eq!((after.zone, after.node.as_str()), (Zone::Sw, "zn-b"));
    assert_eq!(after.cell, Cell { x: 25, y: 50 });
    assert_eq!(after.generation, before.generation, "the same Actor, moved");
    assert_eq!(after.relocations, before.relocations + 1);
    // The refusal order reaches the browser too.
    browser.step(6, 0, 6).await;
    let refused = browser.acks_until(6).await;
    assert_eq!(
        refused.last().and_then(|ack| ack.refused),
        Some(Refusal::TooFar)
    );
    // Views come from the zone the player stands in now.
    browser.view_until(|view| view.zone == Zone::Sw).await;
    world.shutdown().await;
}
