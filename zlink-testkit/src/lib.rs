//! Test support for zlink.
//!
//! - [`MemNetwork`]: an in-memory [`Transport`](zlink::transport::Transport) whose links can drop,
//!   delay or blackhole traffic in one direction, or lose a host entirely, for faults real
//!   sockets cannot produce on demand.
//! - [`wait_until`]: waits for a condition with a deadline instead of sleeping and hoping.
//! - [`init_tracing`]: test logging controlled by `RUST_LOG`; [`LogCapture`]: the lines a
//!   test's nodes logged, to count them.
//! - [`unused_endpoint`]: a port a test binds later, which nothing else takes meanwhile.
//! - [`FaultyLocationStore`] wraps any Location Store (such as zlink's embedded
//!   [`MemoryLocationStore`], re-exported here) to inject delays, refusals and lost results.
//! - [`FaultyRelocationStore`] wraps any Relocation Store to hold its puts at a gate (a
//!   move stopped midway) or to lose what its reads find.
//! - [`conformance`]: the rules every Location Store provider must pass, and
//!   [`location_store_conformance!`] to run them.
//! - [`StalledSubscriber`]: a fanout subscriber that never reads.
//! - [`RawZmtp`]: a hand-driven ZMTP peer for attacks (length bombs, frame floods,
//!   silence, peers that never read).
//! - [`stream_client::StreamClient`]: a STREAM client written from the packet format, over
//!   TCP or WebSocket, that can also lie, stall and never read.
//! - [`RedisServer`]: a private `redis-server` per test that can be stopped, paused and
//!   restarted.
//! - [`RedisCluster`]: a private Redis Cluster per test whose masters can be killed to
//!   watch a replica take over.
//! - [`TestCluster`]: N nodes of one mesh in one test (in-memory network and store, or
//!   TCP and a private Redis), with kill, partition and per-node store counters.
#![warn(missing_docs)]

pub mod conformance;
mod log_capture;
mod mem_network;
mod ports;
pub mod raw_zmtp;
mod redis_cluster;
mod redis_server;
pub mod relocation_conformance;
mod relocation_store;
mod stalled_subscriber;
mod store;
pub mod stream_client;
mod test_cluster;
mod wait;

pub use log_capture::LogCapture;
pub use mem_network::{LinkFault, MemNetwork, MemTransport};
pub use ports::{unused_endpoint, unused_port};
pub use raw_zmtp::RawZmtp;
pub use redis_cluster::RedisCluster;
pub use redis_server::RedisServer;
pub use relocation_store::{FaultyRelocationStore, ReadFault};
pub use stalled_subscriber::StalledSubscriber;
pub use store::FaultyLocationStore;
pub use test_cluster::{quick_lease, TestCluster, CLUSTER_MESH};
pub use wait::{init_tracing, wait_until};
pub use zlink::store::{MemoryLocationStore, MemoryRelocationStore};
