//! The object layer of one node, composed of its components — the
//! [`ObjectEnv`] it runs in, the [`ObjectRegistry`] of what it serves and runs, the
//! [`Resolver`] that routes by ID and the [`Relocations`] of its moves — and the entry
//! points the handle and the lifecycle call: [`creation`](super::creation),
//! [`closing`](super::closing), [`direct`](super::direct) messaging and moves.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use super::binding::{BindingRoute, Bindings, BoundRelay, Relayed};
use super::core::ObjectCore;
use super::env::ObjectEnv;
use super::follow::{Departures, RelayServices};
use super::inbound::ObjectRoute;
use super::live_object::LiveObject;
use super::lost_sends::LostOneWays;
use super::membership::{JoinOutcome, JoinRequest, JoinStep};
use super::registry::ObjectRegistry;
use super::relocation::{self, Relocations};
use super::resolver::Resolver;
use super::settings::ObjectSettings;
use super::turn_host::{JoinAcross, TurnServices};
use super::{closing, creation};
use crate::address::{ActorRef, Location, ObjectKey, ObjectKind, Outcome};
use crate::call::BoxFuture;
use crate::handle::Handle;
use crate::mesh::{Drained, InboundRoute, MeshNode, Subsystem, Teardown};
use crate::sync::LockUnpoisoned;
use crate::wire::Command;
use crate::{Error, Result};

/// The longest a clean stop spends releasing the authorities it holds (and at most the
/// lease TTL): a store that does not answer in that time leaves them to `reclaim`.
const RELEASE_LIMIT: Duration = Duration::from_secs(5);

/// How long a Join to a Spot on another node keeps following it while the Spot's node
/// drains (it takes no Actor in, and the Spot is about to move) or the Spot moved on.
const JOIN_FOLLOW: Duration = Duration::from_secs(2);
/// The longest pause between two tries of such a Join.
const JOIN_FOLLOW_PAUSE: Duration = Duration::from_millis(250);

/// How often a shutdown's drain looks whether the Spots and Actors finished their work.
const DRAIN_POLL: Duration = Duration::from_millis(10);

/// The object layer of one node, as components: each owns its state and is reached
/// through its methods.
pub(crate) struct ObjectServer {
    /// What every message path shares: the environment, the registry, routing and the
    /// departures.
    pub(super) core: Arc<ObjectCore>,
    /// Objects leaving and arriving, with Message Follow and the move bounds.
    pub(crate) relocations: Arc<Relocations>,
    /// Logical Multicast: its subscriptions, publish workers and counts.
    pub(super) multicast: Arc<super::multicast::Multicast>,
    /// Serializes changes of RouteCacheMaxAge and MessageFollowDuration.
    timing_changes: std::sync::Mutex<()>,
    /// The sessions bound to its Actors, and where pushes to its own sessions go.
    pub(super) bindings: Arc<Bindings>,
}

impl std::ops::Deref for ObjectServer {
    type Target = ObjectCore;

    fn deref(&self) -> &ObjectCore {
        &self.core
    }
}

impl ObjectServer {
    /// Waits `pause`, looking every few milliseconds whether a move or close of `live`
    /// began or waits for the Actor's boundary (its Spot's move seals it, say): `false`
    /// then.
    async fn pause_unless_moved(live: &LiveObject, pause: Duration) -> bool {
        let until = tokio::time::Instant::now() + pause;
        while tokio::time::Instant::now() < until {
            if live.move_or_close_waits() {
                return false;
            }
            let step = until.saturating_duration_since(tokio::time::Instant::now());
            tokio::time::sleep(step.min(Duration::from_millis(5))).await;
        }
        !live.move_or_close_waits()
    }

    /// Moves the Actor to the node of the Spot it joins (see [`relocation::join_across`]).
    /// A move refused as `Unavailable` (the Spot's node drains and takes no one in, or
    /// the Spot moved on) is tried again where the Spot runs then, for [`JOIN_FOLLOW`],
    /// unless a move or close of the Actor itself begins: that one goes first.
    async fn join_following(&self, join: JoinAcross<'_>) -> Option<JoinOutcome> {
        let JoinAcross {
            live,
            instance,
            timers,
            spot,
            request,
            rid,
        } = join;
        let mut rid = rid.to_string();
        let deadline = tokio::time::Instant::now() + JOIN_FOLLOW;
        let mut pause = Duration::from_millis(10);
        loop {
            let moving = self.moving();
            let (to, asked) = (spot.clone(), request.clone());
            let outcome =
                relocation::join_across(&moving, live, instance, timers, to, asked, &rid).await?;
            let JoinOutcome::Failed(e) = &outcome else {
                return Some(outcome);
            };
            // The Actor's own move or close (with its Spot, say) goes first: it needs the
            // Actor at its boundary, so the Join ends here rather than hold it.
            if e.kind() != Some(crate::ErrorKind::Unavailable)
                || live.move_or_close_waits()
                || tokio::time::Instant::now() + pause > deadline
            {
                return Some(outcome);
            }
            tracing::debug!(actor = %live.key, spot = %spot, node = %rid, error = %e, "a Join follows its Spot: tried again");
            if !Self::pause_unless_moved(live, pause).await {
                return Some(outcome);
            }
            pause = (pause * 2).min(JOIN_FOLLOW_PAUSE);
            let again = JoinRequest {
                spot: spot.clone(),
                request: request.clone(),
            };
            match super::joining::join(self, live, again).await {
                JoinStep::Done(outcome) => return Some(outcome),
                JoinStep::Across { rid: now, .. } => rid = now,
            }
        }
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
        let server = Self::compose(env, settings, lease, node);
        // Installed before anything runs, so an Entry Spot's hooks can call objects too.
        handle.install_objects(server.clone());
        server.register_routes(node)?;
        server
            .resolver
            .watch(node, server.env.tracker(), server.env.cancel().clone());
        super::idle_eviction::watch(&server.core, settings.instance_idle_timeout);
        if let Some(entry) = &server.entry {
            super::entry_claim::claim(entry, &server.core).await;
        }
        Ok(Some(server))
    }

    /// The components of a node's object layer in `env`, started with `settings`.
    fn compose(
        env: ObjectEnv,
        settings: &ObjectSettings,
        lease: &Arc<crate::store::OwnerLease>,
        node: &Arc<MeshNode>,
    ) -> Arc<Self> {
        let resolver = Arc::new(
            Resolver::new(
                Arc::downgrade(node),
                env.authority().clone(),
                lease.clone(),
                env.route().clone(),
                settings.route_cache_max_age,
                settings.route_cache_capacity,
                // A message sent on a route may be held through a move, then relayed for
                // MessageFollowDuration: the lane remembers the route that long.
                settings
                    .message_follow_duration
                    .max(super::relocation::RELOCATION_DEADLINE),
            )
            .metered(env.meter().route_cache()),
        );
        let registry = ObjectRegistry::new(
            settings
                .spot_types
                .iter()
                .map(|t| &t.def)
                .chain(settings.actor_types.iter().map(|t| &t.def)),
            settings.max_spots,
        )
        .metered(env.meter().clone());
        let departures = Arc::new(Departures::new(
            env.lost_sends().clone(),
            RelayServices {
                tracker: env.tracker().clone(),
                stop: env.cancel().clone(),
                terminals: settings.relocation_store.clone(),
                faults: settings.faults,
                counters: env.meter().follow(),
            },
        ));
        let server = Arc::new_cyclic(|me| {
            let core = ObjectCore::new(
                env,
                registry,
                resolver,
                departures,
                settings,
                node.settings().placement_weight,
                me.clone() as std::sync::Weak<dyn TurnServices>,
            );
            let bindings = Arc::new(Bindings::new(core.clone()));
            let relocations = Arc::new(Relocations::new(
                settings,
                super::binding::session_bound_routes(Arc::downgrade(&bindings)),
            ));
            ObjectServer {
                core,
                bindings,
                relocations,
                timing_changes: std::sync::Mutex::new(()),
                multicast: Arc::new(super::multicast::Multicast::new(
                    settings.spot_types.iter().map(|t| &t.def),
                    settings.faults.holds_publish_workers(),
                )),
            }
        });
        server
    }

    /// Registers the inbound routes of the object layer's commands.
    fn register_routes(&self, node: &Arc<MeshNode>) -> Result<()> {
        let server = self;
        let route: Arc<dyn InboundRoute> = Arc::new(ObjectRoute(Arc::downgrade(&server.core)));
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
        relocation::register_routes(node, &server.moving())?;
        node.dispatcher().register(
            Command::BoundSessionBind,
            Arc::new(super::binding::BindRoute(Arc::downgrade(&server.bindings))),
        )?;
        node.dispatcher().register(
            Command::InstanceSpot,
            Arc::new(super::instance_spot::ActivationRoute(Arc::downgrade(
                &server.core,
            ))),
        )?;
        node.dispatcher().register(
            Command::CreationSettled,
            Arc::new(super::settled_notice::SettledRoute(Arc::downgrade(
                &server.core,
            ))),
        )?;
        node.dispatcher().register(
            Command::LogicalMulticast,
            Arc::new(super::multicast::MulticastRoute {
                core: Arc::downgrade(&server.core),
                multicast: server.multicast.clone(),
            }),
        )?;
        node.dispatcher().register(
            Command::SpotMemberDisconnected,
            Arc::new(super::binding::MemberDisconnectedRoute(Arc::downgrade(
                &server.bindings,
            ))),
        )?;
        Ok(())
    }

    /// Installs where pushes to this node's own sessions go (once).
    pub(crate) fn install_sessions(&self, sessions: Arc<dyn super::binding::LocalSessions>) {
        self.bindings.install_sessions(sessions);
    }

    /// Binds `session` (of this node) to the Actor `actor` names, at the node it names:
    /// the route every relay then takes.
    pub(crate) async fn bind_session(
        &self,
        actor: &ActorRef,
        session: u64,
        deadline: tokio::time::Instant,
    ) -> Result<BindingRoute> {
        super::binding::bind_session(&self.bindings, actor, session, deadline).await
    }

    /// Relays `relay` over `route`, in the order of the calls: returns once the owner's
    /// link (or, on this node, the Actor) took it.
    pub(crate) async fn bound_call(
        &self,
        route: &BindingRoute,
        relay: BoundRelay<'_>,
    ) -> Result<Relayed> {
        super::binding::bound_call(&self.bindings, route, relay).await
    }

    /// Ends `session`'s binding `route` at the Actor's owner, which tells the Actor's Spot
    /// once.
    pub(crate) async fn disconnect_session(
        &self,
        route: &BindingRoute,
        session: u64,
        deadline: tokio::time::Instant,
    ) -> Result<()> {
        super::binding::disconnect_session(&self.bindings, route, session, deadline).await
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
        creation::create(&self.core, key, stable_type, request, timeout, must_be_new).await
    }

    /// The object's current Ready incarnation, if any.
    pub(crate) async fn find(&self, key: &ObjectKey) -> Result<Option<Location>> {
        creation::find(&self.env, key).await
    }

    /// Closes (a Spot) or destroys (an Actor) exactly the incarnation `generation` of
    /// `key`. `false` when it is gone already.
    pub(crate) async fn close(&self, key: &ObjectKey, generation: u64) -> Result<bool> {
        closing::close_as_asked(&self.core, key, generation).await
    }

    /// The one-ways this node accepted and could not deliver, by reason.
    pub(crate) fn lost_one_ways(&self) -> LostOneWays {
        self.env.lost_sends().snapshot()
    }

    /// Messages this node relayed to moved objects' new owners so far.
    pub(crate) fn relayed_by_message_follow(&self) -> u64 {
        self.departures.relayed()
    }

    /// Moves the object `key`, which this node owns, to `to` or to the node placement
    /// picks; returns where it runs now.
    pub(crate) async fn relocate(
        self: &Arc<Self>,
        key: &ObjectKey,
        to: Option<&str>,
    ) -> Result<Location> {
        relocation::relocate(&self.moving(), key, to).await
    }

    /// The core and the moves, as a move works on them.
    pub(super) fn moving(&self) -> relocation::Moving {
        relocation::Moving {
            core: self.core.clone(),
            relocations: self.relocations.clone(),
        }
    }

    /// Moves every movable object this node owns to other nodes; unless it is
    /// `stopping`, it takes new objects again when some stayed.
    pub(crate) async fn relocate_all(
        self: &Arc<Self>,
        stopping: bool,
    ) -> relocation::RelocationReport {
        relocation::relocate_all(&self.moving(), stopping).await
    }

    /// The Location Store this node's objects keep their authority in.
    pub(crate) fn store(&self) -> Arc<dyn crate::store::LocationStore> {
        self.env.store().clone()
    }

    /// Takes new objects again after `relocate_all` left the node draining.
    pub(crate) fn undrain(&self) {
        self.hosting.end_draining();
    }

    /// One page of the objects this node runs, after the cursor `after`.
    pub(crate) fn hosted(&self, after: Option<&str>, limit: usize) -> super::HostedObjects {
        super::hosted::page(self.registry.all(), after, limit)
    }

    /// This node's route cache.
    pub(crate) fn route_cache(&self) -> super::RouteCacheStatus {
        self.resolver.cache_status()
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

    /// Lets every Spot and Actor finish the work it accepted (queued, running or lent),
    /// for at most `grace`: `on_closing(HostShutdown)` and the release come after it.
    async fn drain(&self, grace: Duration) -> Drained {
        let deadline = tokio::time::Instant::now() + grace;
        let mut busy = self.registry.all();
        loop {
            // Once seen at rest, an object's accepted work is done: later arrivals are
            // not waited for.
            busy.retain(|live| !live.at_rest());
            if busy.is_empty() {
                return Drained::Finished;
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                tracing::warn!(rid = %self.env.route().rid, busy = busy.len(), "shutdown grace ended with Spots or Actors still working");
                return Drained::GraceEnded;
            }
            tokio::time::sleep(DRAIN_POLL.min(deadline - now)).await;
        }
    }

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
            self.bindings.sessions(),
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
        Box::pin(super::instance_spot::first_message_ran(
            &self.env,
            &self.hosting,
            live,
        ))
    }

    fn join<'a>(
        &'a self,
        actor: &'a Arc<LiveObject>,
        join: JoinRequest,
    ) -> BoxFuture<'a, JoinStep> {
        Box::pin(super::joining::join(self, actor, join))
    }

    fn join_across<'a>(&'a self, join: JoinAcross<'a>) -> BoxFuture<'a, Option<JoinOutcome>> {
        Box::pin(self.join_following(join))
    }
}
