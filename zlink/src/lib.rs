//! zlink: stateful distributed services over ZeroMQ.
//!
//! This crate is the runtime. A node is a [`Runtime`] built with [`Runtime::builder`]: it
//! joins one RouteMesh (MeshName), listens with one ROUTER socket, connects to peers, serves
//! the channels it registered as `Server` and calls any channel it registered.
//!
//! ```no_run
//! use zlink::{Handlers, Runtime, PeerSpec};
//! # #[derive(serde::Serialize, serde::Deserialize)] struct Ping(u32);
//! # #[derive(serde::Serialize, serde::Deserialize)] struct Pong(u32);
//! # zlink::cbor_message!(Ping, "Ping");
//! # zlink::cbor_message!(Pong, "Pong");
//! # impl zlink::Request for Ping { type Reply = Pong; }
//! # async fn run() -> zlink::Result<()> {
//! let server = Runtime::builder()
//!     .mesh_name("demo")
//!     .listen("tcp://127.0.0.1:0")
//!     .channel_server("ping", Handlers::new().on_request(|_ctx, p: Ping| async move { Ok(Pong(p.0)) }))
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
//! client.wait_for_peers(std::time::Duration::from_secs(5), |p| !p.is_empty()).await?;
//! let pong: Pong = client.request_to_channel("ping", &Ping(7)).await?;
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

pub mod call;
pub mod channel;
pub mod config;
pub mod error;
pub mod host;
pub mod link;
pub mod mesh;
pub mod wire;

pub use call::CallOptions;
pub use channel::{HandlerContext, HandlerGroup, Handlers, PacketKind};
pub use config::{PeerSpec, RuntimeBuilder, RuntimeConfig};
pub use error::{ConfigViolation, Error, ErrorKind, Result};
pub use host::Runtime;
pub use mesh::PeerStatus;
pub use wire::{Message, Metadata, Request};

#[doc(hidden)]
pub mod __private {
    pub use bytes::Bytes;
}

/// Implements [`Message`] for a serde type with the default CBOR codec:
/// `zlink::cbor_message!(MyType, "MyPacketName");`
#[macro_export]
macro_rules! cbor_message {
    ($ty:ty, $name:expr) => {
        impl $crate::Message for $ty {
            const PACKET_NAME: &'static str = $name;
            fn encode(&self) -> $crate::Result<$crate::__private::Bytes> {
                $crate::wire::cbor_encode(self)
            }
            fn decode(bytes: &[u8]) -> $crate::Result<Self> {
                $crate::wire::cbor_decode(bytes)
            }
        }
    };
}
