//! What one node's core runs with: identity, endpoints, peers, timeouts, link limits and
//! security, its channel roles, and the Location Store it discovers through. The builder
//! composes it with the other subsystems' settings; each node (the RouteMesh member and
//! every ClientServer role) gets its own.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::security::SecuritySettings;
use crate::link::{CurvePublicKey, LinkLimits, LivenessTimings, Transport};
use crate::store::{LocationStore, MeteredStore, OwnerLeaseSettings};

/// Largest channel weight.
pub const MAX_WEIGHT: u32 = 10_000;
/// Weight of a server channel registered without one.
pub const DEFAULT_WEIGHT: u32 = 100;

/// A manually configured peer: its endpoint and, optionally, the RID expected there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerSpec {
    /// Where the peer listens, e.g. `tcp://127.0.0.1:5600`.
    pub endpoint: String,
    /// When set, a peer at the endpoint with another RID is refused.
    pub expected_rid: Option<String>,
    /// The peer's CURVE public key; required when this node runs CURVE.
    pub server_key: Option<CurvePublicKey>,
}

impl PeerSpec {
    /// A peer at `endpoint`; the handshake decides its identity.
    pub fn new(endpoint: impl Into<String>) -> Self {
        PeerSpec {
            endpoint: endpoint.into(),
            expected_rid: None,
            server_key: None,
        }
    }

    /// The CURVE public key the peer must prove it holds (its node key).
    pub fn server_key(mut self, key: CurvePublicKey) -> Self {
        self.server_key = Some(key);
        self
    }

    /// Requires the peer at the endpoint to have this RID.
    pub fn expect_rid(mut self, rid: impl Into<String>) -> Self {
        self.expected_rid = Some(rid.into());
        self
    }
}

/// The validated settings of one node.
#[derive(Clone)]
pub(crate) struct MeshSettings {
    pub(crate) mesh_name: String,
    pub(crate) rid: String,
    pub(crate) generation: u64,
    pub(crate) listen: String,
    /// The host others dial instead of the bound one (needed for wildcard binds).
    pub(crate) advertise_host: Option<String>,
    pub(crate) peers: Vec<PeerSpec>,
    /// The role of each ChannelName on this node (one send path per name).
    pub(crate) channels: BTreeMap<String, ChannelRole>,
    pub(crate) send_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) shutdown_grace: Duration,
    /// The application's tracing backend, whose context messages carry.
    pub(crate) trace_propagation: Option<Arc<dyn crate::wire::trace_context::TracePropagation>>,
    pub(crate) liveness: LivenessTimings,
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) discovery: Option<DiscoverySettings>,
    pub(crate) topology: Topology,
    /// Whether this node is a RouteMesh member (false for a process with only ClientServer
    /// or fanout roles: no mesh listener, no mesh descriptor).
    pub(crate) mesh: bool,
    /// Largest complete message (all frames) accepted or sent.
    pub(crate) max_message: usize,
    /// Limits of every connection and listener of this node.
    pub(crate) limits: LinkLimits,
    /// NULL or CURVE, and whom the listeners admit.
    pub(crate) security: SecuritySettings,
    /// The node's weight when new Spots are placed (0..=10000; 0 takes none), published
    /// in its descriptor.
    pub(crate) placement_weight: u32,
    /// The object types and Entry Spot this node serves, as its descriptor publishes them.
    pub(crate) served_objects: ServedObjects,
    /// The ChannelNames this process calls or serves through ClientServer: a typed client
    /// for one of them never declares a RouteMesh Client role.
    pub(crate) client_server_channels: Vec<String>,
}

/// What a node's descriptor says it serves of the object layer (names only: the object
/// layer owns the types).
#[derive(Debug, Clone, Default)]
pub(crate) struct ServedObjects {
    /// Stable names of the Spot types served, sorted.
    pub(crate) spot_types: Vec<String>,
    /// Which of those are Instance Spot types, sorted.
    pub(crate) instance_spot_types: Vec<String>,
    /// Stable names of the Actor types served, sorted.
    pub(crate) actor_types: Vec<String>,
    /// This lifecycle's Entry Spot, when Actor types are served.
    pub(crate) entry_spot: Option<String>,
}

/// The role a node plays for one ChannelName. Which handlers serve it is the channel
/// subsystem's business; the core admits, publishes and selects by role and weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChannelRole {
    /// Receives calls (and may send them), with its weight at registration (0..=10000).
    Server {
        /// The weight at registration.
        weight: u32,
    },
    /// May start calls only.
    Client,
}

/// Which kind of connection set a [`MeshNode`](crate::mesh::MeshNode) runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Topology {
    /// A RouteMesh member: one listener, peers both ways, never selects itself.
    RouteMesh,
    /// A ClientServer server: its own listener; accepts clients; answers only.
    ClientServerServer,
    /// A ClientServer client: dials servers; calls only; its own process's server is an
    /// ordinary candidate.
    ClientServerClient,
}

/// Location Store use: owner lease and automatic discovery.
#[derive(Clone)]
pub(crate) struct DiscoverySettings {
    /// The registered store, wrapped so every call is counted.
    pub(crate) store: Arc<dyn LocationStore>,
    /// The same store, for reading its counts.
    pub(crate) metered: Arc<MeteredStore>,
    pub(crate) lease: OwnerLeaseSettings,
    pub(crate) interval: Duration,
    pub(crate) grace: Duration,
}
