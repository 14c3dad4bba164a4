//! [`Runtime`]: the owner of a started node.

use std::sync::Arc;
use std::time::Duration;

use super::config::{RuntimeBuilder, Settings};
use super::lifecycle::Started;
use super::shutdown::{ShutdownOptions, ShutdownOutcome, ShutdownReason};
use crate::handle::Handle;
use crate::object::RelocationReport;
use crate::Result;

/// A started node, and the right to stop it: its one owner (not `Clone`).
///
/// It holds the node's lifecycle (shutdown, drain, relocation of everything, undrain,
/// recovery and status). Every call goes through its [`Handle`], which a `Runtime`
/// dereferences to (`rt.spots()` is `rt.handle().spots()`). Give handlers, tasks and
/// clients a clone of the handle: it can call anything but cannot stop the node. A
/// handler's context has one already.
///
/// ```compile_fail
/// // One owner: a second one cannot be made, so only one place can stop the node.
/// fn second_owner(rt: &zlink::Runtime) -> zlink::Runtime {
///     rt.clone()
/// }
/// ```
///
/// ```
/// // Anyone may hold the handle.
/// fn caller(rt: &zlink::Runtime) -> zlink::Handle {
///     rt.handle().clone()
/// }
/// ```
pub struct Runtime {
    handle: Handle,
    started: Arc<Started>,
}

impl Runtime {
    /// Starts describing a node.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    pub(crate) async fn start(settings: Settings) -> Result<Runtime> {
        let (handle, started) = super::lifecycle::start(settings).await?;
        Ok(Runtime {
            handle,
            started: Arc::new(started),
        })
    }

    /// The handle: everything a caller does with the node, without the right to stop it.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Stops the node, releasing what it owns ([`ShutdownOptions`]' defaults).
    pub async fn shutdown(&self) -> ShutdownOutcome {
        self.shutdown_with(ShutdownOptions::new()).await
    }

    /// Stops the node. In order: it publishes that it is draining (placement passes it
    /// over); with [`ShutdownOptions::relocate_first`] it moves its objects to other
    /// serving nodes; new calls fail `ShuttingDown`; its STREAM sessions close; each Spot
    /// runs `on_closing(HostShutdown)`; every Spot and Actor authority it still holds is
    /// released, so those IDs read Missing and can be created again anywhere; accepted
    /// inbound work may finish within the grace; outstanding outbound requests end
    /// `ShuttingDown`; its descriptor and owner lease are withdrawn; connections and the
    /// listener close. Every task of the node has ended when this returns.
    ///
    /// Concurrent calls share one shutdown, which runs to its end even if its callers
    /// stop waiting; a call after the node stopped returns the first one's outcome (only
    /// the first call's `options` count).
    pub async fn shutdown_with(&self, options: ShutdownOptions) -> ShutdownOutcome {
        let mut stopped = self.started.stopped.subscribe();
        if !self
            .started
            .stopping
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            let (handle, started) = (self.handle.clone(), self.started.clone());
            tokio::spawn(async move { stop_once(&handle, &started, options).await });
        }
        let outcome = stopped
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|outcome| *outcome);
        outcome.unwrap_or(ShutdownOutcome::ForceStopped(
            ShutdownReason::TeardownFailed,
        ))
    }

    /// Serves until the process is asked to stop (Ctrl-C, or SIGTERM on Unix), then
    /// shuts down with `options` and returns how it ended: the one line an
    /// application's `main` needs. If the signal handlers cannot be installed, it logs
    /// why (at error) and shuts down at once.
    pub async fn shutdown_on_signal(&self, options: ShutdownOptions) -> ShutdownOutcome {
        match super::stop_signal().await {
            Ok(which) => tracing::info!(rid = %self.rid(), signal = ?which, "asked to stop"),
            Err(e) => {
                tracing::error!(rid = %self.rid(), error = %e, "cannot wait for a stop signal; stopping now")
            }
        }
        self.shutdown_with(options).await
    }

    /// Returns a node that [`relocate_all`](Self::relocate_all) (or an operator's drain)
    /// left draining to service: it publishes that it serves again, and placement puts new
    /// objects on it. `ShuttingDown` once it is stopping.
    pub async fn undrain(&self) -> Result<()> {
        self.controls().undrain().await
    }

    /// Test-only: ends the node as a killed process ends. Nothing is withdrawn from the
    /// Location Store and the owner lease is not released (it expires by itself);
    /// connections and the listener just close; pending calls fail `ShuttingDown`. For
    /// tests of what survives a crash (the testkit's `TestCluster::kill` uses it).
    #[doc(hidden)]
    pub async fn crash(&self) {
        super::lifecycle::crash(self.handle.node()).await;
        // Nothing was given back: a later shutdown call hears that.
        let crashed = ShutdownOutcome::ForceStopped(ShutdownReason::TeardownFailed);
        self.started.stopped.send_if_modified(|outcome| {
            let first = outcome.is_none();
            outcome.get_or_insert(crashed);
            first
        });
    }

    /// Recovery over this node's Location Store: where objects are, what a node owns,
    /// and the fenced reclaim of a crashed node's objects once its owner lease expired
    /// (see [`Objects`](crate::object::recovery::Objects)). `NotConfigured` without a
    /// Location Store.
    pub fn objects(&self) -> Result<crate::object::recovery::Objects> {
        self.controls().objects()
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
    pub async fn relocate_all(&self) -> Result<RelocationReport> {
        self.controls().drain().await
    }

    /// [`relocate_all`](Self::relocate_all), then keeps relaying old-route messages for
    /// `linger` (callers that cached this node reach the new owners meanwhile, and are
    /// told to look them up), then [`shutdown`](Self::shutdown). Objects that did not move
    /// are stopped with the node.
    pub async fn drain(&self, linger: Duration) -> Result<RelocationReport> {
        let report = self.relocate_all().await?;
        if !linger.is_zero() {
            tokio::time::sleep(linger).await;
        }
        self.shutdown().await;
        Ok(report)
    }

    /// What an operator's tools may change on this node (drain, undrain, move one object,
    /// reclaim, disconnect a session), cloneable, without the right to stop it.
    pub fn controls(&self) -> super::Controls {
        super::Controls::new(self.handle.clone(), self.started.clone())
    }

    /// This node's status stream from now on: ordered events (host state, peers, objects
    /// created, moved, arrived, closed and reclaimed, STREAM sessions), each with a
    /// sequence number. A slow reader never slows the node: what it falls too far behind
    /// on is skipped and counted ([`Observed::lost`](crate::telemetry::Observed::lost)).
    /// A node keeps no events until it is first observed.
    pub fn observe(&self) -> crate::telemetry::Observer {
        self.operator().observe_after(0)
    }

    /// One snapshot of this runtime's state: identity, peers, channel weights, ClientServer
    /// and fanout roles, and the Location Store's view. Serializable (for example to JSON).
    pub fn status(&self) -> super::RuntimeStatus {
        super::RuntimeStatus::of(&self.handle, &self.started)
    }

    /// Whether the node is alive and ready, with every readiness check (see
    /// [`Operator::health`](super::Operator::health)): what `/alive` and `/ready` probes
    /// answer.
    pub fn health(&self) -> super::Health {
        self.operator().health()
    }

    /// One page of the Spots and Actors this node runs now (see
    /// [`Operator::hosted_objects`](super::Operator::hosted_objects)).
    pub fn hosted_objects(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<crate::object::HostedObjects> {
        self.operator().hosted_objects(after, limit)
    }

    /// A cloneable view of this node for operators' tools: its status and health, for
    /// the node's whole life, without the right to stop it.
    pub fn operator(&self) -> super::Operator {
        super::Operator::new(self.handle.clone(), self.started.clone())
    }

    /// Where the STREAM listener `name` takes clients (`tcp://host:port` or
    /// `ws://host:port`, with the port it bound).
    pub fn stream_endpoint(&self, name: &str) -> Option<String> {
        self.started.streams.endpoint(name)
    }

    /// RouteCacheMaxAge now: how long a confirmed Spot or Actor route is reused (0: the
    /// cache is off). `NotConfigured` without a Location Store.
    pub fn route_cache_max_age(&self) -> crate::Result<std::time::Duration> {
        Ok(self.handle.objects()?.timing().0)
    }

    /// MessageFollowDuration now: how long a node relays what still arrives for an
    /// object that moved away (0: not at all). `NotConfigured` without a Location Store.
    pub fn message_follow_duration(&self) -> crate::Result<std::time::Duration> {
        Ok(self.handle.objects()?.timing().1)
    }

    /// Changes RouteCacheMaxAge while the node runs. It applies to routes cached from
    /// now on; a route cached already keeps the lifetime it was given. 0 turns the cache
    /// off for new routes. With both on, it must stay at least 5 s below
    /// MessageFollowDuration: otherwise `InvalidArgument`, and nothing changes.
    pub fn set_route_cache_max_age(&self, max_age: std::time::Duration) -> crate::Result<()> {
        self.handle.objects()?.set_timing(Some(max_age), None)
    }

    /// Changes MessageFollowDuration while the node runs. It applies to moves that
    /// start from now on; a move under way, and the follow routes of moves done, keep
    /// theirs. 0 turns Message Follow off for new moves. With both on, it must stay at
    /// least 5 s above RouteCacheMaxAge: otherwise `InvalidArgument`, and nothing changes.
    pub fn set_message_follow_duration(&self, duration: std::time::Duration) -> crate::Result<()> {
        self.handle.objects()?.set_timing(None, Some(duration))
    }
}

/// The one shutdown of this node, whose outcome every caller hears.
async fn stop_once(handle: &Handle, started: &Started, options: ShutdownOptions) {
    let grace = options
        .grace
        .unwrap_or(handle.node().settings().shutdown_grace);
    let before = tokio::time::Instant::now() + grace;
    if options.relocate_first && handle.is_running() {
        relocate_before_stopping(handle, started, grace).await;
    }
    let outcome = super::lifecycle::shutdown(handle.node(), grace, Some(before))
        .await
        // The node crashed meanwhile (a test's `crash`): nothing was given back.
        .unwrap_or(ShutdownOutcome::ForceStopped(
            ShutdownReason::TeardownFailed,
        ));
    started.stopped.send_if_modified(|recorded| {
        let first = recorded.is_none();
        recorded.get_or_insert(outcome);
        first
    });
}

/// The rolling-restart step of a shutdown: moves what can move, within `grace`.
async fn relocate_before_stopping(handle: &Handle, started: &Started, grace: Duration) {
    let Some(objects) = &started.objects else {
        return;
    };
    match tokio::time::timeout(grace, objects.relocate_all(true)).await {
        Ok(report) => tracing::info!(
            rid = %handle.rid(),
            moved = report.moved.len() + report.moved_spots.len(),
            stayed = report.blocked.len() + report.failed.len(),
            "relocated before stopping; what stayed is released"
        ),
        Err(_) => tracing::warn!(
            rid = %handle.rid(),
            ?grace,
            "relocating before stopping took the whole grace; what stayed is released"
        ),
    }
}

impl std::ops::Deref for Runtime {
    type Target = Handle;

    /// The node's [`Handle`]: every call a node makes.
    fn deref(&self) -> &Handle {
        &self.handle
    }
}

impl From<&Runtime> for Handle {
    fn from(runtime: &Runtime) -> Self {
        runtime.handle.clone()
    }
}
