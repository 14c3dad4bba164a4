//! ClientServer channels: a Server opens its own listener for one ChannelName; Clients
//! connect to it and call; calls go only client to server.
//!
//! Register roles with [`RuntimeBuilder::client_server`](crate::RuntimeBuilder::client_server):
//!
//! ```no_run
//! # use zlink::{ClientServer, Handlers, Runtime};
//! # async fn run(handlers: Handlers) -> zlink::Result<()> {
//! let server = Runtime::builder()
//!     .mesh_name("shop")
//!     .listen("tcp://127.0.0.1:0")
//!     .client_server(ClientServer::server("pricing", handlers).listen("tcp://127.0.0.1:7001"))
//!     .build()?
//!     .start()
//!     .await?;
//! let client = Runtime::builder()
//!     .mesh_name("shop")
//!     .listen("tcp://127.0.0.1:0")
//!     .client_server(ClientServer::client("pricing").connect("tcp://127.0.0.1:7001"))
//!     .build()?
//!     .start()
//!     .await?;
//! # Ok(()) }
//! ```

mod roles;

use std::sync::Arc;

pub(crate) use roles::ClientServerRoles;

use crate::handler::{DefaultChannel, HandlerGroup};
use crate::mesh::{PeerSpec, DEFAULT_WEIGHT};

/// Default largest complete message on a ClientServer connection: 16 MiB.
pub const DEFAULT_MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// Entry points for declaring ClientServer roles.
pub struct ClientServer;

impl ClientServer {
    /// The Server role for `channel`, answering with `handlers`.
    pub fn server(channel: impl Into<String>, handlers: impl HandlerGroup) -> ClientServerServer {
        ClientServerServer {
            channel: channel.into(),
            handlers: Arc::new(handlers),
            weight: DEFAULT_WEIGHT,
            listen: "tcp://127.0.0.1:0".to_string(),
            advertise_host: None,
            max_message: DEFAULT_MAX_MESSAGE,
        }
    }

    /// The Server role for the group's default ChannelName.
    pub fn serve<G: HandlerGroup + DefaultChannel>(handlers: G) -> ClientServerServer {
        Self::server(G::CHANNEL, handlers)
    }

    /// The Client role for `channel`; add servers with
    /// [`connect`](ClientServerClient::connect) or [`discover`](ClientServerClient::discover).
    pub fn client(channel: impl Into<String>) -> ClientServerClient {
        ClientServerClient {
            channel: channel.into(),
            connect: Vec::new(),
            automatic: false,
            max_message: DEFAULT_MAX_MESSAGE,
        }
    }
}

/// A ClientServer Server registration.
pub struct ClientServerServer {
    channel: String,
    handlers: Arc<dyn HandlerGroup>,
    weight: u32,
    listen: String,
    advertise_host: Option<String>,
    max_message: usize,
}

impl ClientServerServer {
    /// The host clients dial (the bound port is kept); required when `listen` binds a
    /// wildcard such as `0.0.0.0`.
    pub fn advertise_host(mut self, host: impl Into<String>) -> Self {
        self.advertise_host = Some(host.into());
        self
    }

    /// Where this server's own listener binds (default `tcp://127.0.0.1:0`: a free port,
    /// advertised with the real port).
    pub fn listen(mut self, endpoint: impl Into<String>) -> Self {
        self.listen = endpoint.into();
        self
    }

    /// The server's weight (0..=10000, default 100; 0 takes no new selections).
    pub fn weight(mut self, weight: u32) -> Self {
        self.weight = weight;
        self
    }

    /// The largest complete message (all frames) this server accepts (default 16 MiB). It
    /// replaces the link limit on this role's connections; 0 keeps the link limit
    /// (`LinkLimits::max_message`). A message over it closes the sender's connection.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message = bytes;
        self
    }
}

/// A ClientServer Client registration.
pub struct ClientServerClient {
    channel: String,
    connect: Vec<PeerSpec>,
    automatic: bool,
    max_message: usize,
}

impl ClientServerClient {
    /// Connects to a server at `endpoint` (manual discovery; repeatable).
    pub fn connect(mut self, endpoint: impl Into<String>) -> Self {
        self.connect.push(PeerSpec::new(endpoint));
        self
    }

    /// Connects to a CURVE server at `endpoint` that must prove it holds `key` (manual;
    /// repeatable). Needs [`RuntimeBuilder::curve`](crate::RuntimeBuilder::curve).
    pub fn connect_curve(
        mut self,
        endpoint: impl Into<String>,
        key: crate::link::CurvePublicKey,
    ) -> Self {
        self.connect.push(PeerSpec::new(endpoint).server_key(key));
        self
    }

    /// Finds servers through the Location Store (needs one registered on the runtime).
    pub fn discover(mut self) -> Self {
        self.automatic = true;
        self
    }

    /// The largest complete message (all frames) this client sends and accepts (default
    /// 16 MiB; 0 keeps the link limit, `LinkLimits::max_message`). The smaller of this and
    /// the server's own limit applies to what it sends.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message = bytes;
        self
    }
}

/// A ClientServer role, as [`RuntimeBuilder::client_server`](crate::RuntimeBuilder::client_server)
/// takes it.
pub struct ClientServerDeclaration(pub(crate) ClientServerRole);

impl From<ClientServerServer> for ClientServerDeclaration {
    fn from(s: ClientServerServer) -> Self {
        ClientServerDeclaration(ClientServerRole::Server {
            channel: s.channel,
            handlers: s.handlers,
            weight: s.weight,
            listen: s.listen,
            advertise_host: s.advertise_host,
            max_message: s.max_message,
        })
    }
}

impl From<ClientServerClient> for ClientServerDeclaration {
    fn from(c: ClientServerClient) -> Self {
        ClientServerDeclaration(ClientServerRole::Client {
            channel: c.channel,
            connect: c.connect,
            automatic: c.automatic,
            max_message: c.max_message,
        })
    }
}

/// One validated ClientServer registration.
#[derive(Clone)]
pub(crate) enum ClientServerRole {
    Server {
        channel: String,
        handlers: Arc<dyn HandlerGroup>,
        weight: u32,
        listen: String,
        advertise_host: Option<String>,
        max_message: usize,
    },
    Client {
        channel: String,
        connect: Vec<PeerSpec>,
        automatic: bool,
        max_message: usize,
    },
}

impl ClientServerRole {
    pub(crate) fn channel(&self) -> &str {
        match self {
            ClientServerRole::Server { channel, .. } | ClientServerRole::Client { channel, .. } => {
                channel
            }
        }
    }
}
