use super::*;
use crate::address::SpotId;
use crate::store::OwnerId;

const AGE: Duration = DEFAULT_ROUTE_CACHE_MAX_AGE;
const MEMORY: Duration = Duration::from_secs(30);

fn route(id: &str, generation: u64, owner_generation: u64) -> Arc<ReadyRoute> {
    Arc::new(ReadyRoute {
        key: ObjectKey::from(&SpotId::new(id).unwrap()),
        shape: ObjectShape::UserSpot,
        stable_type: "room".into(),
        fence: OwnerFence {
            object_generation: generation,
            owner_generation,
            owner: "owner".into(),
            lease_generation: 4,
        },
        owner: OwnerRoute {
            mesh_name: "m".into(),
            rid: format!("n{owner_generation}"),
            node_generation: 1,
        },
        version: StoreVersion(format!("{generation}.{owner_generation}")),
        local: Default::default(),
    })
}

fn cache() -> RouteCache {
    RouteCache::new(AGE, MEMORY, MIN_ROUTE_CACHE_CAPACITY)
}

fn hit(cache: &RouteCache, key: &ObjectKey, now: Instant) -> Option<Arc<ReadyRoute>> {
    match cache.get(key, now) {
        Lookup::Hit(routed) => Some(routed.route),
        _ => None,
    }
}

fn used(admitted: RouteDecision) -> Arc<ReadyRoute> {
    match admitted {
        RouteDecision::Use(routed) => routed.route,
        _ => panic!("expected a route to use"),
    }
}

fn switch(admitted: RouteDecision) -> SwitchStart {
    match admitted {
        RouteDecision::Switch(start) => start,
        _ => panic!("expected a switch"),
    }
}

#[test]
fn an_entry_lives_until_the_earlier_of_max_age_and_its_bound() {
    let cache = cache();
    let now = Instant::now();
    let r = route("r", 1, 1);
    used(cache.admit(r.clone(), now, Some(now + Duration::from_secs(4))));
    assert_eq!(
        hit(&cache, &r.key, now + Duration::from_secs(3)),
        Some(r.clone())
    );
    assert_eq!(hit(&cache, &r.key, now + Duration::from_secs(4)), None);
    used(cache.admit(r.clone(), now, Some(now + Duration::from_secs(60))));
    assert!(hit(&cache, &r.key, now + AGE - Duration::from_millis(1)).is_some());
    assert_eq!(hit(&cache, &r.key, now + AGE), None);
    assert_eq!(cache.len(), 0, "an expired entry is not counted");
    assert_eq!(cache.lanes_len(), 1, "its lane is remembered");
}

#[test]
fn max_age_zero_caches_nothing_and_a_change_applies_to_new_entries_only() {
    let cache = RouteCache::new(Duration::ZERO, MEMORY, MIN_ROUTE_CACHE_CAPACITY);
    let now = Instant::now();
    used(cache.admit(route("r", 1, 1), now, Some(now + AGE)));
    assert_eq!(cache.len(), 0);
    cache.set_max_age(Duration::from_secs(2));
    used(cache.admit(route("r", 1, 1), now, Some(now + AGE)));
    cache.set_max_age(AGE);
    let key = route("r", 1, 1).key.clone();
    assert!(hit(&cache, &key, now + Duration::from_secs(1)).is_some());
    assert!(hit(&cache, &key, now + Duration::from_secs(3)).is_none());
}

#[test]
fn a_route_for_one_call_only_is_not_cached() {
    let cache = cache();
    let now = Instant::now();
    let r = route("r", 1, 1);
    assert_eq!(used(cache.admit(r.clone(), now, None)), r);
    assert!(hit(&cache, &r.key, now).is_none());
}

#[test]
fn a_later_owner_is_used_only_after_the_barrier_down_the_old_route() {
    let cache = cache();
    let now = Instant::now();
    let old = route("r", 2, 4);
    used(cache.admit(old.clone(), now, Some(now + AGE)));
    cache.moved(&old.key, &old.fence, &old.owner);
    let newer = route("r", 2, 5);
    let start = switch(cache.admit(newer.clone(), now, Some(now + AGE)));
    assert_eq!(
        (start.from.clone(), start.to.clone()),
        (old.clone(), newer.clone())
    );
    // Meanwhile every call waits: a hit, another read of the new route, and a read
    // that still returns the old one.
    assert!(matches!(cache.get(&old.key, now), Lookup::Switching(_)));
    assert!(matches!(
        cache.admit(newer.clone(), now, Some(now + AGE)),
        RouteDecision::Wait(_)
    ));
    assert!(matches!(
        cache.admit(old.clone(), now, Some(now + AGE)),
        RouteDecision::Wait(_)
    ));
    let waiter = start.waiter();
    assert!(!waiter.is_done());
    cache.switched(start);
    assert!(waiter.is_done());
    assert_eq!(hit(&cache, &old.key, now), Some(newer.clone()));
    // A read that began before the move never takes the lane back.
    assert_eq!(used(cache.admit(old.clone(), now, Some(now + AGE))), newer);
    assert_eq!(hit(&cache, &old.key, now), Some(newer));
}

#[test]
fn a_later_owner_needs_no_barrier_once_everything_sent_is_known_to_have_arrived() {
    let cache = cache();
    let now = Instant::now();
    let old = route("r", 1, 1);
    let RouteDecision::Use(first) = cache.admit(old.clone(), now, Some(now + AGE)) else {
        panic!("a new lane is used at once");
    };
    // A request under way on the old route: a switch needs a barrier.
    cache.stale(&old);
    assert!(matches!(
        cache.admit(route("r", 1, 2), now, Some(now + AGE)),
        RouteDecision::Switch(_)
    ));
    drop(first);
    // Replied: everything sent before it arrived, so the next switch is immediate.
    let RouteDecision::Use(request) = cache.admit(route("r", 1, 2), now, Some(now + AGE)) else {
        panic!("the lane's own route is used");
    };
    request.sending.replied();
    cache.stale(&route("r", 1, 2));
    let RouteDecision::Use(next) = cache.admit(route("r", 1, 3), now, Some(now + AGE)) else {
        panic!("no barrier after a replied request");
    };
    assert_eq!(next.route, route("r", 1, 3));
    // A one-way is never confirmed by itself...
    drop(next.sending);
    cache.stale(&route("r", 1, 3));
    assert!(matches!(
        cache.admit(route("r", 1, 4), now, Some(now + AGE)),
        RouteDecision::Switch(_)
    ));
}

#[test]
fn a_one_way_is_confirmed_by_a_request_replied_after_it() {
    let cache = cache();
    let now = Instant::now();
    let RouteDecision::Use(one_way) = cache.admit(route("r", 1, 1), now, Some(now + AGE)) else {
        panic!("a new lane is used at once");
    };
    drop(one_way);
    let Lookup::Hit(request) = cache.get(&route("r", 1, 1).key, now) else {
        panic!("cached");
    };
    request.sending.replied();
    cache.stale(&route("r", 1, 1));
    assert!(matches!(
        cache.admit(route("r", 1, 2), now, Some(now + AGE)),
        RouteDecision::Use(_)
    ));
}

#[test]
fn a_switch_whose_driver_went_away_releases_its_waiters() {
    let cache = cache();
    let now = Instant::now();
    used(cache.admit(route("r", 1, 1), now, Some(now + AGE)));
    let start = switch(cache.admit(route("r", 2, 1), now, Some(now + AGE)));
    let waiter = start.waiter();
    drop(start);
    assert!(waiter.is_done());
    assert!(
        matches!(cache.get(&route("r", 0, 0).key, now), Lookup::Miss),
        "the next call reads again"
    );
    assert!(matches!(
        cache.admit(route("r", 2, 1), now, Some(now + AGE)),
        RouteDecision::Use(_)
    ));
}

#[test]
fn a_forgotten_lane_needs_no_barrier() {
    let cache = cache();
    let now = Instant::now();
    let old = route("r", 1, 1);
    used(cache.admit(old.clone(), now, Some(now + AGE)));
    cache.stale(&old);
    let later = Instant::now() + MEMORY + Duration::from_millis(1);
    assert!(matches!(
        cache.admit(route("r", 1, 2), later, Some(later + AGE)),
        RouteDecision::Use(_)
    ));
}

#[test]
fn a_follow_notice_drops_only_the_exact_route_it_names() {
    let cache = cache();
    let now = Instant::now();
    let older = route("r", 1, 1);
    used(cache.admit(older.clone(), now, Some(now + AGE)));
    let newer = route("r", 1, 2);
    let start = switch(cache.admit(newer.clone(), now, Some(now + AGE)));
    cache.switched(start);
    // A notice about the older route (the sender already uses the newer one).
    assert!(!cache.moved(&newer.key, &older.fence, &older.owner));
    // The same fence, but another owner node.
    let elsewhere = OwnerRoute {
        rid: "b".into(),
        ..newer.owner.clone()
    };
    assert!(!cache.moved(&newer.key, &newer.fence, &elsewhere));
    assert_eq!(hit(&cache, &newer.key, now), Some(newer.clone()));
    // Exactly the cached route.
    assert!(cache.moved(&newer.key, &newer.fence, &newer.owner));
    assert_eq!(hit(&cache, &newer.key, now), None);
}

#[test]
fn a_route_a_notice_proved_old_is_not_cached_again() {
    let cache = cache();
    let now = Instant::now();
    let old = route("r", 1, 1);
    used(cache.admit(old.clone(), now, Some(now + AGE)));
    assert!(cache.moved(&old.key, &old.fence, &old.owner));
    // Another caller's read, begun before the move committed, still returns it: it
    // is used for that call, and not cached.
    assert_eq!(used(cache.admit(old.clone(), now, Some(now + AGE))), old);
    assert_eq!(hit(&cache, &old.key, now), None, "the old route stays out");
    // The route it moved to, or a later incarnation, is cached as usual.
    let next = route("r", 1, 4);
    cache.switched(switch(cache.admit(next.clone(), now, Some(now + AGE))));
    assert_eq!(hit(&cache, &old.key, now), Some(next.clone()));
    let reborn = route("r", 2, 1);
    cache.switched(switch(cache.admit(reborn.clone(), now, Some(now + AGE))));
    assert_eq!(hit(&cache, &old.key, now), Some(reborn));
}

#[test]
fn each_invalidation_event_drops_exactly_what_it_concerns() {
    let cache = cache();
    let now = Instant::now();
    let (a, b) = (route("a", 1, 1), route("b", 1, 1));
    // A newer authority seen.
    used(cache.admit(a.clone(), now, Some(now + AGE)));
    cache.saw_authority(&a.key, &route("a", 1, 1).fence);
    assert!(
        hit(&cache, &a.key, now).is_some(),
        "the same authority keeps it"
    );
    cache.saw_authority(&a.key, &route("a", 1, 2).fence);
    assert!(hit(&cache, &a.key, now).is_none());
    // A stale-route result, only for the route that was used.
    used(cache.admit(a.clone(), now, Some(now + AGE)));
    cache.stale(&route("a", 1, 3));
    assert!(hit(&cache, &a.key, now).is_some(), "another route's result");
    cache.stale(&a);
    assert!(hit(&cache, &a.key, now).is_none());
    // An owner lease invalidated.
    used(cache.admit(a.clone(), now, Some(now + AGE)));
    used(cache.admit(b.clone(), now, Some(now + AGE)));
    let mut other = a.fence.lease();
    other.owner = OwnerId("someone else".into());
    cache.lease_invalidated(&other);
    assert_eq!(cache.len(), 2);
    cache.lease_invalidated(&a.fence.lease());
    assert_eq!(cache.len(), 0);
    // A store recovery.
    used(cache.admit(a.clone(), now, Some(now + AGE)));
    cache.store_recovered();
    assert!(hit(&cache, &a.key, now).is_none());
    // The owner node left.
    used(cache.admit(a.clone(), now, Some(now + AGE)));
    cache.owner_departed("someone else");
    assert!(hit(&cache, &a.key, now).is_some());
    cache.owner_departed(&a.owner.rid);
    assert!(hit(&cache, &a.key, now).is_none());
}

#[test]
fn the_cache_is_bounded() {
    let cache = RouteCache::new(AGE, MEMORY, 8);
    let now = Instant::now();
    for i in 0..100 {
        used(cache.admit(route(&format!("r{i}"), 1, 1), now, Some(now + AGE)));
    }
    assert!(cache.lanes_len() <= 8);
    assert!(
        hit(&cache, &route("r99", 1, 1).key, now).is_some(),
        "the newest is kept"
    );
}

#[test]
fn a_full_cache_evicts_lanes_not_used_since_the_hand_passed_and_keeps_the_ones_in_use() {
    let cache = RouteCache::new(AGE, MEMORY, 8);
    let now = Instant::now();
    let hot: Vec<_> = (0..4).map(|i| route(&format!("hot{i}"), 1, 1)).collect();
    for r in &hot {
        used(cache.admit(r.clone(), now, Some(now + AGE)));
    }
    for i in 0..1_000 {
        for r in &hot {
            assert!(
                hit(&cache, &r.key, now).is_some(),
                "hot route {} evicted at {i}",
                r.key
            );
        }
        used(cache.admit(route(&format!("cold{i}"), 1, 1), now, Some(now + AGE)));
        assert!(cache.lanes_len() <= 8, "past its size at {i}");
    }
    let shard = cache
        .each_shard()
        .next()
        .map(|lanes| (lanes.len(), lanes.clock.len()));
    assert_eq!(shard, Some((8, 8)), "every lane is on the clock once");
}

#[test]
fn a_lane_whose_switch_is_under_way_is_never_evicted() {
    let cache = RouteCache::new(AGE, MEMORY, 8);
    let now = Instant::now();
    let first = route("moving", 1, 1);
    first.local.bind_nothing();
    used(cache.admit(first, now, Some(now + AGE)));
    let RouteDecision::Switch(start) = cache.admit(route("moving", 1, 2), now, Some(now + AGE))
    else {
        panic!("a later owner of a route that led here switches");
    };
    for i in 0..100 {
        used(cache.admit(route(&format!("other{i}"), 1, 1), now, Some(now + AGE)));
    }
    assert!(
        matches!(cache.get(&start.to.key, now), Lookup::Switching(_)),
        "the switching lane is still there"
    );
    cache.switched(start);
    assert!(hit(&cache, &route("moving", 1, 2).key, now).is_some());
}

#[test]
fn a_closed_incarnation_leaves_no_lane_but_a_later_one_stays() {
    let cache = RouteCache::new(AGE, MEMORY, 8);
    let now = Instant::now();
    let closed = route("closing", 1, 1);
    used(cache.admit(closed.clone(), now, Some(now + AGE)));
    cache.closed_here(&closed.key, &closed.fence);
    assert_eq!(cache.lanes_len(), 0, "the closed object's lane is gone");
    let later = route("closing", 2, 1);
    used(cache.admit(later.clone(), now, Some(now + AGE)));
    cache.closed_here(&closed.key, &closed.fence);
    assert!(
        hit(&cache, &later.key, now).is_some(),
        "the next incarnation's route stays"
    );
    for round in 0..1_000 {
        let r = route(&format!("c{round}"), 1, 1);
        used(cache.admit(r.clone(), now, Some(now + AGE)));
        cache.closed_here(&r.key, &r.fence);
    }
    let clock = cache.each_shard().next().map(|lanes| lanes.clock.len());
    assert!(
        clock.is_some_and(|len| len <= 2 + 64 + 1),
        "the clock is compacted: {clock:?}"
    );
}

#[test]
fn the_default_size_is_a_sixty_fourth_of_the_memory_at_a_kibibyte_a_route() {
    assert_eq!(default_route_cache_capacity(None), MIN_ROUTE_CACHE_CAPACITY);
    assert_eq!(
        default_route_cache_capacity(Some(1 << 30)),
        MIN_ROUTE_CACHE_CAPACITY
    );
    assert_eq!(default_route_cache_capacity(Some(24 << 30)), 393_216);
    assert_eq!(
        default_route_cache_capacity(Some(1 << 50)),
        16 * 1024 * 1024
    );
}

#[test]
fn a_route_binds_the_first_object_it_found_only_while_that_object_exists() {
    let binding: LocalBinding<String> = LocalBinding::default();
    assert!(binding.get().is_none(), "nothing found yet");
    let first = Arc::new("first".to_string());
    binding.bind(&first);
    binding.bind(&Arc::new("second".to_string()));
    assert_eq!(binding.get().as_deref().map(String::as_str), Some("first"));
    drop(first);
    assert!(
        binding.get().is_none(),
        "a gone object is not kept alive by its route"
    );
}

#[test]
fn every_shard_of_a_full_size_cache_hears_an_owner_leave() {
    let cache = cache();
    assert_eq!(cache.shards.len(), SHARDS);
    let now = Instant::now();
    let routes: Vec<_> = (0..200).map(|i| route(&format!("p{i}"), 1, 1)).collect();
    for r in &routes {
        used(cache.admit(r.clone(), now, Some(now + AGE)));
    }
    let used_shards = cache
        .each_shard()
        .filter(|lanes| !lanes.lanes.is_empty())
        .count();
    assert!(
        used_shards > SHARDS / 2,
        "keys spread over the shards ({used_shards})"
    );
    assert_eq!(cache.len(), 200);
    assert!(routes.iter().all(|r| hit(&cache, &r.key, now).is_some()));
    cache.owner_departed("n1");
    assert_eq!(cache.len(), 0);
    assert!(routes.iter().all(|r| hit(&cache, &r.key, now).is_none()));
    assert_eq!(cache.lanes_len(), 200, "the lanes are remembered");
}

#[test]
fn a_route_that_leads_here_is_not_counted_and_a_switch_from_it_always_sends_the_barrier() {
    let cache = cache();
    let now = Instant::now();
    let here = route("r", 1, 1);
    let RouteDecision::Use(first) = cache.admit(here.clone(), now, Some(now + AGE)) else {
        panic!("a new lane is used at once");
    };
    // Its first call finds the object on this node: the route is bound.
    here.local.bind_nothing();
    first.sending.replied();
    // The same authority read again keeps the binding (its one-ways were not counted).
    let again = route("r", 1, 1);
    assert_eq!(
        used(cache.admit(again.clone(), now, Some(now + AGE))),
        again
    );
    assert!(again.local.is_bound(), "a route that led here still does");
    // A replied request on it confirms nothing a switch could rely on ...
    let Lookup::Hit(request) = cache.get(&again.key, now) else {
        panic!("cached");
    };
    request.sending.replied();
    cache.stale(&again);
    // ... so a later owner is used only after the barrier down it.
    assert!(matches!(
        cache.admit(route("r", 1, 2), now, Some(now + AGE)),
        RouteDecision::Switch(_)
    ));
}

/// `route(id, g, o)` written again under `version`, with a renewed lease generation.
fn rewritten(id: &str, generation: u64, owner_generation: u64, version: &str) -> Arc<ReadyRoute> {
    let mut again = (*route(id, generation, owner_generation)).clone();
    again.fence.lease_generation = 5;
    again.version = StoreVersion(version.into());
    Arc::new(again)
}

#[test]
fn a_larger_store_version_of_the_same_generations_invalidates_and_a_smaller_one_does_not() {
    let cache = cache();
    let now = Instant::now();
    let cached = rewritten("r", 1, 1, "10");
    used(cache.admit(cached.clone(), now, Some(now + AGE)));
    // A read that started earlier (an older write) leaves the cached route.
    let earlier = rewritten("r", 1, 1, "9");
    let mut older = (*earlier).clone();
    older.fence.lease_generation = 3;
    assert_eq!(
        used(cache.admit(Arc::new(older), now, Some(now + AGE))),
        cached
    );
    // A later write of the same incarnation and owner takes over the entry.
    let mut later = (*rewritten("r", 1, 1, "11")).clone();
    later.fence.lease_generation = 6;
    let later = Arc::new(later);
    let admitted = cache.admit(later.clone(), now, Some(now + AGE));
    let now_used = match admitted {
        RouteDecision::Use(routed) => routed.route,
        RouteDecision::Switch(start) => start.to,
        _ => panic!("expected the later write to be used"),
    };
    assert_eq!(now_used, later);
}

#[test]
fn store_versions_compare_as_sequence_numbers_and_other_text_only_for_equality() {
    let v = |s: &str| StoreVersion(s.into());
    assert_eq!(v("11").is_later_than(&v("9")), Some(true));
    assert_eq!(v("9").is_later_than(&v("11")), Some(false));
    assert_eq!(v("abc").is_later_than(&v("9")), None);
}
