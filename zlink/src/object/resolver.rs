//! The resolver (seed 000 §2.2): where messages for an ID go now — the positive route
//! cache, or one authority read — with the four closed results, and what keeps the cache
//! honest (peer events, lease changes, store recovery).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::authority::{AuthorityState, OwnerFence, OwnerRoute};
use super::authority_store::AuthorityStore;
use super::route_cache::{
    Lookup, ReadyRoute, RouteCache, RouteDecision, Routed, Switch, SwitchStart,
};
use crate::address::ObjectKey;
use crate::mesh::peer_table::PeerEvent;
use crate::mesh::MeshNode;
use crate::store::{OwnerLease, StoreError};
use crate::telemetry::RouteCacheCounters;

/// What the resolver found for an ID: four closed results, and the two steps of a route
/// switch.
#[derive(Debug)]
pub(crate) enum Resolution {
    /// The owner route, with its fences (the only result that is cached), and what this
    /// node sent on it.
    Ready(Routed),
    /// No authority record: only creation may act on this.
    Missing,
    /// The authority stays, but its owner cannot be used now.
    Unavailable(String),
    /// The store could not say.
    StoreFailure(StoreError),
    /// A later owner than the one this node sent on: the caller sends the barrier down
    /// the old route, then [`Resolver::switched`], then resolves again.
    Switch(SwitchStart),
    /// Another call is switching this ID's route: wait, then resolve again.
    Wait(Switch),
}

/// How a freshly read route may be used.
enum Bound {
    /// Cached until then.
    Until(Instant),
    /// Used for this call only: this node's own admission deadline has passed, so nothing
    /// it confirms is kept.
    Once,
    /// Not at all: its owner is gone.
    Unusable,
}

/// The resolver of one node.
pub(crate) struct Resolver {
    node: Weak<MeshNode>,
    authority: AuthorityStore,
    lease: Arc<OwnerLease>,
    /// This node's own route: a route naming it is local.
    local: OwnerRoute,
    cache: RouteCache,
    /// Whether the last authority read failed: the next success is a store recovery.
    store_failing: AtomicBool,
    /// Lookups of the cache, by outcome.
    lookups: RouteCacheCounters,
}

impl Resolver {
    pub(super) fn new(
        node: Weak<MeshNode>,
        authority: AuthorityStore,
        lease: Arc<OwnerLease>,
        local: OwnerRoute,
        max_age: Duration,
        capacity: usize,
        lane_memory: Duration,
    ) -> Self {
        let capacity = match capacity {
            0 => super::route_cache::MIN_ROUTE_CACHE_CAPACITY,
            capacity => capacity,
        };
        Resolver {
            node,
            authority,
            lease,
            local,
            cache: RouteCache::new(max_age, lane_memory, capacity),
            store_failing: AtomicBool::new(false),
            lookups: RouteCacheCounters::default(),
        }
    }

    /// This resolver, counting its cache lookups in `lookups`.
    pub(super) fn metered(mut self, lookups: RouteCacheCounters) -> Self {
        self.lookups = lookups;
        self
    }

    /// The route cache's size and what it holds.
    pub(super) fn cache_status(&self) -> super::RouteCacheStatus {
        self.cache.status()
    }

    /// RouteCacheMaxAge now.
    pub(super) fn max_age(&self) -> Duration {
        self.cache.max_age()
    }

    /// Changes RouteCacheMaxAge for routes cached from now on.
    pub(super) fn set_max_age(&self, max_age: Duration) {
        self.cache.set_max_age(max_age);
    }

    /// A message on `route` came back stale.
    pub(super) fn stale(&self, route: &ReadyRoute) {
        self.cache.stale(route);
    }

    /// A follow notice: `key` moved away from `fence` on `owner`.
    pub(crate) fn moved(&self, key: &ObjectKey, fence: &OwnerFence, owner: &OwnerRoute) -> bool {
        self.cache.moved(key, fence, owner)
    }

    /// The barrier of `start` was answered (or given up): calls use its route now.
    pub(super) fn switched(&self, start: SwitchStart) {
        self.cache.switched(start);
    }

    /// A later authority of `key` was seen.
    pub(super) fn saw_authority(&self, key: &ObjectKey, fence: &OwnerFence) {
        self.cache.saw_authority(key, fence);
    }

    /// `key`, whose incarnation `fence` ran here, closed for good (not moved): its lane
    /// goes, unless it already leads to a later authority or is switching.
    pub(super) fn closed_here(&self, key: &ObjectKey, fence: &OwnerFence) {
        self.cache.closed_here(key, fence);
    }

    /// Where messages for `key` go at `now` when the cache knows: `None` when it takes an
    /// authority read ([`resolve`](Self::resolve)).
    pub(super) fn cached(&self, key: &ObjectKey, now: Instant) -> Option<Resolution> {
        let found = match self.cache.get(key, now) {
            Lookup::Hit(routed) => Some(Resolution::Ready(routed)),
            Lookup::Switching(switch) => Some(Resolution::Wait(switch)),
            Lookup::Miss => None,
        };
        match found {
            Some(_) => self.lookups.hits.increment(1),
            None => self.lookups.misses.increment(1),
        }
        found
    }

    /// Where messages for `key` go at `now`: the cache, or one authority read.
    pub(super) async fn resolve(&self, key: &ObjectKey, now: Instant) -> Resolution {
        if let Some(known) = self.cached(key, now) {
            return known;
        }
        self.resolve_fresh(key, now).await
    }

    /// Where messages for `key` go at `now`, by one authority read whatever the cache
    /// holds (the route read is cached as any).
    pub(super) async fn resolve_fresh(&self, key: &ObjectKey, now: Instant) -> Resolution {
        let id = key;
        let key = key.clone();
        let read = self.authority.read(&key).await;
        let failing = read.is_err();
        if self.store_failing.swap(failing, Ordering::Relaxed) && !failing {
            // What was confirmed before the outage may have changed during it.
            self.cache.store_recovered();
        }
        let current = match read {
            Ok(Some(current)) => current,
            Ok(None) => return Resolution::Missing,
            Err(e) => return Resolution::StoreFailure(e),
        };
        if current.record.state != AuthorityState::Ready {
            return Resolution::Unavailable(format!("{id} is {:?}", current.record.state));
        }
        let route = Arc::new(ReadyRoute {
            key: key.clone(),
            shape: current.record.shape,
            stable_type: current.record.stable_type.clone(),
            fence: current.record.fence.clone(),
            owner: current.record.route.clone(),
            version: current.version.clone(),
            local: Default::default(),
        });
        let not_after = match self.route_bound(&route, now) {
            Bound::Until(not_after) => Some(not_after),
            Bound::Once => None,
            Bound::Unusable => {
                return Resolution::Unavailable(format!(
                    "the owner of {id} ({}) is gone",
                    route.owner.rid
                ))
            }
        };
        match self.cache.admit(route, now, not_after) {
            RouteDecision::Use(routed) => Resolution::Ready(routed),
            RouteDecision::Switch(start) => Resolution::Switch(start),
            RouteDecision::Wait(switch) => Resolution::Wait(switch),
        }
    }

    /// Whether a route may be used, and how long it may be cached: never past this node's
    /// own local admission deadline (seed 000 §2.2), nor RouteCacheMaxAge. A route to this
    /// node's previous lifecycle, to a peer connected under another lifecycle, or to this
    /// node under a lease it no longer holds is unusable.
    fn route_bound(&self, route: &ReadyRoute, now: Instant) -> Bound {
        let status = self.lease.status();
        let cache_until = |deadline: Option<Instant>| match deadline {
            Some(deadline) if deadline > now => {
                Bound::Until((now + self.cache.max_age()).min(deadline))
            }
            _ => Bound::Once,
        };
        if route.owner.rid == self.local.rid {
            let ours = route.owner.node_generation == self.local.node_generation
                && status
                    .token
                    .as_ref()
                    .is_some_and(|t| route.fence.held_by(t));
            return match (ours, status.admission_deadline) {
                (true, Some(deadline)) if deadline > now => cache_until(Some(deadline)),
                _ => Bound::Unusable,
            };
        }
        let Some(node) = self.node.upgrade() else {
            return Bound::Unusable;
        };
        match node.peers().identity(&route.owner.rid) {
            Some((_, generation)) if generation != route.owner.node_generation => Bound::Unusable,
            _ => cache_until(status.admission_deadline),
        }
    }

    /// Keeps the route cache honest: a peer that leaves (or comes back as a new lifecycle)
    /// takes its routes with it, and a lease this node no longer holds takes the routes to
    /// itself under it.
    pub(super) fn watch(
        self: &Arc<Self>,
        node: &MeshNode,
        tracker: &TaskTracker,
        cancel: CancellationToken,
    ) {
        let mut events = node.peers().subscribe();
        let mut lease = self.lease.subscribe();
        let resolver = Arc::downgrade(self);
        tracker.spawn(async move {
            let mut held = lease.borrow().token.clone();
            loop {
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    event = events.recv() => {
                        let Some(resolver) = resolver.upgrade() else { return };
                        match event {
                            Ok(PeerEvent::Lost { rid }) | Ok(PeerEvent::Ready { rid, .. }) => {
                                resolver.cache.owner_departed(&rid)
                            }
                            Ok(PeerEvent::WeightsChanged { .. }) => {}
                            // Missed events: forget everything rather than guess.
                            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                                resolver.cache.store_recovered()
                            }
                            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                        }
                    }
                    changed = lease.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        let now = lease.borrow_and_update().token.clone();
                        if now != held {
                            if let (Some(resolver), Some(old)) = (resolver.upgrade(), held.take()) {
                                resolver.cache.lease_invalidated(&old);
                            }
                            held = now;
                        }
                    }
                }
            }
        });
    }
}
