//! Orderly shutdown.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Runtime;
use crate::mesh::node::{lock, SHUTTING_DOWN, STOPPED};
use crate::mesh::MeshNode;

impl Runtime {
    /// Stops the node: new calls fail `ShuttingDown`; accepted inbound work may finish for
    /// the configured grace; outstanding outbound requests end `ShuttingDown`; connections
    /// and the listener close; every task of the node has ended when this returns.
    pub async fn shutdown(&self) {
        self.shutdown_within(self.node.settings.shutdown_grace)
            .await
    }

    /// [`shutdown`](Self::shutdown) with an explicit grace for accepted work.
    pub async fn shutdown_within(&self, grace: Duration) {
        let node = &self.node;
        if node
            .state
            .compare_exchange(0, SHUTTING_DOWN, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // Someone else is (or was) shutting down: wait for them.
            node.background.wait().await;
            return;
        }
        tracing::info!(rid = %node.settings.rid, "shutdown started");
        node.stop_fanout().await;
        // ClientServer nodes first: servers finish accepted work, clients end their calls.
        for cs in node.client_server_nodes() {
            Box::pin(Runtime::from_node(cs).shutdown_within(grace)).await;
        }
        node.work.close();
        if tokio::time::timeout(grace, node.work.wait()).await.is_err() {
            tracing::warn!(rid = %node.settings.rid, "shutdown grace ended with handlers still running");
        }
        node.pending.close();
        node.leave_store().await;
        // Give queued replies of finished handlers a moment to leave before closing.
        tokio::time::sleep(Duration::from_millis(20)).await;
        node.cancel.cancel();
        node.close_links("shutdown");
        node.work.wait().await;
        node.background.close();
        node.background.wait().await;
        node.state.store(STOPPED, Ordering::Release);
        tracing::info!(rid = %node.settings.rid, "shutdown complete");
    }

    /// Test-only: ends the node as a killed process ends. Nothing is withdrawn from the
    /// Location Store and the owner lease is not released (it expires by itself);
    /// connections and the listener just close; pending calls fail `ShuttingDown`. Only
    /// available with the `test-timing` feature.
    #[cfg(feature = "test-timing")]
    pub async fn crash(&self) {
        let node = &self.node;
        node.stop_fanout().await;
        for cs in node.client_server_nodes() {
            Box::pin(Runtime::from_node(cs).crash()).await;
        }
        node.state.store(STOPPED, Ordering::Release);
        node.cancel.cancel();
        node.pending.close();
        node.close_links("crashed");
        node.work.close();
        node.background.close();
        node.background.wait().await;
        tracing::info!(rid = %node.settings.rid, "node crashed (test)");
    }
}

impl MeshNode {
    /// Closes every connection and the listener.
    fn close_links(&self, reason: &'static str) {
        let conns: Vec<u64> = lock(&self.conns).keys().copied().collect();
        for id in conns {
            self.connection_lost(id, reason);
        }
        if let Some(listener) = lock(&self.listener).take() {
            listener.close();
        }
    }
}
