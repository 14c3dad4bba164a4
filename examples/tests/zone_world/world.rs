//! The test world: over TCP on 127.0.0.1, with the Location and Relocation Stores and the
//! maintenance book on a private redis-server, three zone nodes (zn-a owns nw and ne, zn-b
//! sw and se, zn-c none) and a node that is the gateway (a WebSocket listener for
//! browsers) and the ops node (the board's publisher), and runs neither zones nor players.

use std::sync::Arc;
use std::time::Duration;

use zlink::object::ActorCreation;
use zlink::session::StreamListener;
use zlink::store::{RedisLocationStore, RedisOptions, RedisRelocationStore};
use zlink::{Runtime, RuntimeBuilder};
use zlink_examples::zone_world::broadcast::Bulletin;
use zlink_examples::zone_world::desired::MaintenanceBook;
use zlink_examples::zone_world::gateway::ZoneSession;
use zlink_examples::zone_world::messages::{Enter, Look, Move, Status, View, Welcome};
use zlink_examples::zone_world::nodes::{
    claim_zones, owner_of, zone_node, ZoneNodeKit, ZONE_NODES,
};
use zlink_examples::zone_world::ops::Ops;
use zlink_examples::zone_world::player::{Player, PlayerClient};
use zlink_examples::zone_world::world::Zone;
use zlink_examples::zone_world::zone::{ZoneSpot, ZoneSpotClient};
use zlink_testkit::RedisServer;

const MESH: &str = "zone-world-test";

/// One zone node and the board it follows.
pub struct ZoneNode {
    pub runtime: Runtime,
    pub bulletin: Bulletin,
}

pub struct World {
    redis: RedisServer,
    /// Calls from outside the zone nodes; also the gateway and the ops node.
    pub caller: Runtime,
    pub ops: Ops,
    pub zone_nodes: Vec<ZoneNode>,
}

impl World {
    pub async fn start() -> World {
        let redis = RedisServer::start().expect("redis-server");
        let book = MaintenanceBook::on_redis(&redis.url(), MESH)
            .await
            .expect("maintenance book");
        let mut zone_nodes = Vec::new();
        for rid in ZONE_NODES {
            zone_nodes.push(start_zone_node(&redis, rid, &book).await);
        }
        let browsers = StreamListener::new("browsers")
            .bind("ws://127.0.0.1:0")
            .session(ZoneSession::default);
        let caller = node(&redis, "caller")
            .stream_listener(browsers)
            .fanout(Ops::publisher())
            .build()
            .expect("build")
            .start()
            .await
            .expect("start");
        let ops = Ops::new(caller.handle(), book);
        ops.keep_publishing();
        let world = World {
            redis,
            caller,
            ops,
            zone_nodes,
        };
        world.ready(ZONE_NODES.len()).await;
        world.place_zones().await;
        world
    }

    /// Waits until every node sees `zone_nodes` nodes serving zones and players.
    pub async fn ready(&self, zone_nodes: usize) {
        for runtime in self.runtimes() {
            let spots = runtime.spots().ready(ZoneSpot::STABLE_TYPE, zone_nodes);
            spots.await.expect("zone nodes ready");
            let actors = runtime.actors().ready(Player::STABLE_TYPE, zone_nodes);
            actors.await.expect("player nodes ready");
        }
    }

    fn runtimes(&self) -> impl Iterator<Item = &Runtime> {
        self.zone_nodes
            .iter()
            .map(|node| &node.runtime)
            .chain([&self.caller])
    }

    /// Each zone node claims its zones: each zone then runs on its owner.
    pub async fn place_zones(&self) {
        for node in &self.zone_nodes {
            claim_zones(node.runtime.handle())
                .await
                .expect("zones claimed");
        }
        for zone in Zone::ALL {
            let found = self.caller.spots().find(zone.name()).await.expect("find");
            assert_eq!(found.map(|spot| spot.rid).as_deref(), Some(owner_of(zone)));
        }
    }

    /// Zone node `rid`.
    pub fn zone_node(&self, rid: &str) -> &ZoneNode {
        let found = self.zone_nodes.iter().find(|n| n.runtime.rid() == rid);
        found.expect("a zone node of the world")
    }

    /// Starts one more zone node, `rid`.
    pub async fn add_zone_node(&mut self, rid: &str) {
        let node = start_zone_node(&self.redis, rid, self.ops.book()).await;
        self.zone_nodes.push(node);
        self.ready(self.zone_nodes.len()).await;
    }

    /// Stops zone node `rid` cleanly (its objects are released) and starts it again under
    /// the same RID, then puts the zones back on their owners.
    pub async fn restart_zone_node(&mut self, rid: &str) -> &ZoneNode {
        let at = self.zone_nodes.iter().position(|n| n.runtime.rid() == rid);
        let old = self
            .zone_nodes
            .remove(at.expect("a zone node of the world"));
        let outcome = old.runtime.shutdown().await;
        assert!(outcome.is_clean(), "{outcome}");
        let node = start_zone_node(&self.redis, rid, self.ops.book()).await;
        self.zone_nodes.push(node);
        self.ready(self.zone_nodes.len()).await;
        self.place_zones().await;
        self.zone_node(rid)
    }

    /// A player entered into the world, and its client from the caller node.
    pub async fn player(&self, name: &str) -> (PlayerClient, Welcome) {
        let created = self
            .caller
            .actors()
            .get_or_create(name, Player::STABLE_TYPE);
        match created.await.expect("player created") {
            ActorCreation::Created(_) | ActorCreation::Existing(_) => {}
        }
        let player = PlayerClient::new(&self.caller, name);
        let welcome = player.enter(&Enter { bot: None }).await.expect("entered");
        (player, welcome)
    }

    /// The gateway's browser listener, as `HOST:PORT`.
    pub fn browsers(&self) -> String {
        let endpoint = self.caller.stream_endpoint("browsers").expect("listening");
        endpoint.trim_start_matches("ws://").to_string()
    }

    pub async fn shutdown(self) {
        self.caller.shutdown().await;
        for node in self.zone_nodes {
            node.runtime.shutdown().await;
        }
    }
}

fn node(redis: &RedisServer, rid: &str) -> RuntimeBuilder {
    let url = redis.url();
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
}

async fn start_zone_node(redis: &RedisServer, rid: &str, book: &MaintenanceBook) -> ZoneNode {
    let kit = ZoneNodeKit::from_book(rid, book).await.expect("the book");
    let builder = zone_node(node(redis, rid), rid, &kit).expect("zone node");
    let runtime = builder
        .build()
        .expect("build")
        .start()
        .await
        .expect("start");
    kit.desk.open(&runtime);
    ZoneNode {
        runtime,
        bulletin: kit.bulletin,
    }
}

/// Asks `probe` again until its answer satisfies `done`, for at most 10 s.
pub async fn until<T: std::fmt::Debug, F: std::future::Future<Output = T>>(
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
pub async fn walk(
    player: &PlayerClient,
    seqs: std::ops::RangeInclusive<u64>,
    (dx, dy): (i32, i32),
) {
    for seq in seqs {
        player.step(&Move { seq, dx, dy }).await.expect("move");
    }
}

/// The player's status, once `done` holds.
pub async fn status_until(player: &PlayerClient, done: impl Fn(&Welcome) -> bool) -> Welcome {
    until(
        || async { player.status(&Status).await.expect("status") },
        done,
    )
    .await
}

/// What `zone` shows, once `done` holds.
pub async fn view_until(caller: &Runtime, zone: Zone, done: impl Fn(&View) -> bool) -> View {
    let zone = ZoneSpotClient::new(caller, zone.name());
    until(|| async { zone.look(&Look).await.expect("look") }, done).await
}
