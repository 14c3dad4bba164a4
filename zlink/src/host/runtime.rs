//! [`Runtime`]: the handle applications hold.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::config::{RuntimeBuilder, Settings};
use crate::call::CallOptions;
use crate::channel::client_server::ClientServerRoles;
use crate::channel::fanout::FanoutRoles;
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

    /// The channel roles of this node: readiness of the channels it calls, weights of
    /// the channels it serves, ClientServer endpoints.
    pub fn channels(&self) -> super::Channels<'_> {
        super::Channels::new(self)
    }

    /// The fanout roles of this process: publishing, and what publishers and subscribers
    /// see.
    pub fn fanout(&self) -> super::FanoutHandle<'_> {
        super::FanoutHandle::new(self)
    }

    /// Spots: create, find and close them, and message them by ID.
    pub fn spots(&self) -> super::Spots<'_> {
        super::Spots::new(self)
    }

    /// Actors: create, find and destroy them, and message them by ID.
    pub fn actors(&self) -> super::Actors<'_> {
        super::Actors::new(self)
    }

    /// Moves every object this node owns to other nodes, live (a planned maintenance):
    /// each Actor in the Entry Spot goes to the node placement picks, with its queue,
    /// timers and (`relocation = preserve`) state, while callers keep calling it by ID.
    /// Meanwhile this node takes no new objects. Objects that may not move stay and are
    /// reported as blocked; moves that fail are reported with their errors.
    ///
    /// When everything moved, the node stays up taking no objects: it relays what still
    /// arrives on old routes (for MessageFollowDuration) until it is shut down. Otherwise
    /// it serves again. See [`drain`](Self::drain) to move everything and stop.
    pub async fn relocate_all(&self) -> Result<crate::object::RelocationReport> {
        Ok(super::objects::server(self)?.relocate_all().await)
    }

    /// [`relocate_all`](Self::relocate_all), then keeps relaying old-route messages for
    /// `linger` (callers that cached this node reach the new owners meanwhile, and are
    /// told to look them up), then [`shutdown`](Self::shutdown). Objects that did not move
    /// are stopped with the node.
    pub async fn drain(&self, linger: Duration) -> Result<crate::object::RelocationReport> {
        let report = self.relocate_all().await?;
        if !linger.is_zero() {
            tokio::time::sleep(linger).await;
        }
        self.shutdown().await;
        Ok(report)
    }

    /// What this node knows from the Location Store: members and its owner lease.
    pub fn discovery(&self) -> super::DiscoveryHandle<'_> {
        super::DiscoveryHandle::new(self)
    }

    /// One snapshot of this runtime's state: identity, peers, channel weights, ClientServer
    /// and fanout roles, and the Location Store's view. Serializable (for example to JSON).
    pub fn status(&self) -> super::RuntimeStatus {
        super::RuntimeStatus::of(self)
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
    pub(crate) fn serving_node(&self, channel: &str) -> Option<Arc<MeshNode>> {
        if self.node.registry().weight(channel).is_some() {
            return Some(self.node.clone());
        }
        self.client_server()?.server(channel).cloned()
    }

    /// The process's ClientServer roles (absent only while starting).
    pub(crate) fn client_server(&self) -> Option<Arc<ClientServerRoles>> {
        self.node.subsystem::<ClientServerRoles>()
    }

    pub(crate) fn fanout_roles(&self) -> Result<Arc<FanoutRoles>> {
        self.node
            .subsystem::<FanoutRoles>()
            .ok_or_else(|| Error::new(ErrorKind::NotConfigured, "this node has no fanout roles"))
    }

    /// The node that calls on `channel`: the RouteMesh node for RouteMesh channels, the
    /// ClientServer client node otherwise.
    pub(crate) fn calling_node(&self, channel: &str) -> Result<Arc<MeshNode>> {
        if channel.is_empty() || channel.len() > crate::wire::MAX_NAME_BYTES {
            return Err(Error::InvalidArgument(format!(
                "ChannelName must be 1..=255 bytes, {channel:?} is {}",
                channel.len()
            )));
        }
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

    /// Declares the Client role for `channel` unless this node already calls or serves it
    /// (RouteMesh or ClientServer).
    pub(crate) fn declare_client(&self, channel: &str) {
        // Decided from the settings, not the running roles: during start a ClientServer
        // channel must not become a RouteMesh one.
        let client_server = self
            .node
            .settings()
            .client_server_channels
            .iter()
            .any(|name| name == channel);
        let undeclared = !client_server
            && matches!(self.calling_node(channel), Err(e) if e.is(ErrorKind::NotFound));
        if undeclared {
            if let Err(e) = self.node.registry().declare_client(channel) {
                tracing::warn!(channel, error = %e, "client role not declared");
            }
        }
    }

    /// Whether the runtime still admits new calls.
    pub fn is_running(&self) -> bool {
        self.node.is_running()
    }
}
