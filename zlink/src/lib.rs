//! zlink: stateful distributed services over ZeroMQ.
//!
//! A node is a [`Runtime`] built with [`Runtime::builder`]. Nodes with one MeshName form
//! a mesh; they find each other through a Location Store ([`store`]: Redis, or the
//! embedded in-memory one) or a list of peers, and talk ZMTP 3.1, optionally under CURVE
//! ([`security`]). On it you build with:
//!
//! - **Spots and Actors** ([`object`]): stateful objects with a global ID, created once,
//!   run one message at a time on their owner and called by ID from any node, movable
//!   between nodes live. Declare them with [`macro@spot`] and [`macro@actor`]; reach them with
//!   [`Handle::spots`] and [`Handle::actors`] and the generated typed clients.
//! - **Channels**: stateless services called by name, one server picked by weight
//!   ([`macro@channel`], [`Handle::channels`]); node-direct calls ([`Handle::nodes`]);
//!   ClientServer listeners for outside callers ([`client_server`]) and lossy PUB/SUB
//!   events ([`fanout`]).
//!
//! The user guide is the book in the repository's `book/` directory: start with its
//! "Getting started" chapter (a first Spot, two nodes and a test), whose code is the
//! repository's `getting-started/` crate. [`Runtime::status`] is one serializable
//! snapshot of a node, for monitoring.
//!
//! A channel server and a client, in one process:
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
//!     .build()?
//!     .start()
//!     .await?;
//! client.channels().ready("ping", 1).await?;
//! let pong = PingServiceClient::on_default_channel(&client).ping(&Ping(7)).await?;
//! assert_eq!(pong.0, 7);
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

mod address;
mod call;
mod channel;
mod error;
mod handle;
mod handler;
mod host;
#[cfg(test)]
mod layering_tests;
mod link;
mod mesh;
pub mod object;
pub mod session;
pub mod store;
mod sync;
pub mod telemetry;
/// The wire types, for the testkit's hostile peers and the attack tests: not part of the
/// application API (applications use the re-exports at the crate root).
#[doc(hidden)]
pub mod wire;

pub use async_trait::async_trait;
pub use bytes::Bytes;
pub use call::CallOptions;
pub use call::{BoxFuture, PacketKind};
pub use channel::client_server::ClientServer;
pub use channel::fanout::Fanout;
pub use error::{ConfigViolation, Error, ErrorKind, Refusal, Result};
pub use handle::{
    Actors, Call, CallFuture, Channels, DiscoveryHandle, Expect, FanoutHandle, Handle, Multicast,
    MulticastPublish, Nodes, OneWay, Outgoing, Publish, Reply, Spots,
};
pub use handler::{DefaultChannel, HandlerContext, HandlerGroup, Handlers};
#[cfg(feature = "test-faults")]
pub use host::config::TestFaults;
pub use host::config::{
    RuntimeBuilder, RuntimeConfig, DEFAULT_DISCOVERY_INTERVAL, DEFAULT_STORE_FAILURE_GRACE,
};
pub use host::stop_signal;
pub use host::{
    ClientServerStatus, Controls, FanoutStatus, Health, HealthCheck, Operator, PlacementStatus,
    Runtime, RuntimeStatus, ShutdownOptions, ShutdownOutcome, ShutdownReason, StopSignal,
    StoreStatus, TypePlacement,
};
pub use link::LinkLimits;
pub use mesh::{generate_rid, DiscoveryStatus, PeerSpec, PeerStatus, DEFAULT_WEIGHT, MAX_WEIGHT};
pub use wire::{
    cbor_decode, cbor_encode, Cbor, Codec, Json, Message, Metadata, Payload, Raw, Request,
};
pub use zlink_macros::{actor, channel, handler, session, spot, Message};

/// ClientServer roles: a Server's own listener for outside callers, Clients that connect
/// to it. Declare them with [`ClientServer`] and
/// [`RuntimeBuilder::client_server`].
pub mod client_server {
    pub use crate::channel::client_server::{
        ClientServer, ClientServerClient, ClientServerDeclaration, ClientServerServer,
        DEFAULT_MAX_MESSAGE,
    };
}

/// Fanout roles: lossy PUB/SUB events with topics. Declare them with [`Fanout`] and
/// [`RuntimeBuilder::fanout`].
pub mod fanout {
    pub use crate::channel::fanout::{
        Fanout, FanoutDeclaration, FanoutPublisherSpec, FanoutSubscriberSpec, PublisherStatus,
        BEACON_PAYLOAD, BEACON_TOPIC, DEFAULT_MAX_SUBSCRIBERS, DEFAULT_MAX_SUBSCRIPTIONS,
        DEFAULT_SEND_HIGH_WATER_MARK,
    };
}

/// Trace context across nodes: the W3C `traceparent` and the `flow_id` a message carries
/// in its metadata, from its caller to the handler that runs it and on into that
/// handler's calls; how a tracing backend plugs in, and what zlink samples (nothing).
pub mod trace {
    pub use crate::wire::trace_context::{
        current, traced, TraceContext, TracePropagation, FLOW_ID, TRACEPARENT,
    };
}

/// Link security: CURVE keys (a node's security identity) and whom a listener admits.
pub mod security {
    pub use crate::link::{CurveKeypair, CurvePublicKey, KeyError, LinkLimits, Trust};
}

/// The transport boundary: what [`RuntimeBuilder::transport`] plugs in instead of the
/// default ZMTP over TCP (the testkit's in-memory network that injects faults does).
pub mod transport {
    pub use crate::link::{
        next_conn_id, ConnId, ConnectOptions, Connection, Frames, LinkError, LinkEvents,
        ListenOptions, Listener, Transport, TrySendError, ZmtpTransport,
    };
    pub use crate::link::{ClientSecurity, ServerSecurity};
}

/// Seams a subsystem outside the object layer plugs into, opened for their tests: not
/// part of the application API.
#[doc(hidden)]
pub mod seams {
    pub use crate::object::relocation::{
        BoundFuture, BoundMove, BoundRoutes, MAX_BOUND_ROUTES_BYTES,
    };
}

#[doc(hidden)]
pub mod __private;
