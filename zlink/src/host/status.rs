//! [`RuntimeStatus`]: one serializable snapshot of everything a runtime knows about itself,
//! for monitoring (print it as JSON with `serde_json`).

use serde::Serialize;

use super::lifecycle::Started;
use crate::handle::{Handle, PublisherStatus};
use crate::mesh::PeerStatus;
use crate::object::creation::TypePlacement;
use crate::object::{LostOneWays, ObjectKind};
use crate::store::StoreMetrics;

/// A runtime's state at one moment.
#[derive(Debug, Clone, Serialize)]
pub struct RuntimeStatus {
    /// This node's RID.
    pub rid: String,
    /// Its lifecycle generation (new for every start).
    pub generation: u64,
    /// The MeshName.
    pub mesh_name: String,
    /// The RouteMesh endpoint peers dial (empty without a mesh listener).
    pub endpoint: String,
    /// Whether it still admits new calls.
    pub running: bool,
    /// Whether it is draining: it takes no new objects (after `relocate_all`, until
    /// `undrain`, and while it shuts down), and says so in its descriptor.
    pub draining: bool,
    /// RouteMesh channels it serves, with their current weights, sorted by name.
    pub served: Vec<(String, u32)>,
    /// Ready RouteMesh peers, sorted by RID.
    pub peers: Vec<PeerStatus>,
    /// Connections the RouteMesh listener holds open (admitted or not).
    pub open_connections: usize,
    /// Its ClientServer roles.
    pub client_server: Vec<ClientServerStatus>,
    /// Its fanout roles.
    pub fanout: Vec<FanoutStatus>,
    /// Its STREAM listeners and their sessions.
    pub stream_listeners: Vec<crate::session::StreamListenerStatus>,
    /// What it knows from the Location Store, when one is registered.
    pub store: Option<StoreStatus>,
    /// Its Location Store calls so far, per operation kind, when a store is registered.
    pub store_operations: Option<StoreMetrics>,
    /// The Spots this node owns (runs) now.
    pub spots_owned: usize,
    /// How many Actors this node owns and runs now.
    pub actors_owned: usize,
    /// Which nodes can take a new Spot or Actor of each type known here (served here, or
    /// by a member in the last read of the store): what
    /// [`Spots::ready`](crate::Spots::ready) and [`Actors::ready`](crate::Actors::ready)
    /// wait on. `None` without a Location Store.
    pub placement: Option<PlacementStatus>,
    /// This node lifecycle's Entry Spot, when it serves Actor types.
    pub entry_spot: Option<String>,
    /// One-way messages to Spots and Actors that this node accepted (from a local caller,
    /// a peer or a Message Follow relay) and could not deliver, by reason. Each one is
    /// also logged once, at warn, with its object.
    pub lost_one_ways: LostOneWays,
    /// Messages this node relayed to a moved Spot's or Actor's new owner (Message Follow
    /// detours, and the queue and hold a move carried), since it started.
    pub relayed_by_message_follow: u64,
    /// What went through its Logical Multicast since it started.
    pub multicast: crate::object::MulticastCounts,
    /// Its route cache: its size, and the routes it holds.
    pub route_cache: crate::object::RouteCacheStatus,
}

/// Placement readiness per type, as [`RuntimeStatus::placement`].
#[derive(Debug, Clone, Serialize)]
pub struct PlacementStatus {
    /// Spot types, sorted by name.
    pub spot_types: Vec<TypePlacement>,
    /// Actor types, sorted by name.
    pub actor_types: Vec<TypePlacement>,
}

impl PlacementStatus {
    /// The nodes that can take a new Spot of `stable_type` (empty when none can).
    pub fn spot_nodes(&self, stable_type: &str) -> &[String] {
        nodes_of(&self.spot_types, stable_type)
    }

    /// The nodes that can take a new Actor of `stable_type` (empty when none can).
    pub fn actor_nodes(&self, stable_type: &str) -> &[String] {
        nodes_of(&self.actor_types, stable_type)
    }
}

fn nodes_of<'a>(types: &'a [TypePlacement], stable_type: &str) -> &'a [String] {
    types
        .iter()
        .find(|t| t.stable_type == stable_type)
        .map_or(&[], |t| &t.ready_nodes)
}

/// One ClientServer role.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ClientServerStatus {
    /// A Server role: where clients reach it and its weight.
    Server {
        /// The ChannelName.
        channel: String,
        /// The endpoint clients dial.
        endpoint: String,
        /// Its current weight.
        weight: u32,
    },
    /// A Client role: the servers it can select.
    Client {
        /// The ChannelName.
        channel: String,
        /// Ready servers, sorted by RID.
        servers: Vec<PeerStatus>,
    },
}

/// One fanout role.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum FanoutStatus {
    /// A publisher: its endpoint and the subscriber copies it dropped at the high-water
    /// mark.
    Publisher {
        /// The ChannelName.
        channel: String,
        /// The endpoint subscribers dial.
        endpoint: String,
        /// Copies dropped so far.
        dropped: u64,
    },
    /// A subscriber: the publishers it follows.
    Subscriber {
        /// The ChannelName.
        channel: String,
        /// Each publisher as the subscriber sees it.
        publishers: Vec<PublisherStatus>,
    },
}

/// The Location Store as this node sees it.
#[derive(Debug, Clone, Serialize)]
pub struct StoreStatus {
    /// Whether the last store call succeeded.
    pub reachable: bool,
    /// The other live members' RIDs as of the last complete read, sorted.
    pub members: Vec<String>,
    /// Milliseconds since the member list was last read completely.
    pub last_complete_read_ms_ago: Option<u64>,
    /// Whether StoreFailureGrace has run out.
    pub grace_expired: bool,
    /// The descriptor revision this node last published.
    pub published_revision: Option<u64>,
    /// Whether the owner lease admits new work now.
    pub lease_admits_new_work: bool,
    /// The current lease claim's generation, when the node holds one.
    pub lease_generation: Option<u64>,
}

impl RuntimeStatus {
    pub(super) fn of(handle: &Handle, started: &Started) -> Self {
        let node = handle.node();
        let mut client_server = Vec::new();
        {
            let roles = &started.client_server;
            for (channel, server) in roles.servers() {
                client_server.push(ClientServerStatus::Server {
                    channel: channel.clone(),
                    endpoint: server.endpoint(),
                    weight: server.registry().weight(channel).unwrap_or(0),
                });
            }
            for (channel, client) in roles.clients() {
                client_server.push(ClientServerStatus::Client {
                    channel: channel.clone(),
                    servers: client.peer_statuses(),
                });
            }
        }
        let mut fanout = Vec::new();
        {
            let roles = &started.fanout;
            for (channel, endpoint, dropped) in roles.publisher_statuses() {
                fanout.push(FanoutStatus::Publisher {
                    channel,
                    endpoint,
                    dropped,
                });
            }
            for (channel, publishers) in roles.subscriber_statuses() {
                fanout.push(FanoutStatus::Subscriber {
                    channel,
                    publishers,
                });
            }
        }
        let discovery = handle.discovery();
        let store = discovery.status().map(|d| {
            let lease = discovery.owner_lease();
            StoreStatus {
                reachable: d.store_reachable,
                members: d.members.iter().map(|m| m.rid.clone()).collect(),
                last_complete_read_ms_ago: d
                    .last_complete_read
                    .map(|at| at.elapsed().as_millis().min(u128::from(u64::MAX)) as u64),
                grace_expired: d.grace_expired,
                published_revision: d.published_revision,
                lease_admits_new_work: lease.as_ref().is_some_and(|l| l.admits_new_work()),
                lease_generation: lease.and_then(|l| l.token.map(|t| t.generation)),
            }
        });
        let objects = started.objects.as_ref();
        RuntimeStatus {
            rid: node.rid().to_string(),
            generation: node.identity().generation(),
            mesh_name: node.settings().mesh_name.clone(),
            endpoint: node.endpoint(),
            running: node.is_running(),
            draining: node.identity().is_draining(),
            served: node.registry().server_weights(),
            peers: node.peer_statuses(),
            open_connections: node.links().open_connections(),
            client_server,
            fanout,
            stream_listeners: started.streams.status(),
            store,
            spots_owned: objects
                .map_or(0, |objects| objects.owned(crate::object::ObjectKind::Spot)),
            placement: objects.map(|objects| PlacementStatus {
                spot_types: crate::object::creation::placement(objects, ObjectKind::Spot),
                actor_types: crate::object::creation::placement(objects, ObjectKind::Actor),
            }),
            entry_spot: node.settings().served_objects.entry_spot.clone(),
            actors_owned: objects
                .map_or(0, |objects| objects.owned(crate::object::ObjectKind::Actor)),
            lost_one_ways: objects
                .map(|objects| objects.lost_one_ways())
                .unwrap_or_default(),
            relayed_by_message_follow: objects
                .map_or(0, |objects| objects.relayed_by_message_follow()),
            multicast: objects
                .map(|objects| objects.multicast_counts())
                .unwrap_or_default(),
            route_cache: objects
                .map(|objects| objects.route_cache())
                .unwrap_or_default(),
            store_operations: node
                .settings()
                .discovery
                .as_ref()
                .map(|d| d.metered.metrics()),
        }
    }
}
