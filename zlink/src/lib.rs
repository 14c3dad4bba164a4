//! zlink: stateful distributed services over ZeroMQ.
//!
//! This crate is the runtime. A node is a [`Runtime`] built with [`Runtime::builder`]: it
//! joins one RouteMesh (MeshName), listens with one ROUTER socket, connects to peers, serves
//! the channels it registered as `Server` and calls any channel it registered.
//!
//! ```no_run
//! use serde::{Deserialize, Serialize};
//! use zlink::{HandlerContext, PeerSpec, Runtime};
//!
//! #[derive(Serialize, Deserialize, zlink::Message)]
//! #[message(reply = Pong)]
//! struct Ping(u32);
//!
//! #[derive(Serialize, Deserialize, zlink::Message)]
//! struct Pong(u32);
//!
//! #[derive(Clone)]
//! struct PingService;
//!
//! #[zlink::channel(server, name = "ping")]
//! impl PingService {
//!     #[handler]
//!     async fn ping(&self, ping: Ping, _ctx: &HandlerContext) -> zlink::Result<Pong> {
//!         Ok(Pong(ping.0))
//!     }
//! }
//!
//! # async fn run() -> zlink::Result<()> {
//! let server = Runtime::builder()
//!     .mesh_name("demo")
//!     .listen("tcp://127.0.0.1:0")
//!     .serve(PingService)
//!     .build()?
//!     .start()
//!     .await?;
//! let client = Runtime::builder()
//!     .mesh_name("demo")
//!     .listen("tcp://127.0.0.1:0")
//!     .peer(PeerSpec::new(server.endpoint()))
//!     .channel_client("ping")
//!     .build()?
//!     .start()
//!     .await?;
//! client.channels().ready("ping", 1).await?;
//! let pong = PingServiceClient::on_default_channel(&client).ping(&Ping(7)).await?;
//! assert_eq!(pong.0, 7);
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

pub mod call;
pub mod channel;
pub mod config;
pub mod error;
pub mod handler;
pub mod host;
pub mod link;
pub mod mesh;
pub mod store;
pub mod wire;

pub use bytes::Bytes;
pub use call::CallOptions;
pub use channel::client_server::ClientServer;
pub use channel::fanout::Fanout;
pub use config::{PeerSpec, RuntimeBuilder, RuntimeConfig};
pub use error::{ConfigViolation, Error, ErrorKind, Result};
pub use handler::{BoxFuture, DefaultChannel, HandlerContext, HandlerGroup, Handlers, PacketKind};
pub use host::Runtime;
pub use mesh::PeerStatus;
pub use wire::{Cbor, Codec, Json, Message, Metadata, Request};
pub use zlink_macros::{channel, handler, Message};

#[doc(hidden)]
pub mod __private;
