//! [`Channels`]: the runtime's handle for channel roles.

use tokio::time::Instant;

use super::Runtime;
use crate::mesh::peer_table::next_event;
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
    /// `channel` (RouteMesh or ClientServer), woken by peer events rather than polling.
    /// Fails `NotFound` when this node does not call `channel`, and `DeadlineExceeded`
    /// after the runtime's request timeout.
    ///
    /// ```no_run
    /// # async fn run(rt: zlink::Runtime) -> zlink::Result<()> {
    /// rt.channels().ready("greet", 2).await?;
    /// # Ok(()) }
    /// ```
    pub async fn ready(&self, channel: &str, servers: usize) -> Result<()> {
        let node = self.runtime.calling_node(channel)?;
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

    /// How many ready servers with weight > 0 this node can select for `channel` now.
    pub fn ready_servers(&self, channel: &str) -> Result<usize> {
        let node = self.runtime.calling_node(channel)?;
        Ok(node.peers().candidates(channel))
    }
}
