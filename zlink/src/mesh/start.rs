//! Bringing a node's links up: listener, liveness, the deadline sweeper, manual dialers.

use std::sync::Arc;

use super::MeshNode;
use crate::{Error, ErrorKind, Result};

impl MeshNode {
    /// Binds the node's listener (if it has one), starts liveness, the pending table's
    /// deadline sweeper and its manual dialers, and, for a ClientServer node with a store,
    /// its discovery.
    pub(crate) async fn start_links(self: &Arc<Self>) -> Result<()> {
        if !self.settings.listen.is_empty() {
            let events = Arc::new(super::inbound::NodeEvents::accepted(Arc::downgrade(self)));
            let listener = self
                .settings
                .transport
                .listen(
                    &self.settings.listen,
                    events,
                    crate::link::ListenOptions {
                        limits: self.link_limits(),
                        security: self.settings.security.server(),
                    },
                )
                .await
                .map_err(|e| {
                    Error::new(
                        ErrorKind::Unavailable,
                        format!("cannot listen on {}: {e}", self.settings.listen),
                    )
                })?;
            *super::node::lock(&self.endpoint) = crate::link::advertised(
                &listener.endpoint(),
                self.settings.advertise_host.as_deref(),
            );
            *super::node::lock(&self.listener) = Some(listener);
        }
        self.background.spawn(self.pending.clone().run_sweeper());
        self.spawn_liveness();
        for peer in self.settings.peers.clone() {
            self.spawn_dialer(peer.into(), self.cancel.child_token());
        }
        if self.topology() != crate::config::Topology::RouteMesh {
            self.spawn_discovery();
        }
        Ok(())
    }
}
