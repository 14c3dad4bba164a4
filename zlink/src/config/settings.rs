//! Validated settings of one runtime.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::channel::ChannelRole;
use crate::handler::{HandlerGroup, HandlerTable};
use crate::link::{CurvePublicKey, LinkLimits, LivenessTimings, Transport};
use crate::store::{LocationStore, MeteredStore, OwnerLeaseSettings};

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

/// Everything a started runtime needs, already validated.
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) mesh_name: String,
    pub(crate) rid: String,
    pub(crate) generation: u64,
    pub(crate) listen: String,
    /// The host others dial instead of the bound one (needed for wildcard binds).
    pub(crate) advertise_host: Option<String>,
    pub(crate) peers: Vec<PeerSpec>,
    pub(crate) channels: BTreeMap<String, ChannelRole>,
    pub(crate) node_handlers: Option<HandlerTable>,
    pub(crate) send_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) shutdown_grace: Duration,
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
    pub(crate) security: super::SecuritySettings,
    /// ClientServer registrations, started next to the RouteMesh node.
    pub(crate) client_server: Vec<ClientServerRole>,
    /// Fanout publishers and subscribers.
    pub(crate) fanout: Vec<crate::channel::fanout::FanoutDeclaration>,
    /// The Spot types this node serves (the Object Server role).
    pub(crate) spot_types: Vec<crate::object::SpotType>,
    pub(crate) actor_types: Vec<crate::object::ActorType>,
    /// This node lifecycle's Entry Spot, when it serves Actor types.
    pub(crate) entry_spot: Option<crate::object::SpotId>,
    /// Makes the application's Entry Spot hooks.
    pub(crate) entry_hooks: Option<Arc<crate::object::EntryHooksFactory>>,
    /// RouteCacheMaxAge: how long a confirmed Spot route is reused (0 disables).
    pub(crate) route_cache_max_age: Duration,
    /// MessageFollowDuration: how long a moved object's old owner relays what still
    /// arrives on the old route (0: not at all).
    pub(crate) message_follow_duration: Duration,
    /// Test-only fault: a move never sends its cutover (the target commits on the
    /// 1000 ms fallback). Always `false` outside the `test-timing` feature.
    pub(crate) drop_relocation_cutover: bool,
    /// Test-only fault: a move's relay-ready answer is treated as lost.
    pub(crate) lose_relay_ready: bool,
    /// Test-only fault: follow notices (command 50) arriving here are lost. Always
    /// `false` outside the `test-timing` feature.
    pub(crate) drop_follow_notices: bool,
    /// Test-only fault: every reply to a request this node relays is treated as lost.
    pub(crate) lose_relayed_replies: bool,
    /// The Relocation Store: terminal results of requests relayed during moves.
    pub(crate) relocation_store: Option<Arc<dyn crate::store::RelocationStore>>,
    /// Whoever holds routes bound to this node's Actors outside them (seed 000 §3.3).
    pub(crate) bound_routes: Option<Arc<dyn crate::object::relocation::BoundRoutes>>,
    /// The node's weight when new Spots are placed (0..=10000; 0 takes none).
    pub(crate) placement_weight: u32,
    /// The most Spots the node runs (0: no limit).
    pub(crate) max_spots: u32,
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
