//! The positive route cache (seed 000 §2.2) and each ID's route lane: the newest Ready
//! owner route this node handed out for an ID, with the fences a message is admitted
//! against, so a warm direct call reads the Location Store zero times.
//!
//! Only Ready routes are kept: Missing, Creating and a store failure are never cached, so
//! a momentary failure never outlives the call that saw it. A route is cached until the
//! earlier of RouteCacheMaxAge and the bound the resolver gives it (this node's local
//! admission deadline), and stops being cached at once on a newer authority, a
//! stale-route result, a store recovery, an owner lease invalidation or a follow notice.
//!
//! **The lane.** Once a route stops being cached it is still remembered for a while, as
//! the route this node last sent on: messages sent on it may still be on their way along
//! a Message Follow chain. A store read that finds a *later* owner does not let calls use
//! it yet: the lane switches, a barrier goes down the old route first (behind everything
//! this node sent on it, relayed in order to wherever the object is now), and only once
//! the barrier is answered do calls use the new route. So one sender's messages to one
//! object are applied in the order sent, across any number of moves. A read that returns
//! an *older* route than the lane's (it began before a move) never takes the lane back.

use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::authority::{ObjectShape, OwnerFence, OwnerRoute};
use super::live_object::LiveObject;
use super::route_traffic::{RouteTraffic, Sending};
use crate::address::ObjectKey;
use crate::store::{LeaseToken, StoreVersion};
use crate::sync::LockUnpoisoned;

/// The default RouteCacheMaxAge.
pub(crate) const DEFAULT_ROUTE_CACHE_MAX_AGE: Duration = Duration::from_secs(15);
/// The fewest lanes a node's cache is sized for by default, whatever its memory.
pub(crate) const MIN_ROUTE_CACHE_CAPACITY: usize = 65_536;
/// The most lanes a node's cache is sized for by default, whatever its memory.
const MAX_DEFAULT_ROUTE_CACHE_CAPACITY: usize = 16 * 1024 * 1024;
/// What the default size assumes one lane costs, with its route (`zlink-bench scale`
/// measures it): generous, so the default never takes more than its share.
const ASSUMED_LANE_BYTES: u64 = 1024;
/// The share of the node's memory the default size gives the cache: 1/64.
const MEMORY_SHARE_DIVISOR: u64 = 64;
/// The lanes one eviction looks at for one not used lately (each loses its second chance
/// as it is looked at), and then again for any not switching: never the whole shard.
const EVICTION_PROBES: usize = 64;

/// The default route cache size for a node with `memory` bytes: 1/64 of it at 1 KiB a
/// lane, between 65,536 and 16 Mi lanes.
pub(crate) fn default_route_cache_capacity(memory: Option<u64>) -> usize {
    let Some(memory) = memory else {
        return MIN_ROUTE_CACHE_CAPACITY;
    };
    let lanes = memory / MEMORY_SHARE_DIVISOR / ASSUMED_LANE_BYTES;
    usize::try_from(lanes)
        .unwrap_or(usize::MAX)
        .clamp(MIN_ROUTE_CACHE_CAPACITY, MAX_DEFAULT_ROUTE_CACHE_CAPACITY)
}

/// The packet name of a follow barrier: what a route switch sends down the old route
/// before it uses the new one. Packet names beginning with `zlink.` are the framework's:
/// no Spot or Actor type may declare one.
pub(crate) const FOLLOW_BARRIER: &str = "zlink.follow-barrier";

/// A node's route cache at one moment (in `RuntimeStatus`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RouteCacheStatus {
    /// The most routes it keeps (`RuntimeBuilder::route_cache_capacity`).
    pub capacity: usize,
    /// The routes it holds now: cached, or remembered for a while after (calls sent on
    /// them may still be on their way).
    pub routes: usize,
}

/// A Ready owner route with the fences a message is admitted against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadyRoute {
    pub(crate) key: ObjectKey,
    pub(crate) shape: ObjectShape,
    /// The stable type its authority names (what a call with Instance intent checks).
    pub(crate) stable_type: String,
    pub(crate) fence: OwnerFence,
    pub(crate) owner: OwnerRoute,
    pub(crate) version: StoreVersion,
    /// The object itself, once a call found it on this node under this route.
    pub(crate) local: LocalBinding,
}

/// The object a route leads to when its owner is this node, bound by the first call that
/// found it in the registry: later calls on the route skip the registry. The route's fence
/// names the object's incarnation, so the binding is checked as the registry's answer
/// would be, and a bound object that no longer admits sends the call to the registry again
/// (a Spot re-created on the same owner takes messages of the old route, seed 000 §2.6).
pub(crate) struct LocalBinding<T = LiveObject>(OnceLock<Weak<T>>);

impl<T> Default for LocalBinding<T> {
    fn default() -> Self {
        LocalBinding(OnceLock::new())
    }
}

impl<T> LocalBinding<T> {
    /// The bound object, while it exists.
    pub(crate) fn get(&self) -> Option<Arc<T>> {
        self.0.get().and_then(Weak::upgrade)
    }

    /// Takes over `earlier`'s binding, if this one has none.
    fn keep_binding_of(&self, earlier: &LocalBinding<T>) {
        if let Some(found) = earlier.0.get() {
            let _ = self.0.set(found.clone());
        }
    }

    /// Marks the route as leading here without an object (what a unit test can make).
    #[cfg(test)]
    pub(crate) fn bind_nothing(&self) {
        let _ = self.0.set(Weak::new());
    }

    /// Whether a call found the object here: the route's owner is this node.
    pub(crate) fn is_bound(&self) -> bool {
        self.0.get().is_some()
    }

    /// Binds `live` (the first binding stays).
    pub(crate) fn bind(&self, live: &Arc<T>) {
        let _ = self.0.set(Arc::downgrade(live));
    }
}

/// Part of no route's identity: two routes are the same authority whatever they found.
impl<T> PartialEq for LocalBinding<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> Eq for LocalBinding<T> {}

/// A copied route binds again (its first call finds the object).
impl<T> Clone for LocalBinding<T> {
    fn clone(&self) -> Self {
        LocalBinding::default()
    }
}

impl<T> std::fmt::Debug for LocalBinding<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "bound"
        } else {
            "unbound"
        })
    }
}

impl ReadyRoute {
    /// Whether `other` is a later authority of the same ID than this route: a higher
    /// incarnation, or a later owner of the same one.
    fn older_than(&self, other: &OwnerFence) -> bool {
        self.generations() < (other.object_generation, other.owner_generation)
    }

    /// Whether `other`, read for the same ID, is a later authority than this route: later
    /// generations, or the same generations written later (a larger StoreVersion).
    fn superseded_by(&self, other: &ReadyRoute) -> bool {
        self.older_than(&other.fence)
            || (self.generations() == other.generations()
                && other.version.is_later_than(&self.version) == Some(true))
    }

    fn generations(&self) -> (u64, u64) {
        (self.fence.object_generation, self.fence.owner_generation)
    }

    /// The same authority on the same owner node.
    fn same_as(&self, other: &ReadyRoute) -> bool {
        self.fence == other.fence && self.owner == other.owner
    }
}

/// A route to use, and the call on it that this started.
#[derive(Debug)]
pub(crate) struct Routed {
    pub(crate) route: Arc<ReadyRoute>,
    pub(crate) sending: Sending,
}

/// A route switch under way, as a waiting call sees it.
#[derive(Clone, Debug)]
pub(crate) struct Switch {
    done: watch::Receiver<bool>,
}

impl Switch {
    fn is_done(&self) -> bool {
        *self.done.borrow() || self.done.has_changed().is_err()
    }

    /// Until the barrier was answered (or given up: its driver ended either way).
    pub(crate) async fn finished(mut self) {
        let _ = self.done.wait_for(|done| *done).await;
    }
}

/// The right, and the duty, to finish one switch: send the barrier down `from`, then
/// [`RouteCache::switched`]. Dropped unfinished, it releases the waiting calls anyway.
#[derive(Debug)]
pub(crate) struct SwitchStart {
    /// The route this node sent on before.
    pub(crate) from: Arc<ReadyRoute>,
    /// The route calls use once the barrier is answered.
    pub(crate) to: Arc<ReadyRoute>,
    /// Until when `to` may then be cached (`None`: not at all).
    cache_until: Option<Instant>,
    done: watch::Sender<bool>,
}

impl SwitchStart {
    /// What a call waiting for this switch waits on.
    pub(crate) fn waiter(&self) -> Switch {
        Switch {
            done: self.done.subscribe(),
        }
    }
}

/// What a cached lookup found.
pub(crate) enum Lookup {
    Hit(Routed),
    Miss,
    /// The lane is switching to a later route: wait, then look again.
    Switching(Switch),
}

/// What a route just read from the store becomes.
pub(crate) enum RouteDecision {
    /// Use this one now: the route read, or the later one this node already uses.
    Use(Routed),
    /// A later owner than the lane's: the caller drives the barrier down the old route.
    Switch(SwitchStart),
    /// Another call is switching the lane: wait, then look again.
    Wait(Switch),
}

struct IdLane {
    /// The newest route this node handed out for the ID; only a later authority replaces
    /// it.
    route: Arc<ReadyRoute>,
    /// Until when calls use `route` without a store read (`None`: they read first).
    cached_until: Option<Instant>,
    /// Until when the lane is remembered once `route` is no longer cached.
    remember_until: Instant,
    /// A follow notice proved `route` old: a read that still returns it (it began before
    /// the move committed) uses it once, and it is never cached again.
    moved_away: bool,
    /// The switch to `route` from an earlier one, while its barrier runs.
    switch: Option<Switch>,
    /// What was sent on `route`.
    traffic: Arc<RouteTraffic>,
    /// Used again since it came or since the clock hand last passed it: it is spared once
    /// (CLOCK eviction).
    referenced: bool,
}

impl IdLane {
    fn new(route: Arc<ReadyRoute>, cached_until: Option<Instant>, remember_until: Instant) -> Self {
        IdLane {
            route,
            cached_until,
            remember_until,
            moved_away: false,
            switch: None,
            traffic: Arc::default(),
            referenced: false,
        }
    }

    fn routed(&self) -> Routed {
        // A route that found its object here is not counted: what is sent on it is in
        // the object's queue, or in its move's hold, once the call returns, and a switch
        // away from it always sends the barrier through that hold.
        let sending = if self.route.local.is_bound() {
            Sending::uncounted()
        } else {
            self.traffic.start()
        };
        Routed {
            route: self.route.clone(),
            sending,
        }
    }

    fn uncache(&mut self, now: Instant, memory: Duration) -> bool {
        let was = self.cached_until.take().is_some_and(|until| until > now);
        self.remember_until = self.remember_until.max(now + memory);
        was
    }

    fn switching(&mut self) -> Option<Switch> {
        match &self.switch {
            Some(switch) if !switch.is_done() => Some(switch.clone()),
            Some(_) => {
                self.switch = None;
                None
            }
            None => None,
        }
    }

    /// Forgettable: not cached, not switching, and past its memory.
    fn forgotten(&mut self, now: Instant) -> bool {
        if let Some(until) = self.cached_until {
            if until > now {
                return false;
            }
        }
        self.switching().is_none() && self.remember_until <= now
    }
}

/// The cache and lanes of one node. Each shard holds at most its share of the size; a
/// new lane in a full shard evicts one by CLOCK (second chance): the hand walks the
/// shard's lanes in the order they came, sparing once each lane used since it last
/// passed, and never a lane whose switch is under way. Eviction looks at a bounded number
/// of lanes, never the whole shard.
pub(crate) struct RouteCache {
    max_age: Mutex<Duration>,
    /// How long a lane is remembered after its route stopped being cached.
    memory: Duration,
    /// The most lanes one shard keeps.
    capacity: usize,
    /// The lanes, by a hash of the key: every call takes one shard's lock, so calls to
    /// different objects on different workers rarely meet on one lock.
    shards: Box<[Shard]>,
    shard_of: foldhash::fast::RandomState,
}

/// Lanes whose keys hash to one shard; a cache line of its own (no false sharing).
#[repr(align(128))]
#[derive(Default)]
struct Shard(Mutex<ShardLanes>);

/// One shard's lanes, and the order the clock hand walks them in: every key of `lanes`
/// is in `clock` once.
#[derive(Default)]
struct ShardLanes {
    lanes: super::KeyMap<IdLane>,
    clock: std::collections::VecDeque<ObjectKey>,
}

impl ShardLanes {
    fn get_mut(&mut self, key: &ObjectKey) -> Option<&mut IdLane> {
        self.lanes.get_mut(key)
    }

    fn insert(&mut self, key: ObjectKey, lane: IdLane) {
        if self.lanes.insert(key.clone(), lane).is_none() {
            self.clock.push_back(key);
        }
    }

    /// Drops `key`'s lane before the hand reaches it. Its place on the clock stays until
    /// the hand or a compaction passes; compactions run once the clock holds twice the
    /// lanes, so each costs no more than the removals before it.
    fn remove(&mut self, key: &ObjectKey) {
        if self.lanes.remove(key).is_none() {
            return;
        }
        if self.clock.len() > 2 * self.lanes.len() + 64 {
            let mut seen = crate::object::KeyMap::default();
            let lanes = &self.lanes;
            self.clock
                .retain(|key| lanes.contains_key(key) && seen.insert(key.clone(), ()).is_none());
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lanes.len()
    }

    /// Makes room for one more lane if the shard holds `capacity`: evicts the first lane
    /// the hand finds not used since it last passed and not switching. After
    /// [`EVICTION_PROBES`] lanes all used lately, the next one not switching goes anyway.
    fn make_room(&mut self, capacity: usize) {
        if self.lanes.len() < capacity {
            return;
        }
        let probes = EVICTION_PROBES.min(self.clock.len());
        for spare_the_used in [true, false] {
            for _ in 0..probes {
                let Some(key) = self.clock.pop_front() else {
                    return;
                };
                let Some(lane) = self.lanes.get_mut(&key) else {
                    continue;
                };
                let used = std::mem::take(&mut lane.referenced);
                if !(spare_the_used && used) && lane.switching().is_none() {
                    self.lanes.remove(&key);
                    return;
                }
                self.clock.push_back(key);
            }
        }
    }
}

/// Shards of a full-size cache (a small one, as in tests, keeps one).
const SHARDS: usize = 16;

impl RouteCache {
    /// A cache whose entries live at most `max_age` (zero disables caching, not the
    /// lanes), and whose lanes are remembered `memory` after they stop being cached.
    /// `capacity` lanes at most (a shard passes its share only while every lane the hand
    /// looks at is switching).
    pub(crate) fn new(max_age: Duration, memory: Duration, capacity: usize) -> Self {
        let shards = if capacity >= SHARDS * 1024 { SHARDS } else { 1 };
        RouteCache {
            max_age: Mutex::new(max_age),
            memory,
            capacity: capacity.div_ceil(shards).max(1),
            shards: (0..shards).map(|_| Shard::default()).collect(),
            shard_of: Default::default(),
        }
    }

    /// The lanes of the shard `key` is in.
    fn lanes(&self, key: &ObjectKey) -> std::sync::MutexGuard<'_, ShardLanes> {
        let shard = if self.shards.len() == 1 {
            0
        } else {
            use std::hash::BuildHasher;
            (self.shard_of.hash_one(key) % self.shards.len() as u64) as usize
        };
        self.shards[shard].0.lock_unpoisoned()
    }

    /// Every shard's lanes, one shard at a time.
    fn each_shard(&self) -> impl Iterator<Item = std::sync::MutexGuard<'_, ShardLanes>> {
        self.shards.iter().map(|shard| shard.0.lock_unpoisoned())
    }

    /// RouteCacheMaxAge now.
    pub(crate) fn max_age(&self) -> Duration {
        *self.max_age.lock_unpoisoned()
    }

    /// Changes RouteCacheMaxAge for entries stored from now on; existing entries keep
    /// their lifetime (seed 000 §2.2).
    pub(crate) fn set_max_age(&self, max_age: Duration) {
        *self.max_age.lock_unpoisoned() = max_age;
    }

    /// The route for `key`, if one is cached and still live at `now`.
    pub(crate) fn get(&self, key: &ObjectKey, now: Instant) -> Lookup {
        let mut lanes = self.lanes(key);
        let Some(lane) = lanes.get_mut(key) else {
            return Lookup::Miss;
        };
        if lane.switch.is_some() {
            if let Some(switch) = lane.switching() {
                return Lookup::Switching(switch);
            }
        }
        match lane.cached_until {
            Some(until) if until > now => {
                lane.referenced = true;
                Lookup::Hit(lane.routed())
            }
            Some(_) => {
                lane.uncache(now, self.memory);
                Lookup::Miss
            }
            None => Lookup::Miss,
        }
    }

    /// A Ready route read at `now`, usable until `not_after` (`None`: for one call only):
    /// what calls use now, and whether the lane must switch first. It is cached until the
    /// earlier of `now + RouteCacheMaxAge` and `not_after`.
    pub(crate) fn admit(
        &self,
        route: Arc<ReadyRoute>,
        now: Instant,
        not_after: Option<Instant>,
    ) -> RouteDecision {
        let max_age = self.max_age();
        let cache_until = not_after
            .map(|bound| (now + max_age).min(bound))
            .filter(|until| !max_age.is_zero() && *until > now);
        let memory = self.memory;
        let mut lanes = self.lanes(&route.key);
        let Some(lane) = lanes.get_mut(&route.key) else {
            lanes.make_room(self.capacity);
            // Not yet used again: a route read once goes first (a sweep over many IDs
            // never pushes out the routes in use).
            let lane = IdLane::new(route.clone(), cache_until, now + memory);
            let routed = lane.routed();
            lanes.insert(route.key.clone(), lane);
            return RouteDecision::Use(routed);
        };
        lane.referenced = true;
        if let Some(switch) = lane.switching() {
            return RouteDecision::Wait(switch);
        }
        if lane.forgotten(now) {
            *lane = IdLane::new(route, cache_until, now + memory);
            return RouteDecision::Use(lane.routed());
        }
        if lane.route.same_as(&route) {
            if !lane.moved_away {
                lane.cached_until = cache_until.max(lane.cached_until);
            }
            lane.remember_until = lane.remember_until.max(now + memory);
            // The same authority read again: a route that led here still does (its calls
            // were not counted, so the lane must keep sending its barrier on a switch).
            route.local.keep_binding_of(&lane.route.local);
            lane.route = route;
            return RouteDecision::Use(lane.routed());
        }
        if !lane.route.superseded_by(&route) {
            // A read that began before this node learnt of a later owner (or of a later
            // write of the same one).
            return RouteDecision::Use(lane.routed());
        }
        if !lane.route.local.is_bound() && lane.traffic.settled() {
            // Nothing sent on the old route can still be on its way: no barrier.
            *lane = IdLane::new(route, cache_until, now + memory);
            return RouteDecision::Use(lane.routed());
        }
        let (done, receiver) = watch::channel(false);
        let from = std::mem::replace(&mut lane.route, route.clone());
        lane.cached_until = None;
        lane.remember_until = now + memory;
        lane.moved_away = false;
        lane.switch = Some(Switch { done: receiver });
        lane.traffic = Arc::default();
        RouteDecision::Switch(SwitchStart {
            from,
            to: route,
            cache_until,
            done,
        })
    }

    /// The barrier of `start` was answered (or given up): calls use its route now.
    pub(crate) fn switched(&self, start: SwitchStart) {
        let now = Instant::now();
        {
            let mut lanes = self.lanes(&start.to.key);
            if let Some(lane) = lanes.get_mut(&start.to.key) {
                if Arc::ptr_eq(&lane.route, &start.to) && !lane.moved_away {
                    lane.cached_until = start.cache_until.filter(|until| *until > now);
                }
                lane.switch = None;
            }
        }
        let _ = start.done.send(true);
    }

    /// Stops caching `key`'s route if `drop` says so; `true` if a live entry went.
    fn uncache_if(&self, key: &ObjectKey, drop: impl FnOnce(&IdLane) -> bool) -> bool {
        let now = Instant::now();
        let mut lanes = self.lanes(key);
        match lanes.get_mut(key) {
            Some(lane) if drop(lane) => lane.uncache(now, self.memory),
            _ => false,
        }
    }

    /// `key`'s incarnation `fence` closed on this node for good: a lane holding its route
    /// (or an older one) goes, so a closed object leaves no route behind. A lane already
    /// on a later authority stays, and one whose switch is under way only stops caching.
    pub(crate) fn closed_here(&self, key: &ObjectKey, fence: &OwnerFence) {
        let now = Instant::now();
        let mut lanes = self.lanes(key);
        let Some(lane) = lanes.get_mut(key) else {
            return;
        };
        if (fence.object_generation, fence.owner_generation) < lane.route.generations() {
            return;
        }
        if lane.switching().is_some() {
            lane.uncache(now, self.memory);
            return;
        }
        lanes.remove(key);
    }

    /// A later authority of `key` was seen (a read, a reply, a fence refusal): stops
    /// caching the route if it is older.
    pub(crate) fn saw_authority(&self, key: &ObjectKey, fence: &OwnerFence) {
        self.uncache_if(key, |lane| lane.route.older_than(fence));
    }

    /// A message on `route` came back stale (the owner no longer owns the ID): stops
    /// caching it only if it is still that route, never a newer one stored meanwhile.
    pub(crate) fn stale(&self, route: &ReadyRoute) {
        self.uncache_if(&route.key, |lane| *lane.route == *route);
    }

    /// A follow notice (or this node handing the object over): `key` moved away from
    /// `fence` on `owner`. If the lane holds exactly that route (or an older one) it is
    /// no longer cached, and never cached again; `true` if a live entry went.
    pub(crate) fn moved(&self, key: &ObjectKey, fence: &OwnerFence, owner: &OwnerRoute) -> bool {
        let now = Instant::now();
        let mut lanes = self.lanes(key);
        let Some(lane) = lanes.get_mut(key) else {
            return false;
        };
        let exact = lane.route.fence == *fence && lane.route.owner == *owner;
        if !exact && !lane.route.older_than(fence) {
            return false;
        }
        lane.moved_away = true;
        lane.uncache(now, self.memory)
    }

    /// The owner lease `lease` is invalid: stops caching every route to that owner.
    pub(crate) fn lease_invalidated(&self, lease: &LeaseToken) {
        self.uncache_all(|lane| lane.route.fence.held_by(lease));
    }

    /// Node `rid` left (its connection ended, or it came back as a new lifecycle): stops
    /// caching every route to it.
    pub(crate) fn owner_departed(&self, rid: &str) {
        self.uncache_all(|lane| lane.route.owner.rid == rid);
    }

    /// The store came back after an outage: what was confirmed before may be stale.
    pub(crate) fn store_recovered(&self) {
        self.uncache_all(|_| true);
    }

    fn uncache_all(&self, drop: impl Fn(&IdLane) -> bool) {
        let now = Instant::now();
        let memory = self.memory;
        for mut lanes in self.each_shard() {
            for lane in lanes.lanes.values_mut() {
                if lane.cached_until.is_some() && drop(lane) {
                    lane.uncache(now, memory);
                }
            }
        }
    }

    /// Its size and the routes it holds (one lock per shard, nothing walked).
    pub(crate) fn status(&self) -> RouteCacheStatus {
        RouteCacheStatus {
            capacity: self.capacity * self.shards.len(),
            routes: self.each_shard().map(|lanes| lanes.lanes.len()).sum(),
        }
    }

    /// Routes cached and still live.
    #[cfg_attr(not(test), allow(dead_code))] // wired to discovery events next
    pub(crate) fn len(&self) -> usize {
        let now = Instant::now();
        self.each_shard()
            .map(|lanes| {
                lanes
                    .lanes
                    .values()
                    .filter(|lane| lane.cached_until.is_some_and(|until| until > now))
                    .count()
            })
            .sum()
    }

    /// Lanes remembered (cached or not).
    #[cfg(test)]
    fn lanes_len(&self) -> usize {
        self.each_shard().map(|lanes| lanes.len()).sum()
    }
}

#[cfg(test)]
mod tests;
