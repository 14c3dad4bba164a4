//! What the object layer of one node runs with: the types it serves, its Entry Spot, the
//! route cache and Message Follow durations, the Relocation Store and the bound-route
//! seam, and how many Spots it takes.

use std::sync::Arc;
use std::time::Duration;

use super::bound_routes::BoundRoutes;
use super::entry_hooks::EntryHooksFactory;
use super::relocation_faults::RelocationFaults;
use super::{ActorType, SpotId, SpotType};
use crate::store::RelocationStore;

/// The validated settings of one node's object layer.
#[derive(Clone, Default)]
pub(crate) struct ObjectSettings {
    /// The Spot types this node serves (the Object Server role).
    pub(crate) spot_types: Vec<SpotType>,
    pub(crate) actor_types: Vec<ActorType>,
    /// This node lifecycle's Entry Spot, when it serves Actor types.
    pub(crate) entry_spot: Option<SpotId>,
    /// Makes the application's Entry Spot hooks.
    pub(crate) entry_hooks: Option<Arc<EntryHooksFactory>>,
    /// RouteCacheMaxAge: how long a confirmed route is reused (0 disables).
    pub(crate) route_cache_max_age: Duration,
    /// The most routes the node's cache keeps (0: the smallest default size).
    pub(crate) route_cache_capacity: usize,
    /// MessageFollowDuration: how long a moved object's old owner relays what still
    /// arrives on the old route (0: not at all).
    pub(crate) message_follow_duration: Duration,
    /// The Relocation Store: terminal results of requests relayed during moves.
    pub(crate) relocation_store: Option<Arc<dyn RelocationStore>>,
    /// Whoever holds routes bound to this node's Actors outside them (seed 000 §3.3).
    pub(crate) bound_routes: Option<Arc<dyn BoundRoutes>>,
    /// The most Spots the node runs (0: no limit).
    pub(crate) max_spots: u32,
    /// InstanceSpotIdleTimeout: how long an Instance Spot may stay idle before it is
    /// evicted (0: never).
    pub(crate) instance_idle_timeout: Duration,
    /// Faults tests inject into moves; nothing outside the `test-faults` feature.
    pub(crate) faults: RelocationFaults,
}

/// The gap seed 000 §2.2 keeps between RouteCacheMaxAge and MessageFollowDuration, so a
/// cached route expires before the detour after a move closes.
pub(crate) const CACHE_FOLLOW_GAP: Duration = Duration::from_secs(5);

/// Why `max_age` and `follow` may not run together, if they may not: with both on, the
/// cache must expire at least [`CACHE_FOLLOW_GAP`] before the follow route does.
pub(crate) fn cache_follow_violation(max_age: Duration, follow: Duration) -> Option<String> {
    (!max_age.is_zero() && !follow.is_zero() && max_age + CACHE_FOLLOW_GAP > follow).then(|| {
        format!(
            "RouteCacheMaxAge must be at most MessageFollowDuration - 5 s ({:?}), got {:?}",
            follow.saturating_sub(CACHE_FOLLOW_GAP),
            max_age
        )
    })
}
