//! MeshNode: one RouteMesh member. Identity (RID, lifecycle generation), admitted peers,
//! handshake, liveness, reconnect, channel roles and weights, select-one and node-direct.

pub(crate) mod client_server;
mod count_permit;
mod dialer;
pub(crate) mod discovery;
pub(crate) mod fanout;
pub(crate) mod handshake;
mod identity;
pub(crate) mod inbound;
mod key_bindings;
mod liveness_task;
pub(crate) mod node;
pub(crate) mod outbound;
mod peers;
mod select;

pub use discovery::DiscoveryStatus;
pub(crate) use identity::generate_generation;
pub use identity::generate_rid;
pub(crate) use node::MeshNode;
pub use peers::PeerStatus;
pub use select::{Candidate, SmoothWeighted};
