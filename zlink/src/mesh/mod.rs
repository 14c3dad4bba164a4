//! The node core. A [`MeshNode`] wires together components that each own their state:
//! [`Links`](links::Links) (connections, handshake, liveness, dialers), the
//! [`PeerTable`](peer_table::PeerTable) (peers, readiness, weights, candidate snapshots,
//! typed peer events), the pending-request table, the outbound
//! [`Calls`](calls::Calls), the [`Dispatcher`](dispatch::Dispatcher) and, with a Location
//! Store, the [`Discovery`](discovery::Discovery). Subsystems plug in through seams: an
//! [`InboundRoute`] per command, the outbound API (`peer`, `select`, `send`, `request`,
//! `reply`), [`NodeServices`] and the [`Subsystem`] lifecycle.

pub(crate) mod calls;
mod channel_registry;
mod count_permit;
pub(crate) mod discovery;
mod dispatch;
mod identity;
mod key_bindings;
pub(crate) mod links;
mod node;
pub(crate) mod peer_table;
mod policy;
mod security;
mod select;
mod services;
mod settings;
mod subsystem;
pub(crate) mod traced;
mod work;

pub(crate) use channel_registry::ChannelRegistry;
pub use discovery::DiscoveryStatus;
pub(crate) use dispatch::{
    as_replied, poll_once, reply_outcome, InboundCall, InboundRoute, PendingReply,
};
pub(crate) use identity::generate_generation;
pub use identity::generate_rid;
pub(crate) use node::MeshNode;
pub use peer_table::PeerStatus;
pub(crate) use security::SecuritySettings;
pub(crate) use settings::{ChannelRole, DiscoverySettings, MeshSettings, ServedObjects, Topology};
pub use settings::{PeerSpec, DEFAULT_WEIGHT, MAX_WEIGHT};
pub(crate) use subsystem::{Drained, Subsystem, Teardown};

#[cfg(test)]
mod seam_tests;
