//! [`Runtime`]: the handle applications hold.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::call::CallOptions;
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
        let node = MeshNode::new(settings, std::sync::Weak::new(), None);
        Self::register_routes(&node)?;
        node.start_links().await?;
        let runtime = Runtime { node: node.clone() };
        let joined = match runtime.join_store().await {
            Ok(()) => match node.start_client_server().await {
                Ok(()) => node.start_fanout().await,
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        if let Err(e) = joined {
            runtime.shutdown_within(Duration::ZERO).await;
            return Err(e);
        }
        tracing::info!(mesh = %node.settings.mesh_name, rid = %node.settings.rid, endpoint = %node.endpoint(), "node started");
        Ok(runtime)
    }

    /// The subsystems' inbound routes on the RouteMesh node: channels and node-direct.
    fn register_routes(node: &MeshNode) -> Result<()> {
        crate::channel::register_routes(node)?;
        let node_direct = Arc::new(crate::mesh::NodeDirectRoute::new(
            node.settings.node_handlers.clone(),
        ));
        node.dispatcher
            .register(crate::wire::Command::NodeSend, node_direct.clone())?;
        node.dispatcher
            .register(crate::wire::Command::NodeRequest, node_direct)
    }

    /// With a Location Store: claims the owner lease and publishes the descriptor once
    /// (each bounded by the renew timeout), then keeps both up in the background. A store
    /// that does not answer does not stop the start: the node keeps trying and connects to
    /// discovered members once the store is back. Another live node with this RID does.
    async fn join_store(&self) -> Result<()> {
        let node = &self.node;
        let Some(discovery) = node.discovery() else {
            return Ok(());
        };
        if discovery
            .lease
            .claim(discovery.settings.store.as_ref())
            .await
        {
            node.publish_descriptor().await;
        }
        if let Some(owner) = discovery.rid_taken_by() {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!(
                    "RID {} is published in mesh {} by another live node (owner {owner})",
                    node.settings.rid, node.settings.mesh_name
                ),
            ));
        }
        node.spawn_discovery();
        Ok(())
    }

    /// The owner lease, when a Location Store is registered: its token and the local
    /// admission deadline past which the node publishes nothing and admits no new object
    /// work.
    pub fn owner_lease(&self) -> Option<crate::store::OwnerLeaseStatus> {
        self.node.discovery().map(|d| d.lease_status())
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
        self.node.settings.generation
    }

    /// The MeshName.
    pub fn mesh_name(&self) -> &str {
        &self.node.settings.mesh_name
    }

    /// The RouteMesh endpoint peers dial (port 0 resolved, advertised host applied); empty
    /// for a process with only ClientServer or fanout roles.
    pub fn endpoint(&self) -> String {
        self.node.endpoint()
    }

    /// This node's CURVE public key (its security identity), when it runs CURVE.
    pub fn curve_public_key(&self) -> Option<crate::link::CurvePublicKey> {
        self.node.settings.security.public_key()
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
        let mut events = self.node.peers.subscribe();
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
                self.node
                    .calling_node(channel)?
                    .call_channel(channel, true, R::PACKET_NAME, payload, &options)
                    .await?
            }
            Target::Node(rid) => {
                self.node
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
                self.node
                    .calling_node(channel)?
                    .call_channel(channel, false, M::PACKET_NAME, payload, &options)
                    .await?
            }
            Target::Node(rid) => {
                self.node
                    .call_node(rid, false, M::PACKET_NAME, payload, &options)
                    .await?
            }
        };
        Ok(())
    }

    /// The node serving `channel`: the RouteMesh node or a ClientServer server node.
    fn serving_node(&self, channel: &str) -> Option<Arc<MeshNode>> {
        if self.node.registry.server(channel).is_some() {
            return Some(self.node.clone());
        }
        self.node.client_server_server(channel)
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
            .registry
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
        let publisher = self.node.fanout_publisher(channel)?;
        let payload = event.encode()?;
        let timeout = options.timeout.unwrap_or(self.node.settings.send_timeout);
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
        self.node
            .fanout_publisher(channel)
            .ok()
            .map(|p| p.endpoint().to_string())
    }

    /// How many subscriber copies this process's publisher of `channel` dropped at the
    /// SendHighWaterMark. `NotConfigured` when this process publishes no such channel.
    pub fn fanout_dropped(&self, channel: &str) -> Result<u64> {
        self.node.fanout_publisher(channel).map(|p| p.dropped())
    }

    /// The publishers this process's subscriber of `channel` follows.
    pub fn fanout_publishers(&self, channel: &str) -> Vec<crate::channel::fanout::PublisherStatus> {
        self.node
            .fanout_subscriber(channel)
            .map(|s| s.statuses())
            .unwrap_or_default()
    }

    /// The endpoint clients reach this process's ClientServer server of `channel` at (the
    /// real bound port), if it serves one.
    pub fn client_server_endpoint(&self, channel: &str) -> Option<String> {
        self.node
            .client_server_server(channel)
            .map(|n| n.endpoint())
    }

    /// The ready servers this process's ClientServer client of `channel` can select, sorted
    /// by RID (empty when it is not a client of `channel`).
    pub fn client_server_servers(&self, channel: &str) -> Vec<PeerStatus> {
        self.node
            .client_server_client(channel)
            .map(|n| n.peer_statuses())
            .unwrap_or_default()
    }

    /// Whether the runtime still admits new calls.
    pub fn is_running(&self) -> bool {
        self.node.is_running()
    }
}
