//! The node core: identity (RID, lifecycle generation), connections with handshake,
//! liveness and reconnect, the [`PeerTable`](peer_table::PeerTable) of admitted peers, the
//! pending-request table, and the seams subsystems plug into: the
//! [`Dispatcher`](dispatch::Dispatcher) with one [`InboundRoute`] per command, and the
//! outbound API (`peer`, `select`, `send`, `request`, `reply`).

pub(crate) mod client_server;
mod count_permit;
mod dialer;
pub(crate) mod discovery;
mod dispatch;
pub(crate) mod fanout;
pub(crate) mod handshake;
mod identity;
pub(crate) mod inbound;
mod key_bindings;
mod liveness_task;
pub(crate) mod node;
mod node_direct;
pub(crate) mod outbound;
pub(crate) mod peer_table;
mod select;
mod start;

pub use discovery::DiscoveryStatus;
pub(crate) use dispatch::{InboundCall, InboundRoute};
pub(crate) use identity::generate_generation;
pub use identity::generate_rid;
pub(crate) use node::MeshNode;
pub(crate) use node_direct::NodeDirectRoute;
pub use peer_table::PeerStatus;

#[cfg(test)]
mod seam_tests;
