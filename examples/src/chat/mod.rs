//! The gateway chat: outside clients log in to a gateway node over TCP or WebSocket, each
//! session bound to the client's player Actor on one of two player nodes, and chat in
//! rooms that live on a hall node. A player node can be drained while the clients stay
//! connected: their players move to the other node, and no line is lost.
//!
//! - [`messages`]: what clients and nodes say;
//! - [`player`], [`room`]: the player Actor and the room Spot;
//! - [`gateway`]: the session type of the gateway's listeners;
//! - [`client`]: a small chat client (the bundled one, and the bots');
//! - [`bots`]: clients that talk and check what they hear;
//! - [`page`]: the chat page a browser opens.

pub mod bots;
pub mod client;
pub mod gateway;
pub mod messages;
pub mod page;
pub mod player;
pub mod room;

use std::time::Duration;

use zlink::session::{StreamListener, TlsIdentity};
use zlink::store::{LocationStore, RelocationStore};
use zlink::Runtime;

use crate::operate;
use crate::setup::Security;
use gateway::ChatSession;
use player::Player;
use room::Room;

/// The mesh's name.
pub const MESH: &str = "chat";
/// The two player nodes (`--drain` takes one of them).
pub const PLAYER_NODES: [&str; 2] = ["players-1", "players-2"];

/// Where and how the gateway listens for clients.
#[derive(Clone, Default)]
pub struct ClientPorts {
    /// TCP packets (`127.0.0.1:PORT`; 0 picks a free port).
    pub tcp: u16,
    /// WebSocket (`127.0.0.1:PORT`; 0 picks a free port).
    pub websocket: u16,
    /// Both listeners run inside TLS with this certificate (`tls://`, `wss://`).
    pub tls: Option<TlsIdentity>,
    /// Caps each listener's sessions (the listener's default otherwise).
    pub max_sessions: Option<usize>,
}

impl ClientPorts {
    /// One of the gateway's listeners, as these settings have it.
    fn listener(&self, name: &str, scheme: &str, port: u16) -> StreamListener {
        let mut listener = StreamListener::new(name).bind(format!("{scheme}://127.0.0.1:{port}"));
        if let Some(tls) = &self.tls {
            listener = listener.tls(tls.clone());
        }
        if let Some(max) = self.max_sessions {
            listener = listener.max_sessions(max);
        }
        listener
    }
}

/// The four nodes of one process, on the embedded stores.
pub struct ChatMesh {
    /// Holds the clients' sessions; serves no objects.
    pub gateway: Runtime,
    /// Runs the rooms.
    pub hall: Runtime,
    /// Run the players.
    pub players: [Runtime; 2],
}

impl ChatMesh {
    /// Starts the nodes and waits until each can reach what it needs.
    pub async fn start(ports: &ClientPorts, security: &Security) -> zlink::Result<ChatMesh> {
        let location = <dyn LocationStore>::in_memory();
        let relocation = <dyn RelocationStore>::in_memory();
        let node = |rid: &str| {
            Runtime::builder()
                .mesh_name(MESH)
                .rid(rid)
                .listen("tcp://127.0.0.1:0")
                .location_store(location.clone())
                .relocation_store(relocation.clone())
        };
        // ANCHOR: gateway
        let gateway = node("gateway")
            .stream_listener(
                ports
                    .listener("tcp-clients", "tcp", ports.tcp)
                    .session(ChatSession::default),
            )
            .stream_listener(
                ports
                    .listener("browsers", "ws", ports.websocket)
                    .session(ChatSession::default),
            );
        let gateway = operate::start(&security.node(0), gateway).await?;
        // ANCHOR_END: gateway
        let hall = node("hall").spot_type(Room::spot_type(|_| Room::default())?);
        let hall = operate::start(&security.node(1), hall).await?;
        let mut players = Vec::new();
        for (n, rid) in PLAYER_NODES.iter().enumerate() {
            let player = node(rid).actor_type(Player::actor_type(|_| Player::default())?);
            players.push(operate::start(&security.node(2 + n), player).await?);
        }
        let [first, second] = <[Runtime; 2]>::try_from(players)
            .map_err(|_| zlink::Error::InvalidArgument("two player nodes".into()))?;
        let mesh = ChatMesh {
            gateway,
            hall,
            players: [first, second],
        };
        mesh.ready().await?;
        Ok(mesh)
    }

    async fn ready(&self) -> zlink::Result<()> {
        let wait = Duration::from_secs(10);
        let ready = async {
            self.gateway.actors().ready(Player::STABLE_TYPE, 2).await?;
            for node in &self.players {
                node.spots().ready(Room::STABLE_TYPE, 1).await?;
            }
            self.hall.actors().ready(Player::STABLE_TYPE, 2).await
        };
        tokio::time::timeout(wait, ready).await.map_err(|_| {
            zlink::Error::new(
                zlink::ErrorKind::DeadlineExceeded,
                "the chat nodes did not see each other within 10 s",
            )
        })?
    }

    /// The gateway's client endpoints: (TCP, WebSocket), as `scheme://HOST:PORT`
    /// (`tls://` and `wss://` under TLS).
    pub fn endpoints(&self) -> (String, String) {
        let endpoint = |listener: &str| self.gateway.stream_endpoint(listener).unwrap_or_default();
        (endpoint("tcp-clients"), endpoint("browsers"))
    }

    /// The gateway's client addresses: (TCP, WebSocket), as `HOST:PORT`.
    pub fn addresses(&self) -> (String, String) {
        let address = |listener: &str| {
            self.gateway
                .stream_endpoint(listener)
                .and_then(|e| e.split_once("://").map(|(_, a)| a.to_string()))
                .unwrap_or_default()
        };
        (address("tcp-clients"), address("browsers"))
    }

    /// The player node called `rid`.
    pub fn player_node(&self, rid: &str) -> Option<&Runtime> {
        self.players.iter().find(|node| node.rid() == rid)
    }

    /// Moves every player `rid` runs to the other player node, live; a line about it.
    pub async fn drain(&self, rid: &str) -> zlink::Result<String> {
        let node = self.player_node(rid).ok_or_else(|| {
            zlink::Error::InvalidArgument(format!(
                "--drain takes {} or {}, not {rid:?}",
                PLAYER_NODES[0], PLAYER_NODES[1]
            ))
        })?;
        let started = tokio::time::Instant::now();
        let report = node.relocate_all().await?;
        Ok(format!(
            "moved {} players off {rid} in {:.1} ms; {} could not move, {} moves failed",
            report.moved.len(),
            started.elapsed().as_secs_f64() * 1000.0,
            report.blocked.len(),
            report.failed.len()
        ))
    }

    /// Stops every node.
    pub async fn shutdown(self) {
        self.gateway.shutdown().await;
        for node in self.players {
            node.shutdown().await;
        }
        self.hall.shutdown().await;
    }
}
