//! C: border sync: a zone shows who stands in its neighbours' bands toward it, from their
//! latest snapshots, and forgets a neighbour that went silent after 3 ticks.

use zlink_examples::zone_world::messages::{Look, View};
use zlink_examples::zone_world::snapshots::EXPIRY_TICKS;
use zlink_examples::zone_world::world::{Cell, Zone};
use zlink_examples::zone_world::zone::ZoneSpotClient;

use crate::world::{status_until, view_until, walk, World};

fn shows(name: &str) -> impl Fn(&View) -> bool + '_ {
    move |view| view.near.iter().any(|dot| dot.name == name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_c1_a_player_in_a_border_band_shows_in_the_neighbour_zone_on_the_other_node_too() {
    let world = World::start().await;
    let (player, _) = world.player("di").await;
    status_until(&player, |s| s.node == "zn-a").await;
    // (25,25) -> (25,45): nw's band toward sw, which runs on the other node.
    walk(&player, 1..=4, (0, 5)).await;
    status_until(&player, |s| s.cell == Cell { x: 25, y: 45 }).await;
    let south = view_until(&world.caller, Zone::Sw, shows("di")).await;
    assert!(south.here.is_empty(), "di stands in nw, not in sw");
    let nw = view_until(&world.caller, Zone::Nw, |v| {
        v.here.iter().any(|d| d.name == "di")
    })
    .await;
    assert!(
        !shows("di")(&nw),
        "a zone does not show its own players as neighbours"
    );
    // ne shares no edge with (25,45)'s band toward it: it never shows di.
    let ne = ZoneSpotClient::new(&world.caller, "ne").look(&Look).await;
    assert!(!shows("di")(&ne.expect("look")));
    // Out of the band (y 40..49 is in it, 35 is not): the next snapshot lacks di.
    walk(&player, 5..=6, (0, -5)).await;
    view_until(&world.caller, Zone::Sw, |view| !shows("di")(view)).await;
    world.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_c2_a_neighbour_that_stops_sending_snapshots_is_forgotten_after_three_ticks() {
    let mut world = World::start().await;
    let (player, _) = world.player("ike").await;
    status_until(&player, |s| s.node == "zn-a").await;
    walk(&player, 1..=4, (0, 5)).await;
    view_until(&world.caller, Zone::Sw, shows("ike")).await;
    // nw's node stops: nw sends no more snapshots; sw keeps the last one 3 ticks.
    let zn_a = world.zone_nodes.remove(0);
    zn_a.runtime.shutdown().await;
    let sw = ZoneSpotClient::new(&world.caller, "sw");
    let stopped = sw.look(&Look).await.expect("look").tick;
    let forgotten = view_until(&world.caller, Zone::Sw, |view| !shows("ike")(view)).await;
    // Zones tick at their own offsets within a tick: sw's tick read just after nw's last
    // snapshot may still be the one before it.
    assert!(
        forgotten.tick <= stopped + 1 + EXPIRY_TICKS,
        "forgotten at tick {}, {} ticks after nw stopped",
        forgotten.tick,
        forgotten.tick - stopped
    );
    assert!(
        forgotten.near.is_empty(),
        "nothing else came from nw either"
    );
    world.shutdown().await;
}
