//! [`Channels`]: the runtime's handle for channel roles.

use tokio::time::Instant;

use super::Runtime;
use crate::mesh::peer_table::next_event;
use crate::mesh::PeerStatus;
use crate::{Error, ErrorKind, Result};

/// The channel side of a runtime, from [`Runtime::channels`].
#[derive(Clone, Copy)]
pub struct Channels<'a> {
    runtime: &'a Runtime,
}

impl<'a> Channels<'a> {
    pub(crate) fn new(runtime: &'a Runtime) -> Self {
        Channels { runtime }
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
    pub async fn ready(&self, channel: &str, servers: usize) -> Result<()> {
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
                return Err(Error::new(
                    ErrorKind::DeadlineExceeded,
                    format!("channel {channel} did not reach {servers} ready server(s) in time"),
                ));
            }
            node.calls().ensure_running()?;
        }
    }

    /// Changes this node's weight for one server channel (0..=10000), RouteMesh or
    /// ClientServer, and propagates it to connected peers (and, with a Location Store, to
    /// the published descriptor). Weight 0 drains: no new selections, in-flight work
    /// completes, and node-direct calls are unaffected.
    pub fn set_weight(&self, channel: &str, weight: u32) -> Result<()> {
        match self.runtime.serving_node(channel) {
            Some(node) => node.set_weight(channel, weight),
            None => self.runtime.node.set_weight(channel, weight),
        }
    }

    /// This node's current weight for a server channel.
    pub fn weight(&self, channel: &str) -> Option<u32> {
        self.runtime
            .serving_node(channel)?
            .registry()
            .weight(channel)
    }

    /// The endpoint clients reach this process's ClientServer server of `channel` at (the
    /// real bound port), if it serves one.
    pub fn client_server_endpoint(&self, channel: &str) -> Option<String> {
        self.runtime
            .client_server()?
            .server(channel)
            .map(|n| n.endpoint())
    }

    /// The ready servers this process's ClientServer client of `channel` can select, sorted
    /// by RID. `NotConfigured` when this process is not a ClientServer client of `channel`.
    pub fn client_server_servers(&self, channel: &str) -> Result<Vec<PeerStatus>> {
        self.runtime
            .client_server()
            .and_then(|roles| roles.client(channel).map(|n| n.peer_statuses()))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NotConfigured,
                    format!("this node is not a ClientServer client of {channel}"),
                )
            })
    }

    /// The node whose peers serve `channel` for this process: its ClientServer client, or
    /// the RouteMesh node (declared or not: readiness does not need the Client role).
    fn node_for(&self, channel: &str) -> Result<std::sync::Arc<crate::mesh::MeshNode>> {
        match self.runtime.calling_node(channel) {
            Err(e) if e.is(ErrorKind::NotFound) => Ok(self.runtime.node.clone()),
            other => other,
        }
    }

    /// How many ready servers with weight > 0 this node can select for `channel` now.
    pub fn ready_servers(&self, channel: &str) -> Result<usize> {
        Ok(self.node_for(channel)?.peers().candidates(channel))
    }
}
