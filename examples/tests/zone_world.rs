//! Zone World's scenarios, over TCP on 127.0.0.1 with the Location and Relocation Stores
//! on a private redis-server: two zone nodes (zn-a owns nw and ne, zn-b owns sw and se)
//! and a caller node that runs neither zones nor players.

use std::sync::Arc;
use std::time::Duration;

use zlink::object::ActorCreation;
use zlink::session::StreamListener;
use zlink::store::{RedisLocationStore, RedisOptions, RedisRelocationStore};
use zlink::Runtime;
use zlink_examples::chat::client::{connect, Incoming, Transport, SEND};
use zlink_examples::zone_world::gateway::ZoneSession;
use zlink_examples::zone_world::messages::{Ack, Enter, Look, Move, Status, View, Welcome};
use zlink_examples::zone_world::nodes::{place_zones, zone_node, OWNERS};
use zlink_examples::zone_world::player::{Player, PlayerClient};
use zlink_examples::zone_world::world::{Cell, Refusal, Zone, START};
use zlink_examples::zone_world::zone::{Maintenance, ZoneSpot, ZoneSpotClient};
use zlink_testkit::RedisServer;

const MESH: &str = "zone-world-test";

struct World {
    _redis: RedisServer,
    /// Calls from outside the zone nodes; it is also the gateway, with a WebSocket
    /// listener for browsers.
    caller: Runtime,
    zone_nodes: Vec<Runtime>,
    maintenance: Vec<Maintenance>,
}

impl World {
    async fn start() -> World {
        let redis = RedisServer::start().expect("redis-server");
        let url = redis.url();
        let node = |rid: &str| {
            let location = RedisLocationStore::new(RedisOptions::new(&url, MESH)).expect("store");
            let relocation = RedisRelocationStore::new(RedisOptions::new(&url, "zw-relocation"))
                .expect("relocation store");
            Runtime::builder()
                .mesh_name(MESH)
                .rid(rid)
                .listen("tcp://127.0.0.1:0")
                .location_store(Arc::new(location))
                .relocation_store(Arc::new(relocation))
                .discovery_interval(Duration::from_millis(100))
        };
        let (mut zone_nodes, mut maintenance) = (Vec::new(), Vec::new());
        for (rid, _) in OWNERS {
            let flag = Maintenance::default();
            let built = zone_node(node(rid), &flag).expect("zone node");
            zone_nodes.push(built.build().expect("build").start().await.expect("start"));
            maintenance.push(flag);
        }
        let browsers = StreamListener::new("browsers")
            .bind("ws://127.0.0.1:0")
            .session(ZoneSession::default);
        let caller = node("caller")
            .stream_listener(browsers)
            .build()
            .expect("build")
            .start()
            .await
            .expect("start");
        for runtime in zone_nodes.iter().chain([&caller]) {
            runtime
                .spots()
                .ready(ZoneSpot::STABLE_TYPE, 2)
                .await
                .expect("zone nodes ready");
            runtime
                .actors()
                .ready(Player::STABLE_TYPE, 2)
                .await
                .expect("player nodes ready");
        }
        let nodes: Vec<&Runtime> = zone_nodes.iter().collect();
        let zones = place_zones(&nodes).await.expect("zones placed");
        for (zone, spot) in Zone::ALL.iter().zip(&zones) {
            assert_eq!(spot.rid, zlink_examples::zone_world::nodes::owner_of(*zone));
        }
        World {
            _redis: redis,
            caller,
            zone_nodes,
            maintenance,
        }
    }

    /// A player entered into the world, and its client from the caller node.
    async fn player(&self, name: &str) -> (PlayerClient, Welcome) {
        match self
            .caller
            .actors()
            .get_or_create(name, Player::STABLE_TYPE)
            .await
            .expect("player created")
        {
            ActorCreation::Created(_) | ActorCreation::Existing(_) => {}
        }
        let player = PlayerClient::new(&self.caller, name);
        let welcome = player.enter(&Enter { bot: false }).await.expect("entered");
        (player, welcome)
    }

    /// The gateway's browser listener, as `HOST:PORT`.
    fn browsers(&self) -> String {
        let endpoint = self.caller.stream_endpoint("browsers").expect("listening");
        endpoint.trim_start_matches("ws://").to_string()
    }

    async fn shutdown(self) {
        self.caller.shutdown().await;
        for node in self.zone_nodes {
            node.shutdown().await;
        }
    }
}

/// Asks `probe` again until its answer satisfies `done`, for at most 10 s.
async fn until<T: std::fmt::Debug, F: std::future::Future<Output = T>>(
    probe: impl Fn() -> F,
    done: impl Fn(&T) -> bool,
) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let answer = probe().await;
        if done(&answer) {
            return answer;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not reached within 10 s: {answer:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Moves `player` by `step` once for each sequence number in `seqs`.
async fn walk(player: &PlayerClient, seqs: std::ops::RangeInclusive<u64>, (dx, dy): (i32, i32)) {
    for seq in seqs {
        player.step(&Move { seq, dx, dy }).await.expect("move");
    }
}

/// The player's status, once `done` holds.
async fn status_until(player: &PlayerClient, done: impl Fn(&Welcome) -> bool) -> Welcome {
    until(
        || async { player.status(&Status).await.expect("status") },
        done,
    )
    .await
}

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
async fn zw_e6_maintenance_of_a_node_blocks_entry_into_its_zones_but_not_moves_inside_them() {
    let world = World::start().await;
    let (player, _) = world.player("cy").await;
    status_until(&player, |s| s.node == "zn-a").await;
    walk(&player, 1..=4, (0, 5)).await;
    status_until(&player, |s| s.cell == Cell { x: 25, y: 45 }).await;
    world.maintenance[1].set(true);
    walk(&player, 5..=5, (0, 5)).await;
    // A later move inside nw runs after the refused entry: once it shows, the entry was
    // refused for good.
    walk(&player, 6..=6, (1, 0)).await;
    let after = status_until(&player, |s| s.cell == Cell { x: 26, y: 45 }).await;
    assert_eq!((after.zone, after.node.as_str()), (Zone::Nw, "zn-a"));
    world.maintenance[1].set(false);
    walk(&player, 7..=7, (0, 5)).await;
    let entered = status_until(&player, |s| s.zone == Zone::Sw).await;
    assert_eq!(entered.node, "zn-b");
    world.shutdown().await;
}

/// What `zone` shows, once `done` holds.
async fn view_until(caller: &Runtime, zone: Zone, done: impl Fn(&View) -> bool) -> View {
    let zone = ZoneSpotClient::new(caller, zone.name());
    until(|| async { zone.look(&Look).await.expect("look") }, done).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_b1_a_player_in_a_border_band_shows_in_the_neighbour_zone_on_the_other_node_too() {
    let world = World::start().await;
    let (player, _) = world.player("di").await;
    status_until(&player, |s| s.node == "zn-a").await;
    // (25,25) -> (25,45): nw's band toward sw, which runs on the other node.
    walk(&player, 1..=4, (0, 5)).await;
    status_until(&player, |s| s.cell == Cell { x: 25, y: 45 }).await;
    let shows = |view: &View| view.near.iter().any(|dot| dot.name == "di");
    let south = view_until(&world.caller, Zone::Sw, shows).await;
    assert!(south.here.is_empty(), "di stands in nw, not in sw");
    let nw = view_until(&world.caller, Zone::Nw, |v| {
        v.here.iter().any(|d| d.name == "di")
    })
    .await;
    assert!(
        !shows(&nw),
        "a zone does not show its own players as neighbours"
    );
    // ne shares no edge with (25,45)'s band toward it: it never shows di.
    let ne = ZoneSpotClient::new(&world.caller, "ne")
        .look(&Look)
        .await
        .expect("look");
    assert!(!shows(&ne));
    // Out of the band (y 40..49 is in it, 35 is not): the next snapshot lacks di.
    walk(&player, 5..=6, (0, -5)).await;
    view_until(&world.caller, Zone::Sw, |view| !shows(view)).await;
    world.shutdown().await;
}

/// Reads pushes until the ack of move `last`; every ack, in arrival order.
async fn acks_until(incoming: &mut tokio::sync::mpsc::Receiver<Incoming>, last: u64) -> Vec<Ack> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut acks = Vec::new();
    while acks.last().map(|ack: &Ack| ack.seq) != Some(last) {
        let packet = tokio::time::timeout_at(deadline, incoming.recv())
            .await
            .unwrap_or_else(|_| panic!("ack {last} not seen within 10 s: {acks:?}"))
            .expect("the connection stayed open");
        if packet.kind == SEND && packet.name == "ack" {
            acks.push(serde_json::from_slice(&packet.payload).expect("an ack"));
        }
    }
    acks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_b5_a_browser_keeps_its_connection_and_every_ack_in_order_while_its_player_changes_node()
{
    let world = World::start().await;
    let (client, mut incoming) = connect(&world.browsers(), Transport::WebSocket)
        .await
        .expect("connected");
    client
        .request(1, "login", &serde_json::json!({ "name": "eve" }))
        .await
        .expect("login sent");
    // (25,25) down to (25,45) in nw, then (25,50) in sw: zn-a, then zn-b.
    for seq in 1..=5 {
        let step = serde_json::json!({ "seq": seq, "dx": 0, "dy": 5 });
        client.send("move", &step).await.expect("move sent");
    }
    let acks = acks_until(&mut incoming, 5).await;
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
    let far = serde_json::json!({ "seq": 6, "dx": 0, "dy": 6 });
    client.send("move", &far).await.expect("move sent");
    let refused = acks_until(&mut incoming, 6).await;
    assert_eq!(
        refused.last().and_then(|ack| ack.refused),
        Some(Refusal::TooFar)
    );
    world.shutdown().await;
}
