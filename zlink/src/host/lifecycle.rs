//! The order a runtime starts and stops in. `host` owns it: the node's links, then the
//! Location Store, then the subsystems (ClientServer roles, fanout roles) on start; the
//! subsystems in reverse, then the node's own work, calls, store presence and links on
//! shutdown.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::config::Settings;
use super::shutdown::{ShutdownOutcome, ShutdownReason};
use crate::channel::client_server::{ClientServerRole, ClientServerRoles};
use crate::channel::fanout::{FanoutDeclaration, FanoutRoles};
use crate::handle::Handle;
use crate::handler::{HandlerGroup, HandlerTable, NodeDirectRoute};
use crate::mesh::{Drained, MeshNode, Teardown};
use crate::object::{ObjectServer, ObjectSettings};
use crate::session::StreamListeners;
use crate::wire::Command;
use crate::{Error, ErrorKind, Result};

/// What a started runtime owns next to its node, typed, for its status and its moves.
pub(super) struct Started {
    pub(super) client_server: Arc<ClientServerRoles>,
    pub(super) fanout: Arc<FanoutRoles>,
    pub(super) objects: Option<Arc<ObjectServer>>,
    pub(super) streams: Arc<StreamListeners>,
    /// How the shutdown ended, once it has: every caller of `shutdown` hears the first
    /// one's outcome.
    pub(super) stopped: tokio::sync::watch::Sender<Option<super::ShutdownOutcome>>,
    /// Set by the first `shutdown` call, which starts the one shutdown.
    pub(super) stopping: std::sync::atomic::AtomicBool,
}

/// Starts a RouteMesh node and everything the settings declare next to it. On failure
/// everything already started is stopped again.
pub(super) async fn start(settings: Settings) -> Result<(Handle, Started)> {
    let Settings {
        mesh,
        channel_servers,
        node_handlers,
        client_server,
        fanout,
        objects,
        stream_listeners,
    } = settings;
    let handle = Handle::new(MeshNode::new(mesh, None));
    let parts = Parts {
        channel_servers,
        node_handlers,
        client_server,
        fanout,
        objects,
        stream_listeners,
    };
    let started = match start_parts(&handle, parts).await {
        Ok(started) => started,
        Err(e) => {
            shutdown(handle.node(), Duration::ZERO, None).await;
            return Err(e);
        }
    };
    let node = handle.node();
    let s = node.settings();
    tracing::info!(mesh = %s.mesh_name, rid = %s.rid, endpoint = %node.endpoint(), "node started");
    Ok((handle, started))
}

/// What the subsystems next to the RouteMesh node start with.
struct Parts {
    channel_servers: BTreeMap<String, Arc<dyn HandlerGroup>>,
    node_handlers: Option<HandlerTable>,
    client_server: Vec<ClientServerRole>,
    fanout: Vec<FanoutDeclaration>,
    objects: ObjectSettings,
    stream_listeners: Vec<crate::session::StreamListener>,
}

/// Each subsystem starts, joins the node's stop order, and plugs into the handle.
async fn start_parts(handle: &Handle, parts: Parts) -> Result<Started> {
    let node = handle.node();
    register_routes(handle, &parts.channel_servers, parts.node_handlers)?;
    node.start_links().await?;
    join_store(node).await?;
    let client_server = ClientServerRoles::start(handle, &parts.client_server).await?;
    node.add_subsystem(client_server.clone());
    handle.install_client_server(client_server.clone());
    let fanout = FanoutRoles::start(handle, &parts.fanout).await?;
    node.add_subsystem(fanout.clone());
    handle.install_fanout(fanout.clone());
    // The object layer installs itself into the handle before its Entry Spot runs.
    let objects = ObjectServer::start(handle, &parts.objects).await?;
    if let Some(objects) = &objects {
        node.add_subsystem(objects.clone());
    }
    // Sessions call Actors from their first packet: they open last and close first.
    let streams =
        StreamListeners::start(parts.stream_listeners, handle.downgrade(), objects.as_ref())
            .await?;
    node.add_subsystem(streams.clone());
    Ok(Started {
        client_server,
        fanout,
        objects,
        streams,
        stopped: tokio::sync::watch::Sender::new(None),
        stopping: std::sync::atomic::AtomicBool::new(false),
    })
}

/// The subsystems' inbound routes on the RouteMesh node: channels and node-direct.
fn register_routes(
    handle: &Handle,
    channel_servers: &BTreeMap<String, Arc<dyn HandlerGroup>>,
    node_handlers: Option<HandlerTable>,
) -> Result<()> {
    let node = handle.node();
    crate::channel::register_routes(node, channel_servers, handle.downgrade())?;
    let node_direct = Arc::new(NodeDirectRoute::new(node_handlers, handle.downgrade()));
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

/// Stops the node (reference §7.5): it says it is draining; new calls fail
/// `ShuttingDown`; the subsystems, in reverse start order, each let the work they accepted
/// finish and then stop (sessions close with a reason; Spots and Actors finish what they
/// have running or queued, then each Spot runs `on_closing(HostShutdown)` and every
/// authority the node still holds is released); the node's own accepted work may finish;
/// all of that within one `grace` (past it: `ForceStopped(DeadlineExceeded)`);
/// outstanding outbound requests end `ShuttingDown`; the descriptor is withdrawn and the
/// lease released; connections and the listener close. Every task has ended when this
/// returns. `None` when another call is (or was) stopping the node: it waited for it.
pub(super) async fn shutdown(
    node: &MeshNode,
    grace: Duration,
    before: Option<tokio::time::Instant>,
) -> Option<ShutdownOutcome> {
    if !node.begin_shutdown() {
        node.wait_closed().await;
        return None;
    }
    let rid = node.rid().to_string();
    tracing::info!(rid = %rid, "shutdown started");
    let started = tokio::time::Instant::now();
    // One grace for the whole node: what one subsystem spends draining, the next one and
    // the node's own work do not get again, so shutdown ends within `grace` (plus the
    // closing steps) however many subsystems run.
    let grace_ends = before.unwrap_or(started + grace);
    let left = || grace_ends.saturating_duration_since(tokio::time::Instant::now());
    node.set_draining(true).await;
    let mut outcome = ShutdownOutcome::Stopped;
    for subsystem in node.subsystems_reversed() {
        if subsystem.drain(left()).await == Drained::GraceEnded && outcome.is_clean() {
            outcome = ShutdownOutcome::ForceStopped(ShutdownReason::DeadlineExceeded);
        }
        if let Teardown::Failed(why) = subsystem.stop(false).await {
            tracing::warn!(rid = %rid, subsystem = subsystem.name(), why = %why, "subsystem teardown failed");
            outcome = ShutdownOutcome::ForceStopped(ShutdownReason::TeardownFailed);
        }
        tracing::debug!(rid = %rid, subsystem = subsystem.name(), "subsystem stopped");
    }
    if !node.drain_work(left()).await {
        tracing::warn!(rid = %rid, "shutdown grace ended with handlers still running");
        if outcome.is_clean() {
            outcome = ShutdownOutcome::ForceStopped(ShutdownReason::DeadlineExceeded);
        }
    }
    node.end_calls();
    node.leave_store().await;
    // Give queued replies of finished handlers a moment to leave before closing.
    tokio::time::sleep(Duration::from_millis(20)).await;
    node.close("shutdown").await;
    tracing::info!(rid = %rid, outcome = %outcome, took = ?started.elapsed(), "shutdown complete");
    Some(outcome)
}

/// Ends the node as a killed process ends: nothing is withdrawn from the Location Store
/// and the owner lease is not released (it expires by itself).
pub(super) async fn crash(node: &MeshNode) {
    node.begin_shutdown();
    for subsystem in node.subsystems_reversed() {
        let _ = subsystem.stop(true).await;
    }
    node.end_calls();
    node.close("crashed").await;
    tracing::info!(rid = %node.rid(), "node crashed (test)");
}
