//! Starting Zone World's nodes, one role at a time: a zone node, the gateway (the
//! browsers' WebSocket listener and the game page) and the ops node (the board's
//! publisher and the dashboard with the Zone World panel). One process may start them
//! all on the embedded stores ([`Stores::embedded`]), or each process one role on Redis
//! ([`Stores::redis`]).

use std::hash::{BuildHasher, RandomState};
use std::net::SocketAddr;
use std::sync::Arc;

use zlink::session::StreamListener;
use zlink::store::{
    LocationStore, RedisLocationStore, RedisOptions, RedisRelocationStore, RelocationStore,
};
use zlink::{Runtime, RuntimeBuilder};
use zlink_dashboard::{Dashboard, ServedDashboard};

use super::desired::MaintenanceBook;
use super::gateway::ZoneSession;
use super::nodes::{zone_node, ZoneNodeKit};
use super::ops::Ops;
use crate::setup::Security;

/// The mesh's name (and the Redis key prefix of its Location Store).
pub const MESH: &str = "zone-world";
/// The game page's HTML; `{{STREAM_URL}}` is the gateway's WebSocket endpoint.
pub const GAME_PAGE: &str = include_str!("game.html");
/// The name of the gateway's WebSocket listener.
pub const BROWSERS: &str = "browsers";

/// Where every node keeps locations, moving state and the maintenance settings.
#[derive(Clone)]
pub struct Stores {
    location: Arc<dyn LocationStore>,
    relocation: Arc<dyn RelocationStore>,
    book: MaintenanceBook,
}

impl Stores {
    /// In this process's memory: every node of the world must run in this process.
    pub fn embedded() -> Stores {
        Stores {
            location: <dyn LocationStore>::in_memory(),
            relocation: <dyn RelocationStore>::in_memory(),
            book: MaintenanceBook::in_memory(),
        }
    }

    /// On the Redis at `url`, shared by processes.
    pub async fn redis(url: &str) -> zlink::Result<Stores> {
        let location = RedisLocationStore::new(RedisOptions::new(url, MESH))?;
        let moving = RedisOptions::new(url, format!("{MESH}-relocation"));
        Ok(Stores {
            location: Arc::new(location),
            relocation: Arc::new(RedisRelocationStore::new(moving)?),
            book: MaintenanceBook::on_redis(url, MESH).await?,
        })
    }

    /// The maintenance settings.
    pub fn book(&self) -> &MaintenanceBook {
        &self.book
    }

    /// A node `rid` of the world on these stores, listening on 127.0.0.1.
    pub fn node(&self, rid: &str) -> RuntimeBuilder {
        Runtime::builder()
            .mesh_name(MESH)
            .rid(rid)
            .listen("tcp://127.0.0.1:0")
            .location_store(self.location.clone())
            .relocation_store(self.relocation.clone())
    }
}

/// A started zone node.
pub struct ZoneNode {
    /// The node.
    pub runtime: Runtime,
    /// Its board and desk.
    pub kit: ZoneNodeKit,
}

/// Starts zone node `rid` (its maintenance as the book says), its desk open. It claims
/// its zones once asked ([`claim_zones`](super::nodes::claim_zones)).
pub async fn start_zone_node(
    stores: &Stores,
    security: &Security,
    rid: &str,
) -> zlink::Result<ZoneNode> {
    let kit = ZoneNodeKit::from_book(rid, stores.book()).await?;
    let builder = zone_node(stores.node(rid), rid, &kit)?;
    let runtime = crate::operate::start(security, builder).await?;
    kit.desk.open(&runtime);
    Ok(ZoneNode { runtime, kit })
}

/// The started gateway.
pub struct Gateway {
    /// The node.
    pub runtime: Runtime,
    /// Where the game page is served.
    pub page: SocketAddr,
    /// The WebSocket endpoint browsers connect to (`ws://HOST:PORT`).
    pub stream: String,
}

/// Starts the gateway "gateway": browsers connect at `ws://127.0.0.1:{websocket}` and
/// get the game page at `http://127.0.0.1:{page}/` (0: free ports).
pub async fn start_gateway(
    stores: &Stores,
    security: &Security,
    websocket: u16,
    page: u16,
) -> zlink::Result<Gateway> {
    let browsers = StreamListener::new(BROWSERS)
        .bind(format!("ws://127.0.0.1:{websocket}"))
        .session(ZoneSession::default);
    let builder = stores.node("gateway").stream_listener(browsers);
    let runtime = crate::operate::start(security, builder).await?;
    let stream = runtime.stream_endpoint(BROWSERS).unwrap_or_default();
    let page = crate::page_server::serve(page, GAME_PAGE, &format!("{stream}/"))
        .await
        .map_err(|e| unavailable("the game page", e))?;
    Ok(Gateway {
        runtime,
        page,
        stream,
    })
}

/// The started ops node.
pub struct OpsNode {
    /// The node.
    pub runtime: Runtime,
    /// Its side of the board.
    pub ops: Ops,
    /// Its dashboard, with the Zone World panel and the controls.
    pub dashboard: ServedDashboard,
}

/// Starts the ops node "ops": it publishes the board (every second, and on each change),
/// and serves its dashboard with the Zone World panel at `http://127.0.0.1:{port}/`, its
/// controls unlocked by `token` (16 characters or more).
pub async fn start_ops(
    stores: &Stores,
    security: &Security,
    port: u16,
    token: &str,
) -> zlink::Result<OpsNode> {
    let builder = stores.node("ops").fanout(Ops::publisher());
    let runtime = crate::operate::start(security, builder).await?;
    let ops = Ops::new(runtime.handle(), stores.book().clone());
    ops.keep_publishing();
    let panel = super::panel::panel(runtime.handle(), runtime.operator(), ops.clone())?;
    let mut dashboard = Dashboard::new(runtime.operator())
        .panel(panel)
        .controls(runtime.controls(), token)?;
    if let Some(recorder) = crate::operate::recorder() {
        dashboard = dashboard.metrics(recorder);
    }
    let dashboard = dashboard
        .serve(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .map_err(|e| unavailable("the ops dashboard", e))?;
    Ok(OpsNode {
        runtime,
        ops,
        dashboard,
    })
}

/// A fresh control token for the ops dashboard (32 hex digits), when none is given.
pub fn fresh_token() -> String {
    let random = RandomState::new();
    format!("{:016x}{:016x}", random.hash_one(1u8), random.hash_one(2u8))
}

fn unavailable(what: &str, e: std::io::Error) -> zlink::Error {
    zlink::Error::new(
        zlink::ErrorKind::Unavailable,
        format!("{what} could not listen: {e}"),
    )
}
