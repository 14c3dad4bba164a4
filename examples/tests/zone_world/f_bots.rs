//! F: bots: 8 player Actors without a session, each walking its patrol by itself, moving
//! between nodes like players, turning back on a refused move, never pushed to.

use zlink_examples::zone_world::bots::start_bots;
use zlink_examples::zone_world::patrol::{bots, Axis, BotPlan, Patrol, STEP};
use zlink_examples::zone_world::player::PlayerClient;
use zlink_examples::zone_world::world::{Cell, Zone};

use crate::browser::Browser;
use crate::world::{status_until, until, World};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_f1_the_eight_bots_walk_their_patrols_and_are_never_pushed_to() {
    let world = World::start().await;
    let (mut browser, _) = Browser::login(&world.browsers(), "lu").await;
    let plans = bots();
    let welcomes = start_bots(world.caller.handle(), &plans)
        .await
        .expect("bots");
    assert_eq!(welcomes.len(), 8);
    for plan in &plans {
        let bot = PlayerClient::new(&world.caller, plan.name.as_str());
        let zone = plan.start.zone().expect("on the grid");
        // Two steps along its axis, in its zone's node.
        let walked = status_until(&bot, |s| {
            let along = match plan.patrol.axis {
                Axis::X => s.cell.x - plan.start.x,
                Axis::Y => s.cell.y - plan.start.y,
            };
            along.abs() >= 2 * STEP
        })
        .await;
        match plan.patrol.axis {
            Axis::X => assert_eq!(walked.cell.y, plan.start.y, "{}", plan.name),
            Axis::Y => assert_eq!(walked.cell.x, plan.start.x, "{}", plan.name),
        }
        assert_eq!(walked.pushed, 0, "{} was pushed to", plan.name);
        let owner = zlink_examples::zone_world::nodes::owner_of(zone);
        if walked.zone == zone {
            assert_eq!(walked.node, owner, "{} runs where its zone runs", plan.name);
        }
    }
    // Zones show the bots, marked as bots; the player's screen gets them too.
    let view = browser
        .view_until(|view| view.here.iter().any(|dot| dot.name == "bot-nw-x"))
        .await;
    assert!(view
        .here
        .iter()
        .filter(|d| d.name.starts_with("bot-"))
        .all(|d| d.bot));
    world.shutdown().await;
}

fn plan(name: &str, start: Cell, axis: Axis, direction: i32) -> BotPlan {
    BotPlan {
        name: name.into(),
        start,
        patrol: Patrol { axis, direction },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_f2_a_bot_moves_between_nodes_and_turns_back_when_a_move_is_refused() {
    let world = World::start().await;
    world.ops.set_maintenance("zn-a", true).await.expect("set");
    let bulletin = world.zone_node("zn-a").bulletin.clone();
    until(|| async { bulletin.under_maintenance() }, |on| *on).await;
    let plans = [
        // South from nw's band into sw: it moves to zn-b.
        plan("bot-south", Cell { x: 20, y: 44 }, Axis::Y, 1),
        // North from sw into nw, whose node is under maintenance: refused, it turns.
        plan("bot-north", Cell { x: 30, y: 53 }, Axis::Y, -1),
        // West off the grid: refused, it turns.
        plan("bot-west", Cell { x: 3, y: 25 }, Axis::X, -1),
    ];
    // nw's node refuses entry: the two that start in nw wait for maintenance to end.
    start_bots(world.caller.handle(), &plans)
        .await
        .expect("bots");
    let north = PlayerClient::new(&world.caller, "bot-north");
    let turned = status_until(&north, |s| s.patrol.map(|p| p.direction) == Some(1)).await;
    assert_eq!((turned.zone, turned.node.as_str()), (Zone::Sw, "zn-b"));
    assert!(
        turned.cell.y >= 50,
        "it never entered nw: {:?}",
        turned.cell
    );
    world.ops.set_maintenance("zn-a", false).await.expect("set");
    let south = PlayerClient::new(&world.caller, "bot-south");
    let crossed = status_until(&south, |s| s.zone == Zone::Sw).await;
    assert_eq!((crossed.node.as_str(), crossed.relocations), ("zn-b", 1));
    assert_eq!(crossed.cell.x, 20);
    let west = PlayerClient::new(&world.caller, "bot-west");
    let turned = status_until(&west, |s| s.patrol.map(|p| p.direction) == Some(1)).await;
    assert!(turned.cell.x >= 0 && turned.zone == Zone::Nw);
    for bot in [&north, &south, &west] {
        let status = bot
            .status(&zlink_examples::zone_world::messages::Status)
            .await;
        assert_eq!(status.expect("status").pushed, 0);
    }
    world.shutdown().await;
}
