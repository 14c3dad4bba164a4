//! [`Runtime`]: the handle applications hold.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::call::CallOptions;
use crate::channel::client_server::ClientServerRoles;
use crate::channel::fanout::FanoutRoles;
use crate::config::{RuntimeBuilder, Settings};
use crate::mesh::{MeshNode, PeerStatus};
use crate::wire::{Message, Request};
use crate::{Error, ErrorKind, Result};

/// Where a call goes.
enum Target<'a> {
    Channel(&'a str),
    Node(&'a str),
}

/// A started node. Cheap to clone; every clone is the same node.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) node: Arc<MeshNode>,
}

impl Runtime {
    /// Starts describing a node.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    pub(crate) fn from_node(node: Arc<MeshNode>) -> Self {
        Runtime { node }
    }

    pub(crate) async fn start(settings: Settings) -> Result<Runtime> {
        super::lifecycle::start(settings)
            .await
            .map(|node| Runtime { node })
    }

    /// Stops the node: new calls fail `ShuttingDown`; accepted inbound work may finish for
    /// the configured grace; outstanding outbound requests end `ShuttingDown`; connections
    /// and the listener close; every task of the node has ended when this returns.
    pub async fn shutdown(&self) {
        self.shutdown_within(self.node.settings().shutdown_grace)
            .await
    }

    /// [`shutdown`](Self::shutdown) with an explicit grace for accepted work.
    pub async fn shutdown_within(&self, grace: Duration) {
        super::lifecycle::shutdown(&self.node, grace).await
    }

    /// Test-only: ends the node as a killed process ends. Nothing is withdrawn from the
    /// Location Store and the owner lease is not released (it expires by itself);
    /// connections and the listener just close; pending calls fail `ShuttingDown`. Only
    /// available with the `test-timing` feature.
    #[cfg(feature = "test-timing")]
    pub async fn crash(&self) {
        super::lifecycle::crash(&self.node).await
    }

    /// The owner lease, when a Location Store is registered: its token and the local
    /// admission deadline past which the node publishes nothing and admits no new object
    /// work.
    pub fn owner_lease(&self) -> Option<crate::store::OwnerLeaseStatus> {
        self.node.services().lease().map(|lease| lease.status())
    }

    /// What this node knows from the Location Store, when one is registered.
    pub fn discovery(&self) -> Option<crate::mesh::DiscoveryStatus> {
        self.node.discovery().map(|d| d.status())
    }

    /// This node's RID.
    pub fn rid(&self) -> &str {
        self.node.rid()
    }

    /// This node's lifecycle generation (new for every start).
    pub fn generation(&self) -> u64 {
        self.node.identity().generation()
    }

    /// The MeshName.
    pub fn mesh_name(&self) -> &str {
        &self.node.settings().mesh_name
    }

    /// The RouteMesh endpoint peers dial (port 0 resolved, advertised host applied); empty
    /// for a process with only ClientServer or fanout roles.
    pub fn endpoint(&self) -> String {
        self.node.endpoint()
    }

    /// This node's CURVE public key (its security identity), when it runs CURVE.
    pub fn curve_public_key(&self) -> Option<crate::link::CurvePublicKey> {
        self.node.settings().security.public_key()
    }

    /// The channel roles of this node: readiness of the channels it calls.
    pub fn channels(&self) -> super::Channels<'_> {
        super::Channels::new(self)
    }

    /// Ready peers, sorted by RID.
    pub fn peers(&self) -> Vec<PeerStatus> {
        self.node.peer_statuses()
    }

    /// Waits until `condition` holds for the ready-peer list, or fails `DeadlineExceeded`.
    pub async fn wait_for_peers(
        &self,
        timeout: Duration,
        condition: impl Fn(&[PeerStatus]) -> bool,
    ) -> Result<Vec<PeerStatus>> {
        let until = Instant::now() + timeout;
        let mut events = self.node.peers().subscribe();
        loop {
            let peers = self.peers();
            if condition(&peers) {
                return Ok(peers);
            }
            let changed = crate::mesh::peer_table::next_event(&mut events);
            if tokio::time::timeout_at(until, changed).await.is_err() {
                return Err(Error::new(
                    ErrorKind::DeadlineExceeded,
                    "peer condition not met in time",
                ));
            }
        }
    }

    /// Request on a channel: select-one among remote servers, then exactly one terminal
    /// result (reply, error reply, `DeadlineExceeded`, `Unavailable`, `ShuttingDown`).
    pub async fn request_to_channel<R: Request>(
        &self,
        channel: &str,
        request: &R,
    ) -> Result<R::Reply> {
        self.request_to_channel_with(channel, request, CallOptions::default())
            .await
    }

    /// [`request_to_channel`](Self::request_to_channel) with timeout and metadata.
    pub async fn request_to_channel_with<R: Request>(
        &self,
        channel: &str,
        request: &R,
        options: CallOptions,
    ) -> Result<R::Reply> {
        self.typed_request(Target::Channel(channel), request, options)
            .await
    }

    /// One-way send on a channel: completes when the local queue accepts it.
    pub async fn send_to_channel<M: Message>(&self, channel: &str, message: &M) -> Result<()> {
        self.send_to_channel_with(channel, message, CallOptions::default())
            .await
    }

    /// [`send_to_channel`](Self::send_to_channel) with timeout and metadata.
    pub async fn send_to_channel_with<M: Message>(
        &self,
        channel: &str,
        message: &M,
        options: CallOptions,
    ) -> Result<()> {
        self.typed_send(Target::Channel(channel), message, options)
            .await
    }

    /// Request to one node by RID; never redirected to another node.
    pub async fn request_to_node<R: Request>(&self, rid: &str, request: &R) -> Result<R::Reply> {
        self.request_to_node_with(rid, request, CallOptions::default())
            .await
    }

    /// [`request_to_node`](Self::request_to_node) with timeout and metadata.
    pub async fn request_to_node_with<R: Request>(
        &self,
        rid: &str,
        request: &R,
        options: CallOptions,
    ) -> Result<R::Reply> {
        self.typed_request(Target::Node(rid), request, options)
            .await
    }

    /// One-way send to one node by RID.
    pub async fn send_to_node<M: Message>(&self, rid: &str, message: &M) -> Result<()> {
        self.send_to_node_with(rid, message, CallOptions::default())
            .await
    }

    /// [`send_to_node`](Self::send_to_node) with timeout and metadata.
    pub async fn send_to_node_with<M: Message>(
        &self,
        rid: &str,
        message: &M,
        options: CallOptions,
    ) -> Result<()> {
        self.typed_send(Target::Node(rid), message, options).await
    }

    async fn typed_request<R: Request>(
        &self,
        target: Target<'_>,
        request: &R,
        options: CallOptions,
    ) -> Result<R::Reply> {
        let payload = request.encode()?;
        let reply = match target {
            Target::Channel(channel) => {
                self.calling_node(channel)?
                    .calls()
                    .call_channel(channel, true, R::PACKET_NAME, payload, &options)
                    .await?
            }
            Target::Node(rid) => {
                self.node
                    .calls()
                    .call_node(rid, true, R::PACKET_NAME, payload, &options)
                    .await?
            }
        };
        R::Reply::decode(&reply)
    }

    async fn typed_send<M: Message>(
        &self,
        target: Target<'_>,
        message: &M,
        options: CallOptions,
    ) -> Result<()> {
        let payload = message.encode()?;
        match target {
            Target::Channel(channel) => {
                self.calling_node(channel)?
                    .calls()
                    .call_channel(channel, false, M::PACKET_NAME, payload, &options)
                    .await?
            }
            Target::Node(rid) => {
                self.node
                    .calls()
                    .call_node(rid, false, M::PACKET_NAME, payload, &options)
                    .await?
            }
        };
        Ok(())
    }

    /// The node serving `channel`: the RouteMesh node or a ClientServer server node.
    fn serving_node(&self, channel: &str) -> Option<Arc<MeshNode>> {
        if self.node.registry().server(channel).is_some() {
            return Some(self.node.clone());
        }
        self.client_server()?.server(channel).cloned()
    }

    /// Changes this node's weight for one server channel (0..=10000), RouteMesh or
    /// ClientServer, and propagates it to connected peers (and, with a Location Store, to
    /// the published descriptor). Weight 0 drains: no new selections, in-flight work
    /// completes, and node-direct calls are unaffected.
    pub fn set_weight(&self, channel: &str, weight: u32) -> Result<()> {
        match self.serving_node(channel) {
            Some(node) => node.set_weight(channel, weight),
            None => self.node.set_weight(channel, weight),
        }
    }

    /// This node's current weight for a server channel.
    pub fn weight(&self, channel: &str) -> Option<u32> {
        self.serving_node(channel)?
            .registry()
            .server(channel)
            .map(|e| e.weight())
    }

    /// Publishes `event` on fanout `channel` with its packet name as topic. Completes when
    /// queued locally; zero subscribers is success. See [`publish_topic_with`](Self::publish_topic_with).
    pub async fn publish<M: Message>(&self, channel: &str, event: &M) -> Result<()> {
        self.publish_topic_with(channel, M::PACKET_NAME, event, CallOptions::default())
            .await
    }

    /// Publishes `event` on fanout `channel` under an explicit `topic`.
    pub async fn publish_topic<M: Message>(
        &self,
        channel: &str,
        topic: &str,
        event: &M,
    ) -> Result<()> {
        self.publish_topic_with(channel, topic, event, CallOptions::default())
            .await
    }

    /// [`publish_topic`](Self::publish_topic) with a timeout: with NoDrop, how long publish
    /// may wait for room (default: the send timeout) before `DeadlineExceeded`. The reserved
    /// beacon topic `01 5A 4C 46 31` is an argument error.
    pub async fn publish_topic_with<M: Message>(
        &self,
        channel: &str,
        topic: &str,
        event: &M,
        options: CallOptions,
    ) -> Result<()> {
        if !self.node.is_running() {
            return Err(Error::new(
                ErrorKind::ShuttingDown,
                "the runtime is shutting down",
            ));
        }
        let roles = self.fanout_roles()?;
        let publisher = roles.publisher(channel)?;
        let payload = event.encode()?;
        let timeout = options.timeout.unwrap_or(self.node.settings().send_timeout);
        publisher
            .publish(
                bytes::Bytes::copy_from_slice(topic.as_bytes()),
                M::PACKET_NAME,
                &options.metadata,
                payload,
                timeout,
            )
            .await
    }

    /// Where subscribers reach this process's fanout publisher of `channel`.
    pub fn fanout_endpoint(&self, channel: &str) -> Option<String> {
        let roles = self.fanout_roles().ok()?;
        let endpoint = roles.publisher(channel).ok()?.endpoint().to_string();
        Some(endpoint)
    }

    /// How many subscriber copies this process's publisher of `channel` dropped at the
    /// SendHighWaterMark. `NotConfigured` when this process publishes no such channel.
    pub fn fanout_dropped(&self, channel: &str) -> Result<u64> {
        Ok(self.fanout_roles()?.publisher(channel)?.dropped())
    }

    /// The publishers this process's subscriber of `channel` follows.
    pub fn fanout_publishers(&self, channel: &str) -> Vec<crate::channel::fanout::PublisherStatus> {
        self.fanout_roles()
            .ok()
            .and_then(|roles| roles.subscriber(channel).map(|s| s.statuses()))
            .unwrap_or_default()
    }

    /// The endpoint clients reach this process's ClientServer server of `channel` at (the
    /// real bound port), if it serves one.
    pub fn client_server_endpoint(&self, channel: &str) -> Option<String> {
        self.client_server()?.server(channel).map(|n| n.endpoint())
    }

    /// The ready servers this process's ClientServer client of `channel` can select, sorted
    /// by RID (empty when it is not a client of `channel`).
    pub fn client_server_servers(&self, channel: &str) -> Vec<PeerStatus> {
        self.client_server()
            .and_then(|roles| roles.client(channel).map(|n| n.peer_statuses()))
            .unwrap_or_default()
    }

    /// The process's ClientServer roles (absent only while starting).
    fn client_server(&self) -> Option<Arc<ClientServerRoles>> {
        self.node.subsystem::<ClientServerRoles>()
    }

    fn fanout_roles(&self) -> Result<Arc<FanoutRoles>> {
        self.node
            .subsystem::<FanoutRoles>()
            .ok_or_else(|| Error::new(ErrorKind::NotConfigured, "this node has no fanout roles"))
    }

    /// The node that calls on `channel`: the RouteMesh node for RouteMesh channels, the
    /// ClientServer client node otherwise.
    pub(crate) fn calling_node(&self, channel: &str) -> Result<Arc<MeshNode>> {
        if self.node.registry().can_send(channel) {
            return Ok(self.node.clone());
        }
        let roles = self.client_server();
        if let Some(client) = roles.as_ref().and_then(|r| r.client(channel)) {
            return Ok(client.clone());
        }
        if roles.is_some_and(|r| r.server(channel).is_some()) {
            return Err(Error::new(
                ErrorKind::NotConfigured,
                format!("channel {channel} has only the ClientServer Server role here: a server answers, it cannot call"),
            ));
        }
        Err(Error::new(
            ErrorKind::NotFound,
            format!("channel {channel} is not registered on this node"),
        ))
    }

    /// Whether the runtime still admits new calls.
    pub fn is_running(&self) -> bool {
        self.node.is_running()
    }
}
