//! The object layer of one node, composed of its components — the
//! [`ObjectEnv`] it runs in, the [`ObjectRegistry`] of what it serves and runs, the
//! [`Resolver`] that routes by ID and the [`Relocations`] of its moves — and the entry
//! points the handle and the lifecycle call: [`creation`](super::creation),
//! [`closing`](super::closing), [`direct`](super::direct) messaging and moves.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use super::entry::EntrySpot;
use super::env::ObjectEnv;
use super::inbound::ObjectRoute;
use super::lifecycle::ClosingReason;
use super::live_object::LiveObject;
use super::lost_sends::LostOneWays;
use super::membership::{JoinOutcome, JoinRequest, JoinStep};
use super::registry::ObjectRegistry;
use super::relocation::{self, Relocations};
use super::resolver::Resolver;
use super::settings::ObjectSettings;
use super::turn_host::{JoinAcross, ObjectHost, TurnServices};
use super::{closing, creation};
use crate::address::{Location, ObjectKey, ObjectKind, Outcome};
use crate::call::BoxFuture;
use crate::handle::Handle;
use crate::mesh::{InboundRoute, Subsystem, Teardown};
use crate::store::StoreError;
use crate::sync::LockUnpoisoned;
use crate::wire::Command;
use crate::ErrorKind;
use crate::{Error, Result};

/// The longest a clean stop spends releasing the authorities it holds (and at most the
/// lease TTL): a store that does not answer in that time leaves them to `reclaim`.
const RELEASE_LIMIT: Duration = Duration::from_secs(5);

/// Turns a store failure into the caller's error.
pub(super) fn store_error(e: StoreError) -> Error {
    Error::from(e)
}

/// The object layer of one node, as components: each owns its state and is reached
/// through its methods.
pub(crate) struct ObjectServer {
    /// The node, its handle and store, the lease and what ends with the node.
    pub(super) env: ObjectEnv,
    /// The types it serves, the objects it runs and the creations under way.
    pub(super) registry: ObjectRegistry,
    /// Routing: where each ID's owner is (route cache and per-ID lanes).
    pub(super) resolver: Arc<Resolver>,
    /// Objects leaving and arriving, with Message Follow and the move bounds.
    pub(crate) relocations: Relocations,
    /// This node's Entry Spot, when it serves Actor types.
    pub(super) entry: Option<Arc<EntrySpot>>,
    /// This node's placement weight for new objects.
    pub(super) placement_weight: u32,
    /// Logical Multicast: its subscriptions, publish workers and counts.
    multicast: super::multicast::Multicast,
    /// Serializes changes of RouteCacheMaxAge and MessageFollowDuration.
    timing_changes: std::sync::Mutex<()>,
    /// Where pushes to sessions on this node go (the session layer installs it).
    sessions: std::sync::OnceLock<Arc<dyn super::binding::LocalSessions>>,
    /// Itself, for the rare step that outlives the call which began it (a route switch's
    /// barrier): a call borrows the server and takes no reference of its own.
    me: std::sync::Weak<ObjectServer>,
}

impl ObjectServer {
    /// This node's Logical Multicast.
    pub(super) fn multicast(&self) -> &super::multicast::Multicast {
        &self.multicast
    }

    /// RouteCacheMaxAge and MessageFollowDuration now.
    pub(crate) fn timing(&self) -> (Duration, Duration) {
        (self.resolver.max_age(), self.relocations.follow_duration())
    }

    /// Changes RouteCacheMaxAge (routes cached from now on) and MessageFollowDuration
    /// (moves that start from now on), whichever is given, keeping the 5 s gap between
    /// them; `InvalidArgument` and nothing changed when the pair would not keep it.
    pub(crate) fn set_timing(
        &self,
        max_age: Option<Duration>,
        follow: Option<Duration>,
    ) -> Result<()> {
        let _one_at_a_time = self.timing_changes.lock_unpoisoned();
        let (current_age, current_follow) = self.timing();
        let (age, follow) = (
            max_age.unwrap_or(current_age),
            follow.unwrap_or(current_follow),
        );
        if let Some(problem) = super::cache_follow_violation(age, follow) {
            return Err(Error::InvalidArgument(problem));
        }
        self.resolver.set_max_age(age);
        self.relocations.set_follow_duration(follow);
        tracing::info!(route_cache_max_age = ?age, message_follow_duration = ?follow, "object timing changed");
        Ok(())
    }

    /// What went through this node's Logical Multicast so far.
    pub(crate) fn multicast_counts(&self) -> super::multicast::MulticastCounts {
        self.multicast.snapshot()
    }

    /// Whether this node is a Server member of `channel` (at any weight).
    pub(super) fn serves_channel(&self, channel: &str) -> bool {
        self.env
            .node()
            .is_some_and(|node| node.registry().weight(channel).is_some())
    }

    /// Whether a publish on this node delivers to its own Spots: a Server member of
    /// `channel` with weight > 0, as its peers would count it (weight 0, draining, takes
    /// none).
    pub(super) fn multicast_member(&self, channel: &str) -> bool {
        self.env
            .node()
            .and_then(|node| node.registry().weight(channel))
            .is_some_and(|weight| weight > 0)
    }

    /// The object layer of `node`, when it has a Location Store (objects keep their
    /// authority there); its inbound routes are registered, and with Actor types its Entry
    /// Spot is claimed.
    pub(crate) async fn start(
        handle: &Handle,
        settings: &ObjectSettings,
    ) -> Result<Option<Arc<Self>>> {
        let node = handle.node();
        let services = node.services();
        let (Some(store), Some(lease)) = (services.store(), services.lease()) else {
            return Ok(None);
        };
        let env = ObjectEnv::new(handle, store.clone(), lease.clone());
        let resolver = Arc::new(Resolver::new(
            Arc::downgrade(node),
            env.authority().clone(),
            lease.clone(),
            env.route().clone(),
            settings.route_cache_max_age,
            // A message sent on a route may be held through a move, then relayed for
            // MessageFollowDuration: the lane remembers the route that long.
            settings
                .message_follow_duration
                .max(super::relocation::RELOCATION_DEADLINE),
        ));
        let server = Arc::new_cyclic(|me| ObjectServer {
            me: me.clone(),
            sessions: std::sync::OnceLock::new(),
            relocations: Relocations::new(
                settings,
                env.lost_sends().clone(),
                super::binding::session_bound_routes(me.clone()),
            ),
            env,
            registry: ObjectRegistry::new(
                settings
                    .spot_types
                    .iter()
                    .map(|t| &t.def)
                    .chain(settings.actor_types.iter().map(|t| &t.def)),
                settings.max_spots,
            ),
            entry: settings
                .entry_spot
                .clone()
                .map(|id| Arc::new(EntrySpot::new(id, settings.entry_hooks.as_deref()))),
            resolver,
            placement_weight: node.settings().placement_weight,
            timing_changes: std::sync::Mutex::new(()),
            multicast: super::multicast::Multicast::new(
                settings.spot_types.iter().map(|t| &t.def),
                settings.faults.holds_publish_workers(),
            ),
        });
        // Installed before anything runs, so an Entry Spot's hooks can call objects too.
        handle.install_objects(server.clone());
        let route: Arc<dyn InboundRoute> = Arc::new(ObjectRoute(Arc::downgrade(&server)));
        for command in [
            Command::SpotSend,
            Command::SpotRequest,
            Command::SpotCreate,
            Command::SpotClose,
            Command::ActorSend,
            Command::ActorRequest,
            Command::ActorCreate,
            Command::ActorDestroy,
        ] {
            node.dispatcher().register(command, route.clone())?;
        }
        relocation::register_routes(node, &server)?;
        node.dispatcher().register(
            Command::BoundSessionBind,
            Arc::new(super::binding::BindRoute(Arc::downgrade(&server))),
        )?;
        node.dispatcher().register(
            Command::InstanceSpot,
            Arc::new(super::instance_spot::ActivationRoute(Arc::downgrade(
                &server,
            ))),
        )?;
        node.dispatcher().register(
            Command::LogicalMulticast,
            Arc::new(super::multicast::MulticastRoute(Arc::downgrade(&server))),
        )?;
        node.dispatcher().register(
            Command::SpotMemberDisconnected,
            Arc::new(super::binding::MemberDisconnectedRoute(Arc::downgrade(
                &server,
            ))),
        )?;
        server
            .resolver
            .watch(node, server.env.tracker(), server.env.cancel().clone());
        super::idle_eviction::watch(&server, settings.instance_idle_timeout);
        if let Some(entry) = &server.entry {
            entry.claim(&server).await;
        }
        Ok(Some(server))
    }

    /// Installs where pushes to this node's own sessions go (once).
    pub(crate) fn install_sessions(&self, sessions: Arc<dyn super::binding::LocalSessions>) {
        let _ = self.sessions.set(sessions);
    }

    /// Where pushes to this node's own sessions go, if it runs any.
    pub(crate) fn local_sessions(&self) -> Option<&Arc<dyn super::binding::LocalSessions>> {
        self.sessions.get()
    }

    /// What a Spot or Actor this node starts runs with.
    pub(super) fn object_host(self: &Arc<Self>) -> ObjectHost {
        let services: std::sync::Weak<dyn TurnServices> = Arc::downgrade(self) as _;
        ObjectHost {
            handle: self.env.weak_handle().clone(),
            services,
            lease: self.env.lease().clone(),
            tracker: self.env.tracker().clone(),
            cancel: self.env.cancel().child_token(),
            lost: self.env.lost_sends().clone(),
            running: self.env.running().clone(),
        }
    }

    /// The node's handle, while the node is alive.
    pub(super) fn handle(&self) -> Result<Handle> {
        self.env.handle()
    }

    /// Creates the object `key` of `stable_type` unless it exists (`get_or_create`), or
    /// fails `AlreadyExists` when it does (`create`).
    pub(crate) async fn create(
        self: &Arc<Self>,
        key: ObjectKey,
        stable_type: &str,
        request: Bytes,
        timeout: Duration,
        must_be_new: bool,
    ) -> Result<Outcome> {
        creation::create(self, key, stable_type, request, timeout, must_be_new).await
    }

    /// The object's current Ready incarnation, if any.
    pub(crate) async fn find(&self, key: &ObjectKey) -> Result<Option<Location>> {
        creation::find(&self.env, key).await
    }

    /// Closes (a Spot) or destroys (an Actor) exactly the incarnation `generation` of
    /// `key`. `false` when it is gone already.
    pub(crate) async fn close(&self, key: &ObjectKey, generation: u64) -> Result<bool> {
        let reason = match key.kind {
            ObjectKind::Spot => ClosingReason::ExplicitClose,
            ObjectKind::Actor => ClosingReason::Destroyed,
        };
        closing::close(self, key, generation, reason).await
    }

    /// The one-ways this node accepted and could not deliver, by reason.
    pub(crate) fn lost_one_ways(&self) -> LostOneWays {
        self.env.lost_sends().snapshot()
    }

    /// Messages this node relayed to moved objects' new owners so far.
    pub(crate) fn relayed_by_message_follow(&self) -> u64 {
        self.relocations.departures().relayed()
    }

    /// The server itself, while it runs.
    pub(super) fn arc(&self) -> Option<Arc<ObjectServer>> {
        self.me.upgrade()
    }

    /// Moves the object `key`, which this node owns, to `to` or to the node placement
    /// picks; returns where it runs now.
    pub(crate) async fn relocate(
        self: &Arc<Self>,
        key: &ObjectKey,
        to: Option<&str>,
    ) -> Result<Location> {
        relocation::relocate(self, key, to).await
    }

    /// Runs `work` (a move this node drives) unless the node is killed first: then it
    /// ends where it was, as a move ends with its process, `ShuttingDown` to its caller.
    pub(crate) async fn unless_killed<T>(
        &self,
        work: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        tokio::select! {
            biased;
            _ = self.env.killed().cancelled() => Err(crate::Error::new(
                crate::ErrorKind::ShuttingDown,
                "the node stopped during the move",
            )),
            done = work => done,
        }
    }

    /// Moves every movable object this node owns to other nodes; unless it is
    /// `stopping`, it takes new objects again when some stayed.
    pub(crate) async fn relocate_all(
        self: &Arc<Self>,
        stopping: bool,
    ) -> relocation::RelocationReport {
        relocation::relocate_all(self, stopping).await
    }

    /// The Location Store this node's objects keep their authority in.
    pub(crate) fn store(&self) -> Arc<dyn crate::store::LocationStore> {
        self.env.store().clone()
    }

    /// Takes new objects again after `relocate_all` left the node draining.
    pub(crate) fn undrain(&self) {
        self.relocations.end_draining();
    }

    /// Whether this node is relocating everything away (it takes no new objects).
    pub(crate) fn is_draining(&self) -> bool {
        self.relocations.is_draining()
    }

    /// The objects of `kind` this node owns now (its Entry Spot aside).
    pub(crate) fn owned(&self, kind: ObjectKind) -> usize {
        self.registry.owned(kind)
    }
}

#[async_trait]
impl Subsystem for ObjectServer {
    fn name(&self) -> &'static str {
        "objects"
    }

    async fn drain(&self, _grace: Duration) {}

    async fn stop(&self, crashed: bool) -> Teardown {
        if crashed {
            self.env.killed().cancel();
        }
        self.env.stop();
        // Idle turn loops listen to their mailboxes only: each one is woken to stop; each
        // runs `on_closing(HostShutdown)` before it ends.
        self.env.running().stop_all();
        self.env.tracker().close();
        self.env.tracker().wait().await;
        let teardown = if crashed {
            Teardown::Clean
        } else {
            self.release_owned().await
        };
        self.registry.clear();
        teardown
    }
}

impl ObjectServer {
    /// After the last turns: every authority this lifecycle still holds is deleted, so
    /// nothing it owned stays `Unavailable` (within the lease TTL: past it the lease is
    /// gone anyway, and what is left is for `reclaim`).
    async fn release_owned(&self) -> Teardown {
        let live = self.registry.all();
        let ended = live
            .iter()
            .filter_map(|live| {
                Some(super::binding::EndedBinding {
                    actor: live.key.id.to_string(),
                    object_generation: live.generation(),
                    binding: live.bindings().current()?,
                })
            })
            .collect();
        let notice_limit = self
            .env
            .node()
            .map_or(Duration::ZERO, |node| node.settings().send_timeout);
        super::binding::tell_bindings_ended(
            self.env.owner_link(),
            &self.env.route().rid,
            self.local_sessions(),
            ended,
            notice_limit,
        )
        .await;
        let owned: Vec<_> = live
            .into_iter()
            .map(|live| (live.key.clone(), live.authority()))
            .collect();
        let total = owned.len();
        let owner = self.env.lease().status().owner;
        let releaser = super::release::Releaser {
            authority: self.env.authority(),
            route: self.env.route(),
            owner: &owner,
        };
        let limit = self.env.lease().settings().ttl.min(RELEASE_LIMIT);
        let started = tokio::time::Instant::now();
        let released = releaser.release_all(owned, limit).await;
        tracing::info!(
            rid = %self.env.route().rid,
            owned = total,
            released = released.released,
            held_elsewhere = released.not_ours,
            failed = released.failed.len(),
            took = ?started.elapsed(),
            "released the authorities this node owned"
        );
        if released.failed.is_empty() {
            return Teardown::Clean;
        }
        for failure in released.failed.iter().take(8) {
            tracing::warn!(rid = %self.env.route().rid, failure = %failure, "authority not released");
        }
        Teardown::Failed(format!(
            "{} of {total} authorities were not released",
            released.failed.len()
        ))
    }
}

/// The services a turn loop asks of the layer between turns.
impl TurnServices for ObjectServer {
    fn first_message_ran<'a>(&'a self, live: &'a LiveObject) -> BoxFuture<'a, ()> {
        Box::pin(super::instance_spot::first_message_ran(self, live))
    }

    fn join<'a>(
        &'a self,
        actor: &'a Arc<LiveObject>,
        join: JoinRequest,
    ) -> BoxFuture<'a, JoinStep> {
        Box::pin(super::joining::join(self, actor, join))
    }

    fn join_across<'a>(&'a self, join: JoinAcross<'a>) -> BoxFuture<'a, Option<JoinOutcome>> {
        Box::pin(async move {
            // The loop calls through a strong reference: the layer is there.
            let Some(server) = self.me.upgrade() else {
                return Some(JoinOutcome::Failed(Error::new(
                    ErrorKind::ShuttingDown,
                    "the node is stopping",
                )));
            };
            relocation::join_across(
                &server,
                join.live,
                join.instance,
                join.timers,
                join.spot,
                join.request,
                join.rid,
            )
            .await
        })
    }
}
