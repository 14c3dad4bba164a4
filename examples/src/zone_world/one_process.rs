//! The whole world in one process, on the embedded stores: the three zone nodes, the
//! gateway and the ops node, each zone on its owner, and the bots walking.

use std::time::Duration;

use zlink::Runtime;

use super::bots::start_bots;
use super::launch::{
    start_gateway, start_ops, start_zone_node, Gateway, OpsNode, Stores, ZoneNode,
};
use super::nodes::{claim_zones, ZONE_NODES};
use super::patrol::crowd;
use super::player::Player;
use super::zone::ZoneSpot;
use crate::setup::Security;

/// What the one-process world takes.
#[derive(Debug, Clone)]
pub struct Options {
    /// The game page's port (the WebSocket listener takes the next, the ops dashboard the
    /// one after); 0 takes free ports.
    pub port: u16,
    /// How many bots walk.
    pub bots: usize,
    /// The ops dashboard's control token.
    pub token: String,
}

/// The running world.
pub struct OneProcess {
    /// zn-a, zn-b and zn-c.
    pub zone_nodes: Vec<ZoneNode>,
    /// The gateway.
    pub gateway: Gateway,
    /// The ops node.
    pub ops: OpsNode,
}

impl OneProcess {
    /// Starts every node, puts each zone on its owner and the bots into the world.
    pub async fn start(options: &Options, security: &Security) -> zlink::Result<OneProcess> {
        let stores = Stores::embedded();
        let port = |n: u16| match options.port {
            0 => 0,
            port => port.saturating_add(n),
        };
        let mut zone_nodes = Vec::new();
        for (n, rid) in ZONE_NODES.iter().enumerate() {
            zone_nodes.push(start_zone_node(&stores, &security.node(n), rid).await?);
        }
        let gateway = start_gateway(&stores, &security.node(3), port(1), port(0)).await?;
        let ops = start_ops(&stores, &security.node(4), port(2), &options.token).await?;
        let world = OneProcess {
            zone_nodes,
            gateway,
            ops,
        };
        world.ready().await?;
        for node in &world.zone_nodes {
            claim_zones(node.runtime.handle()).await?;
        }
        start_bots(world.ops.runtime.handle(), &crowd(options.bots)).await?;
        Ok(world)
    }

    async fn ready(&self) -> zlink::Result<()> {
        let all = ZONE_NODES.len();
        let ready = async {
            for runtime in self.runtimes() {
                runtime.spots().ready(ZoneSpot::STABLE_TYPE, all).await?;
                runtime.actors().ready(Player::STABLE_TYPE, all).await?;
            }
            Ok(())
        };
        tokio::time::timeout(Duration::from_secs(10), ready)
            .await
            .map_err(|_| {
                zlink::Error::new(
                    zlink::ErrorKind::DeadlineExceeded,
                    "the world's nodes did not see each other within 10 s",
                )
            })?
    }

    fn runtimes(&self) -> impl Iterator<Item = &Runtime> {
        self.zone_nodes
            .iter()
            .map(|node| &node.runtime)
            .chain([&self.gateway.runtime, &self.ops.runtime])
    }

    /// The game page's URL.
    pub fn game_url(&self) -> String {
        format!("http://{}/", self.gateway.page)
    }

    /// The ops dashboard's URL.
    pub fn ops_url(&self) -> String {
        format!("http://{}/", self.ops.dashboard.local_addr())
    }

    /// Zone node `rid`.
    pub fn zone_node(&self, rid: &str) -> Option<&ZoneNode> {
        self.zone_nodes
            .iter()
            .find(|node| node.runtime.rid() == rid)
    }

    /// Stops every node: the gateway first (its browsers see `ServerDrain`), then the
    /// ops node and the zone nodes.
    pub async fn shutdown(self) {
        self.gateway.runtime.shutdown().await;
        self.ops.runtime.shutdown().await;
        for node in self.zone_nodes {
            node.runtime.shutdown().await;
        }
    }
}
