//! The positive route cache (seed 000 §2.2): recently confirmed Ready owner routes, with
//! the fences needed to admit a message at the owner, so a warm direct call reads the
//! Location Store zero times.
//!
//! Only Ready routes are kept: Missing, Creating and a store failure are never cached, so
//! a momentary failure never outlives the call that saw it. An entry lives until the
//! earlier of RouteCacheMaxAge and the bound the resolver gives it (this node's local
//! admission deadline), and goes at once on a newer authority, a stale-route result, a
//! store recovery or an owner lease invalidation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::authority::{ObjectShape, OwnerFence, OwnerRoute};
use super::id::ObjectKey;
use crate::store::{LeaseToken, StoreVersion};

/// The default RouteCacheMaxAge.
pub(crate) const DEFAULT_ROUTE_CACHE_MAX_AGE: Duration = Duration::from_secs(15);
/// The most routes one node keeps; past it, expired entries go first, then any.
pub(crate) const ROUTE_CACHE_CAPACITY: usize = 65_536;

/// A Ready owner route with the fences a message is admitted against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadyRoute {
    pub(crate) key: ObjectKey,
    pub(crate) shape: ObjectShape,
    pub(crate) fence: OwnerFence,
    pub(crate) owner: OwnerRoute,
    pub(crate) version: StoreVersion,
}

impl ReadyRoute {
    /// Whether `other` is a later authority of the same ID than this route: a higher
    /// incarnation, or a later owner of the same one.
    fn older_than(&self, other: &OwnerFence) -> bool {
        (self.fence.object_generation, self.fence.owner_generation)
            < (other.object_generation, other.owner_generation)
    }
}

struct Entry {
    /// Shared, so a hit costs one reference count, not a copy of the route's names.
    route: Arc<ReadyRoute>,
    expires_at: Instant,
}

/// A route a follow notice proved old: (ObjectGeneration, AOG) it moved away from, and
/// until when no route at or below it is cached again.
struct Superseded {
    generations: (u64, u64),
    until: Instant,
}

/// The cache of one node.
pub(crate) struct RouteCache {
    max_age: Mutex<Duration>,
    capacity: usize,
    entries: Mutex<HashMap<ObjectKey, Entry>>,
    /// What follow notices proved stale. A store read that began before the move can
    /// still return the old route after the notice dropped it; without this, that read
    /// would cache it again and the sender would take the detour (no second notice comes
    /// for the same route) until the entry expired.
    superseded: Mutex<HashMap<ObjectKey, Superseded>>,
}

impl RouteCache {
    /// A cache whose entries live at most `max_age` (zero disables caching).
    pub(crate) fn new(max_age: Duration) -> Self {
        Self::with_capacity(max_age, ROUTE_CACHE_CAPACITY)
    }

    fn with_capacity(max_age: Duration, capacity: usize) -> Self {
        RouteCache {
            max_age: Mutex::new(max_age),
            capacity: capacity.max(1),
            entries: Mutex::new(HashMap::new()),
            superseded: Mutex::new(HashMap::new()),
        }
    }

    fn superseded(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, Superseded>> {
        self.superseded.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Changes RouteCacheMaxAge for entries stored from now on; existing entries keep
    /// their lifetime (seed 000 §2.2).
    #[cfg_attr(not(test), allow(dead_code))] // a runtime setter comes with the object options
    pub(crate) fn set_max_age(&self, max_age: Duration) {
        *self.max_age.lock().unwrap_or_else(|p| p.into_inner()) = max_age;
    }

    /// The route for `key`, if one is cached and still live at `now`.
    pub(crate) fn get(&self, key: &ObjectKey, now: Instant) -> Option<Arc<ReadyRoute>> {
        let mut entries = self.entries();
        match entries.get(key) {
            Some(entry) if entry.expires_at > now => Some(entry.route.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Keeps a Ready route read at `now` until the earlier of `now + RouteCacheMaxAge` and
    /// `not_after`. An older authority than the one cached is not stored; a newer one
    /// replaces it.
    pub(crate) fn insert(&self, route: Arc<ReadyRoute>, now: Instant, not_after: Instant) {
        let max_age = *self.max_age.lock().unwrap_or_else(|p| p.into_inner());
        if max_age.is_zero() {
            return;
        }
        let expires_at = (now + max_age).min(not_after);
        if expires_at <= now {
            return;
        }
        let generations = (route.fence.object_generation, route.fence.owner_generation);
        if self
            .superseded()
            .get(&route.key)
            .is_some_and(|s| s.until > now && generations <= s.generations)
        {
            return;
        }
        let mut entries = self.entries();
        if let Some(current) = entries.get(&route.key) {
            if route.older_than(&current.route.fence) && current.expires_at > now {
                return;
            }
        }
        if entries.len() >= self.capacity && !entries.contains_key(&route.key) {
            entries.retain(|_, e| e.expires_at > now);
            if entries.len() >= self.capacity {
                if let Some(victim) = entries.keys().next().cloned() {
                    entries.remove(&victim);
                }
            }
        }
        entries.insert(route.key.clone(), Entry { route, expires_at });
    }

    /// A later authority of `key` was seen (a read, a reply, a fence refusal): drops the
    /// entry if it is older.
    pub(crate) fn saw_authority(&self, key: &ObjectKey, fence: &OwnerFence) {
        let mut entries = self.entries();
        if entries.get(key).is_some_and(|e| e.route.older_than(fence)) {
            entries.remove(key);
        }
    }

    /// A message on `route` came back stale (the owner no longer owns the ID): drops the
    /// entry only if it is still that route, never a newer one stored meanwhile.
    pub(crate) fn stale(&self, route: &ReadyRoute) {
        let mut entries = self.entries();
        if entries.get(&route.key).is_some_and(|e| *e.route == *route) {
            entries.remove(&route.key);
        }
    }

    /// A follow notice: the object moved away from `fence` on `owner`. Drops the entry if
    /// it is exactly that route or an older one (never a newer one stored meanwhile), and
    /// keeps that route and older ones from being cached again for RouteCacheMaxAge;
    /// `true` if it dropped the entry.
    pub(crate) fn moved(&self, key: &ObjectKey, fence: &OwnerFence, owner: &OwnerRoute) -> bool {
        let now = Instant::now();
        let max_age = *self.max_age.lock().unwrap_or_else(|p| p.into_inner());
        let generations = (fence.object_generation, fence.owner_generation);
        {
            let mut superseded = self.superseded();
            if superseded.len() >= self.capacity && !superseded.contains_key(key) {
                superseded.retain(|_, s| s.until > now);
                if superseded.len() >= self.capacity {
                    return self.drop_moved(key, fence, owner);
                }
            }
            let until = now + max_age;
            let known = superseded.get(key).map(|s| s.generations);
            if known.is_none_or(|known| known < generations) {
                superseded.insert(key.clone(), Superseded { generations, until });
            }
        }
        self.drop_moved(key, fence, owner)
    }

    fn drop_moved(&self, key: &ObjectKey, fence: &OwnerFence, owner: &OwnerRoute) -> bool {
        let mut entries = self.entries();
        if entries.get(key).is_some_and(|e| {
            (e.route.fence == *fence && e.route.owner == *owner) || e.route.older_than(fence)
        }) {
            entries.remove(key);
            return true;
        }
        false
    }

    /// Drops the entry of `key` whatever it holds (this node moved the object away).
    pub(crate) fn forget(&self, key: &ObjectKey) {
        self.entries().remove(key);
    }

    /// The owner lease `lease` is invalid: drops every route to that owner.
    pub(crate) fn lease_invalidated(&self, lease: &LeaseToken) {
        self.entries().retain(|_, e| !e.route.fence.held_by(lease));
    }

    /// Node `rid` left (its connection ended, or it came back as a new lifecycle): drops
    /// every route to it.
    pub(crate) fn owner_departed(&self, rid: &str) {
        self.entries().retain(|_, e| e.route.owner.rid != rid);
    }

    /// The store came back after an outage: what was confirmed before may be stale.
    pub(crate) fn store_recovered(&self) {
        self.entries().clear();
    }

    /// Entries held (expired ones included until touched).
    #[cfg_attr(not(test), allow(dead_code))] // wired to discovery events next
    pub(crate) fn len(&self) -> usize {
        self.entries().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::id::SpotId;
    use crate::store::OwnerId;

    fn route(id: &str, generation: u64, owner_generation: u64) -> Arc<ReadyRoute> {
        Arc::new(ReadyRoute {
            key: ObjectKey::from(&SpotId::new(id).unwrap()),
            shape: ObjectShape::UserSpot,
            fence: OwnerFence {
                object_generation: generation,
                owner_generation,
                owner: "owner".into(),
                lease_generation: 4,
            },
            owner: OwnerRoute {
                mesh_name: "m".into(),
                rid: "a".into(),
                node_generation: 1,
            },
            version: StoreVersion(format!("{generation}.{owner_generation}")),
        })
    }

    const AGE: Duration = DEFAULT_ROUTE_CACHE_MAX_AGE;

    #[test]
    fn an_entry_lives_until_the_earlier_of_max_age_and_its_bound() {
        let cache = RouteCache::new(AGE);
        let now = Instant::now();
        let r = route("r", 1, 1);
        cache.insert(r.clone(), now, now + Duration::from_secs(4));
        assert_eq!(
            cache.get(&r.key, now + Duration::from_secs(3)),
            Some(r.clone())
        );
        assert_eq!(cache.get(&r.key, now + Duration::from_secs(4)), None);
        cache.insert(r.clone(), now, now + Duration::from_secs(60));
        assert!(cache
            .get(&r.key, now + AGE - Duration::from_millis(1))
            .is_some());
        assert_eq!(cache.get(&r.key, now + AGE), None);
        assert_eq!(cache.len(), 0, "an expired entry is dropped when touched");
    }

    #[test]
    fn max_age_zero_caches_nothing_and_a_change_applies_to_new_entries_only() {
        let cache = RouteCache::new(Duration::ZERO);
        let now = Instant::now();
        cache.insert(route("r", 1, 1), now, now + AGE);
        assert_eq!(cache.len(), 0);
        cache.set_max_age(Duration::from_secs(2));
        cache.insert(route("r", 1, 1), now, now + AGE);
        cache.set_max_age(AGE);
        let key = route("r", 1, 1).key.clone();
        assert!(cache.get(&key, now + Duration::from_secs(3)).is_none());
    }

    #[test]
    fn a_newer_authority_replaces_and_an_older_one_is_ignored() {
        let cache = RouteCache::new(AGE);
        let now = Instant::now();
        cache.insert(route("r", 2, 5), now, now + AGE);
        cache.insert(route("r", 2, 4), now, now + AGE);
        assert_eq!(
            cache
                .get(&route("r", 0, 0).key, now)
                .unwrap()
                .fence
                .owner_generation,
            5
        );
        cache.insert(route("r", 3, 1), now, now + AGE);
        assert_eq!(
            cache
                .get(&route("r", 0, 0).key, now)
                .unwrap()
                .fence
                .object_generation,
            3
        );
    }

    #[test]
    fn a_follow_notice_drops_only_the_exact_route_it_names() {
        let cache = RouteCache::new(AGE);
        let now = Instant::now();
        let newer = route("r", 1, 2);
        cache.insert(newer.clone(), now, now + AGE);
        // A notice about the older route (the sender already learnt the newer one).
        let older = route("r", 1, 1);
        assert!(!cache.moved(&newer.key, &older.fence, &older.owner));
        // The same fence, but another owner node.
        let elsewhere = OwnerRoute {
            rid: "b".into(),
            ..newer.owner.clone()
        };
        assert!(!cache.moved(&newer.key, &newer.fence, &elsewhere));
        assert_eq!(cache.get(&newer.key, now), Some(newer.clone()));
        // Exactly the cached route.
        assert!(cache.moved(&newer.key, &newer.fence, &newer.owner));
        assert_eq!(cache.get(&newer.key, now), None);
    }

    #[test]
    fn a_route_a_notice_proved_old_is_not_cached_again() {
        let cache = RouteCache::new(AGE);
        let now = Instant::now();
        // The notice arrives while no entry is cached (another caller's read is on its
        // way back with the old route).
        let old = route("r", 1, 1);
        assert!(!cache.moved(&old.key, &old.fence, &old.owner));
        cache.insert(old.clone(), now, now + AGE);
        assert_eq!(cache.get(&old.key, now), None, "the old route stays out");
        // An older entry is dropped by a notice about a later route.
        let newer = route("r", 1, 3);
        cache.insert(newer.clone(), now, now + AGE);
        assert_eq!(cache.get(&old.key, now), Some(newer.clone()));
        let between = route("r", 1, 2);
        assert!(!cache.moved(&between.key, &between.fence, &between.owner));
        assert_eq!(cache.get(&old.key, now), Some(newer.clone()), "newer stays");
        assert!(cache.moved(&newer.key, &newer.fence, &newer.owner));
        // The route it moved to, or a later incarnation, is cached as usual.
        let next = route("r", 1, 4);
        cache.insert(next.clone(), now, now + AGE);
        assert_eq!(cache.get(&old.key, now), Some(next));
        let reborn = route("r", 2, 1);
        cache.insert(reborn.clone(), now, now + AGE);
        assert_eq!(cache.get(&old.key, now), Some(reborn));
    }

    #[test]
    fn each_invalidation_event_drops_exactly_what_it_concerns() {
        let cache = RouteCache::new(AGE);
        let now = Instant::now();
        let (a, b) = (route("a", 1, 1), route("b", 1, 1));
        // A newer authority seen.
        cache.insert(a.clone(), now, now + AGE);
        cache.saw_authority(&a.key, &route("a", 1, 1).fence);
        assert!(
            cache.get(&a.key, now).is_some(),
            "the same authority keeps it"
        );
        cache.saw_authority(&a.key, &route("a", 1, 2).fence);
        assert!(cache.get(&a.key, now).is_none());
        // A stale-route result, only for the route that was used.
        cache.insert(route("a", 1, 3), now, now + AGE);
        cache.stale(&a);
        assert!(cache.get(&a.key, now).is_some(), "a newer route stays");
        cache.stale(&route("a", 1, 3));
        assert!(cache.get(&a.key, now).is_none());
        // An owner lease invalidated.
        cache.insert(a.clone(), now, now + AGE);
        cache.insert(b.clone(), now, now + AGE);
        let mut other = a.fence.lease();
        other.owner = OwnerId("someone else".into());
        cache.lease_invalidated(&other);
        assert_eq!(cache.len(), 2);
        cache.lease_invalidated(&a.fence.lease());
        assert_eq!(cache.len(), 0);
        // A store recovery.
        cache.insert(a.clone(), now, now + AGE);
        cache.store_recovered();
        assert!(cache.get(&a.key, now).is_none());
        // The owner node left.
        cache.insert(a.clone(), now, now + AGE);
        cache.owner_departed("someone else");
        assert!(cache.get(&a.key, now).is_some());
        cache.owner_departed(&a.owner.rid);
        assert!(cache.get(&a.key, now).is_none());
    }

    #[test]
    fn the_cache_is_bounded() {
        let cache = RouteCache::with_capacity(AGE, 8);
        let now = Instant::now();
        for i in 0..100 {
            cache.insert(route(&format!("r{i}"), 1, 1), now, now + AGE);
        }
        assert!(cache.len() <= 8);
        assert!(
            cache.get(&route("r99", 1, 1).key, now).is_some(),
            "the newest is kept"
        );
    }
}
