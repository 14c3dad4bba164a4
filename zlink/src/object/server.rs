//! The object layer of one node: the Spot types it serves (the Object Server role), the
//! Spots it runs, and the parts that act on them — [`creation`](super::creation),
//! [`closing`](super::closing), [`direct`](super::direct) messaging, the
//! [`resolver`](super::resolver) and the [`inbound`](super::inbound) commands.

use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::authority::OwnerRoute;
use super::authority_store::AuthorityStore;
use super::direct::ObjectCall;
use super::entry::EntrySpot;
use super::inbound::ObjectRoute;
use super::lost_sends::{LostOneWays, LostSends};
use super::owner_link::OwnerLink;
use super::registry::ObjectRegistry;
use super::relocation::{self, Arrivals, Departures, RelocationFaults, RelocationPermits};
use super::resolver::Resolver;
use super::settings::ObjectSettings;
use super::spot::ClosingReason;
use super::{closing, creation, direct};
use crate::address::{Location, Outcome};
use crate::address::{ObjectKey, ObjectKind};
use crate::call::PendingTable;
use crate::handler::{Handle, WeakHandle};
use crate::mesh::{InboundRoute, MeshNode, Subsystem};
use crate::store::{LocationStore, OwnerLease, StoreError};
use crate::wire::Command;
use crate::{Error, Result};

/// Turns a store failure into the caller's error.
pub(super) fn store_error(e: StoreError) -> Error {
    Error::from(e)
}

/// The object layer of one node.
pub(crate) struct ObjectServer {
    pub(super) node: Weak<MeshNode>,
    /// The node's handle, for the contexts of the objects it runs.
    handle: WeakHandle,
    /// The way out to other nodes, for every object command this layer sends.
    pub(super) owner_link: OwnerLink,
    pub(super) store: Arc<dyn LocationStore>,
    pub(super) authority: AuthorityStore,
    pub(super) lease: Arc<OwnerLease>,
    /// This node as an owner: where its Spots' messages go.
    pub(super) route: OwnerRoute,
    /// The types it serves, the objects it runs and the creations under way.
    pub(super) registry: ObjectRegistry,
    /// This node's Entry Spot, when it serves Actor types.
    pub(super) entry: Option<Arc<EntrySpot>>,
    pub(super) resolver: Arc<Resolver>,
    pub(super) placement_weight: u32,
    pub(super) tracker: TaskTracker,
    pub(super) cancel: CancellationToken,
    /// Cancelled when the node is killed (a test's crash): moves running on a caller's
    /// task end on the spot, as they would with the process.
    pub(super) killed: CancellationToken,
    /// Requests from this node to objects it owns, until their replies; one sweeper ends
    /// them at their deadlines.
    pub(super) local_calls: Arc<PendingTable>,
    /// Objects leaving this node: their holds, relays and Message Follow routes.
    pub(crate) departures: Departures,
    /// The one-ways this node accepted and could not deliver.
    pub(super) lost_sends: Arc<LostSends>,
    /// Objects arriving on this node, until their owner change commits.
    pub(crate) arrivals: Arrivals,
    /// Bounds on the moves this node runs at once.
    pub(crate) permits: RelocationPermits,
    /// Relocating everything away: no new object is placed here, and none moves in.
    pub(crate) draining: std::sync::atomic::AtomicBool,
    /// Where relayed requests' results are recorded (required with movable types).
    pub(crate) relocation_store: Option<Arc<dyn crate::store::RelocationStore>>,
    /// Told when an Actor with routes bound to it outside moves.
    pub(crate) bound_routes: Option<Arc<dyn super::relocation::BoundRoutes>>,
    /// MessageFollowDuration: how long a moved object's old route is followed.
    pub(crate) message_follow_duration: Duration,
    /// Faults tests inject into moves (none outside the `test-faults` feature).
    pub(crate) faults: RelocationFaults,
}

impl ObjectServer {
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
        let identity = node.identity();
        let route = OwnerRoute {
            mesh_name: identity.mesh_name().to_string(),
            rid: identity.rid().to_string(),
            node_generation: identity.generation(),
        };
        let authority = AuthorityStore::new(store.clone());
        let resolver = Arc::new(Resolver::new(
            Arc::downgrade(node),
            authority.clone(),
            lease.clone(),
            route.clone(),
            settings.route_cache_max_age,
            // A message sent on a route may be held through a move, then relayed for
            // MessageFollowDuration: the lane remembers the route that long.
            settings
                .message_follow_duration
                .max(super::relocation::RELOCATION_DEADLINE),
        ));
        let lost_sends = Arc::new(LostSends::default());
        let server = Arc::new(ObjectServer {
            node: Arc::downgrade(node),
            handle: handle.downgrade(),
            owner_link: OwnerLink::new(Arc::downgrade(node)),
            registry: ObjectRegistry::new(
                settings
                    .spot_types
                    .iter()
                    .map(|t| &t.def)
                    .chain(settings.actor_types.iter().map(|t| &t.def)),
                settings.max_spots,
            ),
            store: store.clone(),
            authority,
            lease: lease.clone(),
            route,
            entry: settings
                .entry_spot
                .clone()
                .map(|id| Arc::new(EntrySpot::new(id, settings.entry_hooks.as_deref()))),
            resolver,
            placement_weight: node.settings().placement_weight,
            tracker: TaskTracker::new(),
            cancel: CancellationToken::new(),
            killed: CancellationToken::new(),
            local_calls: Arc::new(PendingTable::default()),
            departures: Departures::new(lost_sends.clone()),
            lost_sends,
            arrivals: Arrivals::default(),
            permits: RelocationPermits::new(),
            draining: std::sync::atomic::AtomicBool::new(false),
            relocation_store: settings.relocation_store.clone(),
            bound_routes: settings.bound_routes.clone(),
            message_follow_duration: settings.message_follow_duration,
            faults: settings.faults,
        });
        server
            .tracker
            .spawn(server.local_calls.clone().run_sweeper());
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
        server
            .resolver
            .watch(node, &server.tracker, server.cancel.clone());
        if let Some(entry) = &server.entry {
            entry.claim(&server).await;
        }
        Ok(Some(server))
    }

    /// What a Spot or Actor this node starts runs with.
    pub(super) fn object_host(self: &Arc<Self>) -> super::live_object::ObjectHost {
        super::live_object::ObjectHost {
            handle: self.handle.clone(),
            server: Arc::downgrade(self),
            lease: self.lease.clone(),
            tracker: self.tracker.clone(),
            cancel: self.cancel.child_token(),
            lost: self.lost_sends.clone(),
        }
    }

    /// The node's handle, while the node is alive.
    pub(super) fn handle(&self) -> Result<Handle> {
        self.handle
            .upgrade()
            .ok_or_else(super::owner_link::node_stopping)
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
        creation::find(self, key).await
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
        self.lost_sends.snapshot()
    }

    /// Messages this node relayed to moved objects' new owners so far.
    pub(crate) fn relayed_by_message_follow(&self) -> u64 {
        self.departures.relayed()
    }

    /// Sends or requests a packet to a Spot or Actor by its ID only.
    pub(crate) async fn call(self: &Arc<Self>, call: ObjectCall<'_>) -> Result<Bytes> {
        direct::call(self, call).await
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
            _ = self.killed.cancelled() => Err(crate::Error::new(
                crate::ErrorKind::ShuttingDown,
                "the node stopped during the move",
            )),
            done = work => done,
        }
    }

    /// Moves every movable object this node owns to other nodes.
    pub(crate) async fn relocate_all(self: &Arc<Self>) -> relocation::RelocationReport {
        relocation::relocate_all(self).await
    }

    /// Whether this node is relocating everything away (it takes no new objects).
    pub(crate) fn is_draining(&self) -> bool {
        self.draining.load(std::sync::atomic::Ordering::SeqCst)
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

    async fn stop(&self, crashed: bool) {
        if crashed {
            self.killed.cancel();
        }
        self.cancel.cancel();
        self.local_calls.close();
        self.tracker.close();
        self.tracker.wait().await;
        self.registry.clear();
    }
}
