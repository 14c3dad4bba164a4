//! [`RuntimeBuilder`]: how an application describes one node.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::roles::{
    served_objects, validate_client_server, validate_fanout, validate_object_types,
};
use super::security::Declared;
use super::settings::{RuntimeConfig, Settings};
use super::validate::Validator;
use crate::channel::client_server::ClientServerRole;
use crate::channel::fanout::FanoutDeclaration;
use crate::handler::{DefaultChannel, HandlerGroup};
use crate::link::{
    CurveKeypair, CurvePublicKey, LinkLimits, LivenessTimings, Transport, Trust, ZmtpTransport,
};
use crate::mesh::{
    generate_rid, ChannelRole, DiscoverySettings, MeshSettings, PeerSpec, SecuritySettings,
    Topology, DEFAULT_WEIGHT, MAX_WEIGHT,
};
use crate::object::relocation::RelocationFaults;
use crate::object::ObjectSettings;
use crate::store::{LocationStore, MeteredStore, OwnerLeaseSettings};
use crate::Result;

/// A RouteMesh channel as the application declared it.
enum DeclaredChannel {
    /// Served by these handlers, at this weight.
    Server(Arc<dyn HandlerGroup>, u32),
    /// Called only.
    Client,
}

/// Default interval between Location Store reads of the member list.
pub const DEFAULT_DISCOVERY_INTERVAL: Duration = Duration::from_secs(1);
/// Default StoreFailureGrace.
pub const DEFAULT_STORE_FAILURE_GRACE: Duration = Duration::from_secs(30);

/// Describes one node. Nothing is checked until [`build`](Self::build), which reports every
/// problem at once; nothing is bound until [`RuntimeConfig::start`].
///
/// ```no_run
/// # async fn run() -> zlink::Result<()> {
/// let runtime = zlink::Runtime::builder()
///     .mesh_name("shop")
///     .listen("tcp://127.0.0.1:0")
///     .channel_client("billing")
///     .build()?
///     .start()
///     .await?;
/// # Ok(()) }
/// ```
pub struct RuntimeBuilder {
    mesh_name: Option<String>,
    rid: Option<String>,
    listen: Option<String>,
    advertise_host: Option<String>,
    peers: Vec<PeerSpec>,
    channels: Vec<(String, DeclaredChannel)>,
    node_handlers: Option<Arc<dyn HandlerGroup>>,
    send_timeout: Duration,
    request_timeout: Duration,
    shutdown_grace: Duration,
    trace_propagation: Option<Arc<dyn crate::wire::trace_context::TracePropagation>>,
    pub(super) liveness: LivenessTimings,
    transport: Arc<dyn Transport>,
    store: Option<Arc<dyn LocationStore>>,
    owner_lease: Option<OwnerLeaseSettings>,
    discovery_interval: Option<Duration>,
    store_failure_grace: Option<Duration>,
    client_server: Vec<ClientServerRole>,
    fanout: Vec<FanoutDeclaration>,
    stream_listeners: Vec<crate::session::StreamListener>,
    spot_types: Vec<crate::object::SpotType>,
    actor_types: Vec<crate::object::ActorType>,
    entry_hooks: Option<Arc<crate::object::EntryHooksFactory>>,
    route_cache_max_age: Duration,
    route_cache_capacity: Option<usize>,
    message_follow_duration: Duration,
    instance_idle_timeout: Duration,
    pub(super) faults: RelocationFaults,
    relocation_store: Option<Arc<dyn crate::store::RelocationStore>>,
    bound_routes: Option<Arc<dyn crate::object::relocation::BoundRoutes>>,
    placement_weight: u32,
    max_spots: u32,
    limits: LinkLimits,
    curve: Option<CurveKeypair>,
    trust: Option<Trust>,
    trust_keys: Vec<CurvePublicKey>,
    allow_plaintext: bool,
}

impl Default for RuntimeBuilder {
    fn default() -> Self {
        RuntimeBuilder {
            mesh_name: None,
            rid: None,
            listen: None,
            advertise_host: None,
            peers: Vec::new(),
            channels: Vec::new(),
            node_handlers: None,
            send_timeout: Duration::from_secs(1),
            request_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(10),
            trace_propagation: None,
            liveness: LivenessTimings::default(),
            transport: Arc::new(ZmtpTransport::new()),
            store: None,
            owner_lease: None,
            discovery_interval: None,
            store_failure_grace: None,
            client_server: Vec::new(),
            fanout: Vec::new(),
            stream_listeners: Vec::new(),
            spot_types: Vec::new(),
            actor_types: Vec::new(),
            entry_hooks: None,
            route_cache_max_age: crate::object::DEFAULT_ROUTE_CACHE_MAX_AGE,
            route_cache_capacity: None,
            message_follow_duration: crate::object::MESSAGE_FOLLOW_DURATION,
            instance_idle_timeout: Duration::ZERO,
            faults: RelocationFaults::default(),
            relocation_store: None,
            bound_routes: None,
            placement_weight: 100,
            max_spots: 0,
            limits: LinkLimits::default(),
            curve: None,
            trust: None,
            trust_keys: Vec::new(),
            allow_plaintext: false,
        }
    }
}

impl RuntimeBuilder {
    /// The MeshName this node joins (1..=255 bytes). Required unless the process has only
    /// ClientServer or fanout roles (then it joins no RouteMesh).
    pub fn mesh_name(mut self, name: impl Into<String>) -> Self {
        self.mesh_name = Some(name.into());
        self
    }

    /// A fixed routing id for manual topologies (1..=255 bytes). Default: a fresh
    /// `node-<uuid-v4>` for every start.
    pub fn rid(mut self, rid: impl Into<String>) -> Self {
        self.rid = Some(rid.into());
        self
    }

    /// The endpoint the node's RouteMesh ROUTER listens on, e.g. `tcp://127.0.0.1:0` (port 0
    /// picks a free port; [`Handle::endpoint`](crate::Handle::endpoint) tells which). Required with the MeshName.
    pub fn listen(mut self, endpoint: impl Into<String>) -> Self {
        self.listen = Some(endpoint.into());
        self
    }

    /// The host peers dial to reach this node's listener (the bound port is kept). Required
    /// when `listen` binds a wildcard such as `0.0.0.0`; in Kubernetes, the pod IP or a
    /// per-pod DNS name.
    pub fn advertise_host(mut self, host: impl Into<String>) -> Self {
        self.advertise_host = Some(host.into());
        self
    }

    /// Adds a manual peer this node connects to. List a pair on one side only; when both
    /// sides list each other, one connection is kept.
    pub fn peer(mut self, peer: PeerSpec) -> Self {
        self.peers.push(peer);
        self
    }

    /// Registers the Server role for `channel` with weight 100.
    pub fn channel_server(self, channel: impl Into<String>, handlers: impl HandlerGroup) -> Self {
        self.channel_server_weighted(channel, handlers, DEFAULT_WEIGHT)
    }

    /// Registers the Server role for `channel` with `weight` (0..=10000; 0 receives no new
    /// selections).
    pub fn channel_server_weighted(
        mut self,
        channel: impl Into<String>,
        handlers: impl HandlerGroup,
        weight: u32,
    ) -> Self {
        self.channels.push((
            channel.into(),
            DeclaredChannel::Server(Arc::new(handlers), weight),
        ));
        self
    }

    /// Makes this node a Server member of the RouteMesh channel `channel` with weight 100
    /// and no handlers of its own, for Logical Multicast: a node serving a Spot type that
    /// subscribes to a topic of `channel` must be a member (this, or a channel server),
    /// and only members with weight > 0 receive its events.
    pub fn multicast_channel(self, channel: impl Into<String>) -> Self {
        self.channel_server(channel, crate::handler::Handlers::new())
    }

    /// Registers `handlers` as the Server of their default ChannelName (the `name` given to
    /// `#[zlink::channel(server, name = "...")]`) with weight 100.
    pub fn serve<G: HandlerGroup + DefaultChannel>(self, handlers: G) -> Self {
        self.channel_server(G::CHANNEL, handlers)
    }

    /// Like [`serve`](Self::serve) with an explicit weight (0..=10000).
    pub fn serve_weighted<G: HandlerGroup + DefaultChannel>(
        self,
        handlers: G,
        weight: u32,
    ) -> Self {
        self.channel_server_weighted(G::CHANNEL, handlers, weight)
    }

    /// Registers a ClientServer role: a Server with its own listener
    /// ([`ClientServer::server`](crate::ClientServer::server)) or a Client of one
    /// ([`ClientServer::client`](crate::ClientServer::client)). One process may hold both
    /// roles of one ChannelName; a name also used on the RouteMesh is a configuration error.
    pub fn client_server(
        mut self,
        role: impl Into<crate::channel::client_server::ClientServerDeclaration>,
    ) -> Self {
        self.client_server.push(role.into().0);
        self
    }

    /// Registers a STREAM listener for outside clients (TCP or WebSocket), with its
    /// session type. See [`session`](mod@crate::session).
    pub fn stream_listener(mut self, listener: crate::session::StreamListener) -> Self {
        self.stream_listeners.push(listener);
        self
    }

    /// Registers a fanout publisher ([`Fanout::publisher`](crate::Fanout::publisher)) or
    /// subscriber ([`Fanout::subscriber`](crate::Fanout::subscriber)).
    pub fn fanout(mut self, role: impl Into<FanoutDeclaration>) -> Self {
        self.fanout.push(role.into());
        self
    }

    /// Makes this node an Object Server for a Spot type: it creates and runs Spots of that
    /// type. Spots keep their authority in the Location Store, so a store is required.
    pub fn spot_type(mut self, spot_type: crate::object::SpotType) -> Self {
        self.spot_types.push(spot_type);
        self
    }

    /// Makes this node an Object Server for an Actor type: it creates and runs Actors of
    /// that type, each starting in this node's Entry Spot (claimed at start). Actors keep
    /// their authority in the Location Store, so a store is required.
    pub fn actor_type(mut self, actor_type: crate::object::ActorType) -> Self {
        self.actor_types.push(actor_type);
        self
    }

    /// What the application hears from this node's Entry Spot: `make` builds its
    /// [`EntryHooks`](crate::object::EntryHooks) when the node starts (Actors created in
    /// it, joining it and leaving it).
    pub fn entry_hooks<H, F>(mut self, make: F) -> Self
    where
        H: crate::object::EntryHooks,
        F: Fn() -> H + Send + Sync + 'static,
    {
        self.entry_hooks = Some(Arc::new(move || Box::new(make())));
        self
    }

    /// This node's weight when new Spots and Actors are placed among the nodes serving their type
    /// (default 100, 0..=10000; 0 takes no new Spots, like weight 0 on a channel).
    pub fn placement_weight(mut self, weight: u32) -> Self {
        self.placement_weight = weight;
        self
    }

    /// The most Spots this node runs, of all types together (default 0: no limit). Counts
    /// the Spots it runs and those being created; at the limit it takes no new one.
    pub fn max_spots(mut self, limit: u32) -> Self {
        self.max_spots = limit;
        self
    }

    /// RouteCacheMaxAge: how long this node reuses a confirmed Spot owner route before it
    /// reads the Location Store again (default 15 s; 0 disables the cache). It must stay
    /// at least 5 s below MessageFollowDuration (30 s), so a cached route expires before
    /// the detour after a move closes.
    pub fn route_cache_max_age(mut self, max_age: Duration) -> Self {
        self.route_cache_max_age = max_age;
        self
    }

    /// The most object routes this node's route cache keeps: by default 1/64 of the node's
    /// memory (its cgroup limit, else the machine's) at 1 KiB a route, 65,536 to 16 Mi. Past
    /// it, a new route evicts one not used lately; a call on an evicted route reads the
    /// Location Store once. Size it to the objects this node calls often.
    pub fn route_cache_capacity(mut self, routes: usize) -> Self {
        self.route_cache_capacity = Some(routes);
        self
    }

    /// MessageFollowDuration: after an object moved away from this node, how long this
    /// node relays what still arrives for it on the old route (default 30 s; 0 disables:
    /// such messages are then `Unavailable` and the sender looks the owner up again). A
    /// change applies to moves that start after it.
    pub fn message_follow_duration(mut self, duration: Duration) -> Self {
        self.message_follow_duration = duration;
        self
    }

    /// InstanceSpotIdleTimeout: an Instance Spot on this node that stayed idle this long
    /// (nothing queued or running, no timer armed, its first message done, not moving) is
    /// evicted: `on_closing(IdleEvicted)` runs and its authority is released, so the next
    /// call with Instance intent activates a new incarnation and a plain call gets
    /// `NotFound`. Its state is not kept. Default 0: never evicted. User and Entry Spots
    /// are never evicted.
    pub fn instance_spot_idle_timeout(mut self, timeout: Duration) -> Self {
        self.instance_idle_timeout = timeout;
        self
    }

    /// Registers the Client role for `channel`: this node may call it but does not serve it.
    pub fn channel_client(mut self, channel: impl Into<String>) -> Self {
        self.channels
            .push((channel.into(), DeclaredChannel::Client));
        self
    }

    /// Handlers for node-direct messages addressed to this node's RID.
    pub fn node_handlers(mut self, handlers: impl HandlerGroup) -> Self {
        self.node_handlers = Some(Arc::new(handlers));
        self
    }

    /// How long a send (or a request's submission) may wait for the local queue (default
    /// 1 s; must be > 0).
    pub fn send_timeout(mut self, timeout: Duration) -> Self {
        self.send_timeout = timeout;
        self
    }

    /// Default request deadline (default 30 s; must be > 0).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Carries your tracing backend's context (OpenTelemetry, for example) across nodes
    /// with every message: see [`trace`](crate::trace). Without it, zlink carries only
    /// the context of a trace started with [`trace::traced`](crate::trace::traced) or
    /// received in a message.
    pub fn trace_propagation(
        mut self,
        propagation: impl crate::wire::trace_context::TracePropagation,
    ) -> Self {
        self.trace_propagation = Some(Arc::new(propagation));
        self
    }

    /// How long shutdown lets accepted work finish (default 10 s).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Replaces the transport (the default is ZMTP over TCP). The testkit's in-memory
    /// network plugs in here.
    pub fn transport(mut self, transport: Arc<dyn Transport>) -> Self {
        self.transport = transport;
        self
    }

    /// Plugs in whoever holds routes bound to this node's Actors outside them (the
    /// STREAM sessions subsystem will): it is told when one of them moves. Open for the
    /// seam's tests only.
    #[doc(hidden)]
    pub fn bound_routes(mut self, hooks: Arc<dyn crate::object::relocation::BoundRoutes>) -> Self {
        self.bound_routes = Some(hooks);
        self
    }

    /// Limits of every connection and listener (message size, frames per message,
    /// handshake deadline, connection caps, send queue bounds, in-flight calls per
    /// connection). See [`LinkLimits`] for the defaults.
    pub fn link_limits(mut self, limits: LinkLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Runs ZMTP CURVE with this keypair on every listener (mesh, ClientServer, fanout)
    /// and every dial. Its public key goes into the node's Location Store descriptors;
    /// peers dialed by hand need theirs ([`PeerSpec::server_key`]).
    pub fn curve(mut self, keypair: CurveKeypair) -> Self {
        self.curve = Some(keypair);
        self
    }

    /// Whom CURVE listeners admit. Default: [`Trust::MeshMembers`] with a Location Store,
    /// otherwise the keys given with [`trust_key`](Self::trust_key).
    pub fn trust(mut self, trust: Trust) -> Self {
        self.trust = Some(trust);
        self
    }

    /// Adds one client key every CURVE listener of this node admits.
    pub fn trust_key(mut self, key: CurvePublicKey) -> Self {
        self.trust_keys.push(key);
        self
    }

    /// Allows binding a non-loopback address without CURVE (plaintext, unauthenticated).
    pub fn allow_plaintext(mut self) -> Self {
        self.allow_plaintext = true;
        self
    }

    /// Registers the Location Store. The node then publishes its descriptor under an owner
    /// lease and discovers the other nodes of its mesh automatically (manual peers still
    /// work alongside). Register exactly one store per node.
    pub fn location_store(mut self, store: Arc<dyn LocationStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Registers the Relocation Store: where a moved object's new owner records the
    /// results of requests relayed to it, so the old owner can still deliver each one if
    /// their connection is lost before the reply. Required on a node that registers a
    /// Spot or Actor type declared `relocation = recreate` or `preserve`; every node of a
    /// mesh registers the same store (`RedisRelocationStore`, or
    /// `<dyn RelocationStore>::in_memory()` shared by the runtimes of one process). It may
    /// share a Redis deployment with the Location Store.
    pub fn relocation_store(mut self, store: Arc<dyn crate::store::RelocationStore>) -> Self {
        self.relocation_store = Some(store);
        self
    }

    /// Owner lease timings (default renew 5 s, TTL 15 s, renew timeout 3 s, fencing margin
    /// 5 s; `renew + timeout < ttl - margin`). Needs a Location Store.
    pub fn owner_lease(mut self, settings: OwnerLeaseSettings) -> Self {
        self.owner_lease = Some(settings);
        self
    }

    /// How often the member list is re-read from the Location Store (default 1 s; > 0).
    pub fn discovery_interval(mut self, interval: Duration) -> Self {
        self.discovery_interval = Some(interval);
        self
    }

    /// How long a Location Store outage may last while the last complete member list is
    /// still used to keep connection intents (default 30 s; > 0). It never extends the
    /// owner lease.
    pub fn store_failure_grace(mut self, grace: Duration) -> Self {
        self.store_failure_grace = Some(grace);
        self
    }

    /// Validates everything and reports all violations together as
    /// [`Error::Config`](crate::Error::Config).
    pub fn build(mut self) -> Result<RuntimeConfig> {
        let mut v = Validator::default();
        let mesh = self.needs_mesh();
        let mesh_name = v.text("mesh_name", self.mesh_name.as_deref(), mesh);
        let rid = self.rid.clone();
        if let Some(rid) = &rid {
            v.text("rid", Some(rid), true);
        }
        let node_rid = rid.clone().unwrap_or_else(|| generate_rid("node"));
        let discovery =
            self.discovery_settings(&mut v, mesh_name.as_deref().unwrap_or_default(), &node_rid);
        let listen = if mesh {
            v.endpoint("listen", self.listen.as_deref())
        } else {
            None
        };
        self.validate_peers(&mut v, rid.as_ref());
        let security = self.security_settings(&mut v, listen.as_deref());
        let (channels, channel_servers) = channel_roles(std::mem::take(&mut self.channels), &mut v);
        validate_client_server(&self.client_server, self.store.is_some(), &mut v, &channels);
        let mut stream_problems = Vec::new();
        crate::session::validate(&self.stream_listeners, &mut stream_problems);
        for problem in stream_problems {
            v.violation(problem.setting, problem.problem);
        }
        validate_fanout(
            &self.fanout,
            self.store.is_some(),
            &mut v,
            &channels,
            &self.client_server,
        );
        self.validate_objects(&mut v, &channels);
        let node_handlers = self.node_handlers.take().map(|h| {
            v.handler_packets("node handlers", h.as_ref());
            crate::handler::HandlerTable::new(h)
        });
        self.validate_timings(&mut v);
        v.finish()?;
        let mesh = MeshIdentity {
            mesh,
            mesh_name: mesh_name.unwrap_or_default(),
            rid: node_rid,
            listen: listen.unwrap_or_default(),
        };
        Ok(self.into_config(
            mesh,
            discovery,
            security,
            channels,
            Served {
                channel_servers,
                node_handlers,
            },
        ))
    }

    /// Whether the node needs a RouteMesh: a process with only ClientServer or fanout
    /// roles has no MeshName and no mesh listener.
    fn needs_mesh(&self) -> bool {
        !self.channels.is_empty()
            || !self.spot_types.is_empty()
            || !self.actor_types.is_empty()
            || !self.peers.is_empty()
            || self.node_handlers.is_some()
            || self.mesh_name.is_some()
            || self.listen.is_some()
            || (self.client_server.is_empty() && self.fanout.is_empty())
    }

    /// The advertised host, the configured peers (none may be this node) and the link
    /// limits.
    fn validate_peers(&self, v: &mut Validator, rid: Option<&String>) {
        v.advertising(
            "listen",
            self.listen.as_deref(),
            self.advertise_host.as_deref(),
        );
        for (i, peer) in self.peers.iter().enumerate() {
            v.endpoint(&format!("peer[{i}] endpoint"), Some(&peer.endpoint));
            if let Some(expected) = &peer.expected_rid {
                v.text(&format!("peer[{i}] expected rid"), Some(expected), true);
                if Some(expected) == rid {
                    v.violation(
                        format!("peer[{i}] expected rid"),
                        "equals this node's own rid",
                    );
                }
            }
            if Some(&peer.endpoint) == self.listen.as_ref() {
                v.violation(
                    format!("peer[{i}] endpoint"),
                    "is this node's own listen endpoint",
                );
            }
        }
        for problem in self.limits.violations() {
            v.violation("link_limits", problem);
        }
    }

    fn security_settings(&self, v: &mut Validator, listen: Option<&str>) -> SecuritySettings {
        super::security::settings(
            &Declared {
                store: self.store.is_some(),
                curve: self.curve.as_ref(),
                trust: self.trust.as_ref(),
                trust_keys: &self.trust_keys,
                allow_plaintext: self.allow_plaintext,
                peers: &self.peers,
                client_server: &self.client_server,
                fanout: &self.fanout,
            },
            v,
            listen,
        )
    }

    /// The Spot and Actor types (stores, relocation policies, multicast subscriptions),
    /// the placement weight and RouteCacheMaxAge against MessageFollowDuration.
    fn validate_objects(&self, v: &mut Validator, channels: &BTreeMap<String, ChannelRole>) {
        for spot_type in &self.spot_types {
            for subscription in &spot_type.def.subscriptions {
                if !matches!(
                    channels.get(&subscription.channel),
                    Some(ChannelRole::Server { .. })
                ) {
                    v.violation(
                        format!("Spot type {}", spot_type.stable_type()),
                        format!(
                            "subscribes to topic {:?} of channel {:?}, of which this node is no Server member (multicast_channel or a channel server)",
                            subscription.topic, subscription.channel
                        ),
                    );
                }
            }
        }
        let (has_store, keeps_results) = (self.store.is_some(), self.relocation_store.is_some());
        let spot_types = self
            .spot_types
            .iter()
            .map(|t| (t.stable_type(), t.relocation(), t.is_instance()));
        validate_object_types(v, "Spot", spot_types, has_store, keeps_results);
        let actor_types = self
            .actor_types
            .iter()
            .map(|t| (t.stable_type(), t.relocation(), false));
        validate_object_types(v, "Actor", actor_types, has_store, keeps_results);
        if self.placement_weight > MAX_WEIGHT {
            v.violation(
                "placement_weight",
                format!("must be 0..={}, got {}", MAX_WEIGHT, self.placement_weight),
            );
        }
        if let Some(problem) = crate::object::cache_follow_violation(
            self.route_cache_max_age,
            self.message_follow_duration,
        ) {
            v.violation("route_cache_max_age", problem);
        }
        if self.route_cache_capacity == Some(0) {
            v.violation(
                "route_cache_capacity",
                "must be at least 1 (to stop caching routes, set route_cache_max_age to 0)",
            );
        }
    }

    fn validate_timings(&self, v: &mut Validator) {
        v.positive("send_timeout", self.send_timeout);
        v.positive("request_timeout", self.request_timeout);
        v.positive("liveness probe interval", self.liveness.probe_interval);
        if self.liveness.deadline <= self.liveness.probe_interval {
            v.violation("liveness deadline", "must exceed the probe interval");
        }
    }

    /// The validated builder as the settings every subsystem starts from.
    fn into_config(
        self,
        identity: MeshIdentity,
        discovery: Option<DiscoverySettings>,
        security: SecuritySettings,
        channels: BTreeMap<String, ChannelRole>,
        served: Served,
    ) -> RuntimeConfig {
        let entry_spot =
            (!self.actor_types.is_empty()).then(|| crate::object::SpotId::entry(&identity.rid));
        RuntimeConfig {
            settings: Settings {
                mesh: MeshSettings {
                    mesh_name: identity.mesh_name,
                    rid: identity.rid,
                    generation: crate::mesh::generate_generation(),
                    listen: identity.listen,
                    advertise_host: self.advertise_host,
                    peers: self.peers,
                    channels,
                    send_timeout: self.send_timeout,
                    request_timeout: self.request_timeout,
                    shutdown_grace: self.shutdown_grace,
                    trace_propagation: self.trace_propagation,
                    liveness: self.liveness,
                    transport: self.transport,
                    discovery,
                    topology: Topology::RouteMesh,
                    mesh: identity.mesh,
                    max_message: self.limits.max_message,
                    limits: self.limits,
                    security,
                    placement_weight: self.placement_weight,
                    served_objects: served_objects(
                        &self.spot_types,
                        &self.actor_types,
                        entry_spot.as_ref(),
                    ),
                    client_server_channels: self
                        .client_server
                        .iter()
                        .map(|role| role.channel().to_string())
                        .collect(),
                },
                channel_servers: served.channel_servers,
                node_handlers: served.node_handlers,
                client_server: self.client_server,
                fanout: self.fanout,
                objects: ObjectSettings {
                    spot_types: self.spot_types,
                    actor_types: self.actor_types,
                    entry_spot,
                    entry_hooks: self.entry_hooks,
                    route_cache_max_age: self.route_cache_max_age,
                    route_cache_capacity: self.route_cache_capacity.unwrap_or_else(|| {
                        crate::object::default_route_cache_capacity(super::node_memory::bytes())
                    }),
                    message_follow_duration: self.message_follow_duration,
                    relocation_store: self.relocation_store,
                    bound_routes: self.bound_routes,
                    max_spots: self.max_spots,
                    instance_idle_timeout: self.instance_idle_timeout,
                    faults: self.faults,
                },
                stream_listeners: self.stream_listeners,
            },
        }
    }

    /// The Location Store settings of node `rid` of `mesh_name` (its store is metered
    /// under those labels).
    fn discovery_settings(
        &self,
        v: &mut Validator,
        mesh_name: &str,
        rid: &str,
    ) -> Option<DiscoverySettings> {
        let lease = self.owner_lease.unwrap_or_default();
        let interval = self
            .discovery_interval
            .unwrap_or(DEFAULT_DISCOVERY_INTERVAL);
        let grace = self
            .store_failure_grace
            .unwrap_or(DEFAULT_STORE_FAILURE_GRACE);
        let Some(store) = self.store.clone() else {
            for (set, setting) in [
                (self.owner_lease.is_some(), "owner_lease"),
                (self.discovery_interval.is_some(), "discovery_interval"),
                (self.store_failure_grace.is_some(), "store_failure_grace"),
            ] {
                if set {
                    v.violation(setting, "needs a Location Store (location_store)");
                }
            }
            return None;
        };
        for (setting, problem) in lease.violations() {
            v.violation(setting, problem);
        }
        v.positive("discovery_interval", interval);
        v.positive("store_failure_grace", grace);
        let meter = crate::telemetry::StoreMeter::new(mesh_name, rid);
        let metered = Arc::new(MeteredStore::metered(store, meter));
        Some(DiscoverySettings {
            store: metered.clone(),
            metered,
            lease,
            interval,
            grace,
        })
    }
}

/// Who this node is on the RouteMesh, once validated.
struct MeshIdentity {
    mesh: bool,
    mesh_name: String,
    rid: String,
    listen: String,
}

/// The handler groups this node serves: per channel, and node-direct.
struct Served {
    channel_servers: BTreeMap<String, Arc<dyn HandlerGroup>>,
    node_handlers: Option<crate::handler::HandlerTable>,
}

/// Each declared channel's role (a name declared twice is a violation), and the handler
/// groups of the channels this node serves.
#[allow(clippy::type_complexity)]
fn channel_roles(
    declared: Vec<(String, DeclaredChannel)>,
    v: &mut Validator,
) -> (
    BTreeMap<String, ChannelRole>,
    BTreeMap<String, Arc<dyn HandlerGroup>>,
) {
    let mut channels = BTreeMap::new();
    let mut channel_servers = BTreeMap::new();
    for (name, declared) in declared {
        v.text(&format!("channel {name:?} name"), Some(&name), true);
        let role = match declared {
            DeclaredChannel::Server(handlers, weight) => {
                v.weight(&name, weight);
                v.handler_packets(&format!("channel {name:?}"), handlers.as_ref());
                channel_servers.insert(name.clone(), handlers);
                ChannelRole::Server { weight }
            }
            DeclaredChannel::Client => ChannelRole::Client,
        };
        if channels.insert(name.clone(), role).is_some() {
            v.violation(
                format!("channel {name:?}"),
                "registered twice: one ChannelName must have exactly one send path",
            );
        }
    }
    (channels, channel_servers)
}
