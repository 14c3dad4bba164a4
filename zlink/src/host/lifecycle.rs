//! The order a runtime starts and stops in. `host` owns it: the node's links, then the
//! Location Store, then the subsystems (ClientServer roles, fanout roles) on start; the
//! subsystems in reverse, then the node's own work, calls, store presence and links on
//! shutdown.

use std::sync::Arc;
use std::time::Duration;

use crate::channel::client_server::ClientServerRoles;
use crate::channel::fanout::FanoutRoles;
use crate::config::Settings;
use crate::mesh::{MeshNode, NodeDirectRoute};
use crate::object::ObjectServer;
use crate::wire::Command;
use crate::{Error, ErrorKind, Result};

/// Starts a RouteMesh node and everything the settings declare next to it. On failure
/// everything already started is stopped again.
pub(super) async fn start(settings: Settings) -> Result<Arc<MeshNode>> {
    let node = MeshNode::new(settings, None, None);
    if let Err(e) = start_parts(&node).await {
        shutdown(&node, Duration::ZERO).await;
        return Err(e);
    }
    let s = node.settings();
    tracing::info!(mesh = %s.mesh_name, rid = %s.rid, endpoint = %node.endpoint(), "node started");
    Ok(node)
}

async fn start_parts(node: &Arc<MeshNode>) -> Result<()> {
    register_routes(node)?;
    node.start_links().await?;
    join_store(node).await?;
    let client_server = ClientServerRoles::start(node).await?;
    node.add_subsystem(client_server);
    let fanout = FanoutRoles::start(node).await?;
    node.add_subsystem(fanout);
    let settings = node.settings();
    let objects = ObjectServer::start(
        node,
        &settings.spot_types,
        &settings.actor_types,
        settings.entry_spot.clone(),
    )
    .await?;
    if let Some(objects) = objects {
        node.add_subsystem(objects);
    }
    Ok(())
}

/// The subsystems' inbound routes on the RouteMesh node: channels and node-direct.
fn register_routes(node: &MeshNode) -> Result<()> {
    crate::channel::register_routes(node)?;
    let node_direct = Arc::new(NodeDirectRoute::new(node.settings().node_handlers.clone()));
    node.dispatcher()
        .register(Command::NodeSend, node_direct.clone())?;
    node.dispatcher()
        .register(Command::NodeRequest, node_direct)
}

/// With a Location Store: claims the owner lease and publishes the descriptor once (each
/// bounded by the renew timeout), then keeps both up in the background. A store that does
/// not answer does not stop the start: the node keeps trying and connects to discovered
/// members once the store is back. Another live node with this RID does.
async fn join_store(node: &MeshNode) -> Result<()> {
    node.join_store().await;
    let taken = node.discovery().and_then(|d| d.rid_taken_by());
    if let Some(owner) = taken {
        let s = node.settings();
        return Err(Error::new(
            ErrorKind::AlreadyExists,
            format!(
                "RID {} is published in mesh {} by another live node (owner {owner})",
                s.rid, s.mesh_name
            ),
        ));
    }
    // Only a node whose RID is its own reads members and dials them.
    node.run_discovery();
    Ok(())
}

/// Stops the node: new calls fail `ShuttingDown`; the subsystems drain and stop (reverse
/// start order); accepted inbound work may finish, all of it within one `grace`; outstanding outbound
/// requests end `ShuttingDown`; the descriptor is withdrawn and the lease released;
/// connections and the listener close. Every task has ended when this returns.
pub(super) async fn shutdown(node: &MeshNode, grace: Duration) {
    if !node.begin_shutdown() {
        // Someone else is (or was) shutting down: wait for them.
        return node.wait_closed().await;
    }
    let rid = node.rid().to_string();
    tracing::info!(rid = %rid, "shutdown started");
    // One grace for the whole node: what one subsystem spends draining, the next one and
    // the node's own work do not get again, so shutdown ends within `grace` (plus the
    // closing steps) however many subsystems run.
    let grace_ends = tokio::time::Instant::now() + grace;
    let left = || grace_ends.saturating_duration_since(tokio::time::Instant::now());
    for subsystem in node.subsystems_reversed() {
        subsystem.drain(left()).await;
        subsystem.stop(false).await;
        tracing::debug!(rid = %rid, subsystem = subsystem.name(), "subsystem stopped");
    }
    if !node.drain_work(left()).await {
        tracing::warn!(rid = %rid, "shutdown grace ended with handlers still running");
    }
    node.end_calls();
    node.leave_store().await;
    // Give queued replies of finished handlers a moment to leave before closing.
    tokio::time::sleep(Duration::from_millis(20)).await;
    node.close("shutdown").await;
    tracing::info!(rid = %rid, "shutdown complete");
}

/// Ends the node as a killed process ends: nothing is withdrawn from the Location Store
/// and the owner lease is not released (it expires by itself).
#[cfg(feature = "test-timing")]
pub(super) async fn crash(node: &MeshNode) {
    node.begin_shutdown();
    for subsystem in node.subsystems_reversed() {
        subsystem.stop(true).await;
    }
    node.end_calls();
    node.close("crashed").await;
    tracing::info!(rid = %node.rid(), "node crashed (test)");
}
