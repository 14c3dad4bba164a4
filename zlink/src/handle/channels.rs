//! [`Channels`]: calls on channels, and this node's channel roles.

use std::sync::Arc;

use tokio::time::Instant;

use super::call_builder::{Call, OneWay, Reply, Target};
use super::Handle;
use crate::mesh::peer_table::next_event;
use crate::mesh::{MeshNode, PeerStatus};
use crate::wire::{Message, Request, MAX_NAME_BYTES};
use crate::{Error, ErrorKind, Result};

/// The channel side of a handle, from [`Handle::channels`] (a
/// `Runtime` dereferences to its handle).
#[derive(Clone, Copy)]
pub struct Channels<'a> {
    handle: &'a Handle,
}

impl<'a> Channels<'a> {
    pub(crate) fn new(handle: &'a Handle) -> Self {
        Channels { handle }
    }

    /// A request on `channel`: one ready server is selected by weight (RouteMesh, or this
    /// process's ClientServer client of `channel`), then exactly one terminal result.
    /// A channel this process neither calls nor serves is `NotFound`; one it only serves
    /// through ClientServer is `NotConfigured`.
    pub fn request<R: Request>(self, channel: &'a str, request: &R) -> Call<'a, Reply<R::Reply>> {
        Call::new(self.handle, Ok(Target::Channel(channel)), request)
    }

    /// A one-way send on `channel`: complete when the local queue accepts it.
    pub fn send<M: Message>(self, channel: &'a str, message: &M) -> Call<'a, OneWay> {
        Call::new(self.handle, Ok(Target::Channel(channel)), message)
    }

    /// Waits until at least `servers` ready servers with weight > 0 can be selected for
    /// `channel` (RouteMesh, or the ClientServer client of `channel`), woken by peer events
    /// rather than polling. Fails `DeadlineExceeded` after the runtime's request timeout,
    /// `NotConfigured` when this process only serves `channel` through ClientServer.
    ///
    /// ```no_run
    /// # async fn run(rt: zlink::Runtime) -> zlink::Result<()> {
    /// rt.channels().ready("greet", 2).await?;
    /// # Ok(()) }
    /// ```
    pub async fn ready(self, channel: &str, servers: usize) -> Result<()> {
        let node = self.node_for(channel)?;
        let until = Instant::now() + node.settings().request_timeout;
        let mut events = node.peers().subscribe();
        loop {
            if node.peers().candidates(channel) >= servers {
                return Ok(());
            }
            if tokio::time::timeout_at(until, next_event(&mut events))
                .await
                .is_err()
            {
                let failures = node.links().dial_failures();
                let why = if failures.is_empty() {
                    String::new()
                } else {
                    format!("; {}", failures.join("; "))
                };
                return Err(Error::new(
                    ErrorKind::DeadlineExceeded,
                    format!(
                        "channel {channel} did not reach {servers} ready server(s) in time{why}"
                    ),
                ));
            }
            node.calls().ensure_running()?;
        }
    }

    /// How many ready servers with weight > 0 this node can select for `channel` now.
    pub fn ready_servers(self, channel: &str) -> Result<usize> {
        Ok(self.node_for(channel)?.peers().candidates(channel))
    }

    /// Changes this node's weight for one server channel (0..=10000), RouteMesh or
    /// ClientServer, and propagates it to connected peers (and, with a Location Store, to
    /// the published descriptor). Weight 0 drains: no new selections, in-flight work
    /// completes, and node-direct calls are unaffected.
    pub fn set_weight(self, channel: &str, weight: u32) -> Result<()> {
        match self.serving_node(channel) {
            Some(node) => node.set_weight(channel, weight),
            None => self.handle.node().set_weight(channel, weight),
        }
    }

    /// This node's current weight for a server channel.
    pub fn weight(self, channel: &str) -> Option<u32> {
        self.serving_node(channel)?.registry().weight(channel)
    }

    /// The endpoint clients reach this process's ClientServer server of `channel` at (the
    /// real bound port), if it serves one.
    pub fn client_server_endpoint(self, channel: &str) -> Option<String> {
        let roles = self.handle.client_server()?;
        roles.server(channel).map(|n| n.endpoint())
    }

    /// The ready servers this process's ClientServer client of `channel` can select, sorted
    /// by RID. `NotConfigured` when this process is not a ClientServer client of `channel`.
    pub fn client_server_servers(self, channel: &str) -> Result<Vec<PeerStatus>> {
        self.handle
            .client_server()
            .and_then(|roles| roles.client(channel))
            .map(|node| node.peer_statuses())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NotConfigured,
                    format!("this node is not a ClientServer client of {channel}"),
                )
            })
    }

    /// The node whose peers serve `channel` for this process: its ClientServer client, or
    /// the RouteMesh node (declared or not: readiness does not need the Client role).
    fn node_for(self, channel: &str) -> Result<Arc<MeshNode>> {
        match self.calling_node(channel) {
            Err(e) if e.is(ErrorKind::NotFound) => Ok(self.handle.node().clone()),
            other => other,
        }
    }

    /// The node serving `channel`: the RouteMesh node or a ClientServer server node.
    fn serving_node(self, channel: &str) -> Option<Arc<MeshNode>> {
        let node = self.handle.node();
        if node.registry().weight(channel).is_some() {
            return Some(node.clone());
        }
        self.handle.client_server()?.server(channel)
    }

    /// The node that calls on `channel`: the RouteMesh node for RouteMesh channels, the
    /// ClientServer client node otherwise.
    pub(crate) fn calling_node(self, channel: &str) -> Result<Arc<MeshNode>> {
        if channel.is_empty() || channel.len() > MAX_NAME_BYTES {
            return Err(Error::InvalidArgument(format!(
                "ChannelName must be 1..=255 bytes, {channel:?} is {}",
                channel.len()
            )));
        }
        let node = self.handle.node();
        if node.registry().can_send(channel) {
            return Ok(node.clone());
        }
        let roles = self.handle.client_server();
        if let Some(client) = roles.and_then(|r| r.client(channel)) {
            return Ok(client);
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
    pub(crate) fn declare_client(self, channel: &str) {
        let node = self.handle.node();
        // Decided from the settings, not the running roles: during start a ClientServer
        // channel must not become a RouteMesh one.
        let client_server = node
            .settings()
            .client_server_channels
            .iter()
            .any(|name| name == channel);
        let undeclared = !client_server
            && matches!(self.calling_node(channel), Err(e) if e.is(ErrorKind::NotFound));
        if undeclared {
            if let Err(e) = node.registry().declare_client(channel) {
                tracing::warn!(channel, error = %e, "client role not declared");
            }
        }
    }
}
