//! [`Relocations`]: what one node keeps about moves beyond its departures (which the
//! object core holds) — the objects arriving, the permits bounding the moves it runs, the
//! seam for routes bound outside an Actor, and MessageFollowDuration.

use std::sync::Arc;
use std::time::Duration;

use super::{Arrivals, BoundRoutes, RelocationPermits};
use crate::object::ObjectSettings;

/// The moves of one node.
pub(crate) struct Relocations {
    arrivals: Arrivals,
    permits: RelocationPermits,
    bound_routes: Option<Arc<dyn BoundRoutes>>,
    /// MessageFollowDuration, in milliseconds (settable while the node runs).
    follow_millis: std::sync::atomic::AtomicU64,
}

impl Relocations {
    /// The moves of a node started with `settings`; `sessions` are told when a bound
    /// Actor moves.
    pub(crate) fn new(settings: &ObjectSettings, sessions: Arc<dyn BoundRoutes>) -> Self {
        Relocations {
            arrivals: Arrivals::default(),
            permits: RelocationPermits::new(),
            // A test's own seam stands in for the sessions'.
            bound_routes: Some(settings.bound_routes.clone().unwrap_or(sessions)),
            follow_millis: std::sync::atomic::AtomicU64::new(
                settings.message_follow_duration.as_millis() as u64,
            ),
        }
    }

    /// Objects arriving on this node, until their owner change commits.
    pub(crate) fn arrivals(&self) -> &Arrivals {
        &self.arrivals
    }

    /// The bounds on the moves this node runs at once.
    pub(crate) fn permits(&self) -> &RelocationPermits {
        &self.permits
    }

    /// What is told when an Actor with routes bound to it outside moves.
    pub(crate) fn bound_routes(&self) -> Option<&Arc<dyn BoundRoutes>> {
        self.bound_routes.as_ref()
    }

    /// MessageFollowDuration: how long a moved object's old route is followed.
    pub(crate) fn follow_duration(&self) -> Duration {
        Duration::from_millis(
            self.follow_millis
                .load(std::sync::atomic::Ordering::Acquire),
        )
    }

    /// Changes MessageFollowDuration for moves that start from now on.
    pub(crate) fn set_follow_duration(&self, duration: Duration) {
        self.follow_millis.store(
            duration.as_millis() as u64,
            std::sync::atomic::Ordering::Release,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relocations() -> Relocations {
        let settings = ObjectSettings {
            message_follow_duration: Duration::from_secs(7),
            ..ObjectSettings::default()
        };
        Relocations::new(
            &settings,
            crate::object::binding::session_bound_routes(std::sync::Weak::new()),
        )
    }

    #[test]
    fn the_follow_duration_is_the_configured_one_and_bound_routes_are_always_there() {
        let moves = relocations();
        assert_eq!(moves.follow_duration(), Duration::from_secs(7));
        // The sessions' bound routes are always there (they seal nothing without a
        // binding).
        assert!(moves.bound_routes().is_some());
    }
}
