//! [`Relocations`]: everything one node keeps about moves — the objects leaving it (with
//! their Message Follow), the objects arriving, the permits bounding the moves it runs,
//! whether it is draining, the Relocation Store, the seam for routes bound outside an
//! Actor, MessageFollowDuration, and the faults a test injects.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{Arrivals, BoundRoutes, Departures, RelocationFaults, RelocationPermits};
use crate::object::lost_sends::LostSends;
use crate::object::ObjectSettings;
use crate::store::RelocationStore;
use crate::{Error, ErrorKind, Result};

/// The moves of one node.
pub(crate) struct Relocations {
    departures: Arc<Departures>,
    arrivals: Arrivals,
    permits: RelocationPermits,
    /// Relocating everything away: no new object is placed here, and none moves in.
    draining: AtomicBool,
    /// Where relayed requests' results and large states are kept (required with movable
    /// types).
    store: Option<Arc<dyn RelocationStore>>,
    bound_routes: Option<Arc<dyn BoundRoutes>>,
    /// MessageFollowDuration, in milliseconds (settable while the node runs).
    follow_millis: std::sync::atomic::AtomicU64,
    faults: RelocationFaults,
}

impl Relocations {
    /// The moves of a node started with `settings`; what its relays cannot deliver is
    /// counted in `lost`.
    pub(crate) fn new(
        settings: &ObjectSettings,
        lost: Arc<LostSends>,
        sessions: Arc<dyn BoundRoutes>,
    ) -> Self {
        Relocations {
            departures: Arc::new(Departures::new(lost)),
            arrivals: Arrivals::default(),
            permits: RelocationPermits::new(),
            draining: AtomicBool::new(false),
            store: settings.relocation_store.clone(),
            // A test's own seam stands in for the sessions'.
            bound_routes: Some(settings.bound_routes.clone().unwrap_or(sessions)),
            follow_millis: std::sync::atomic::AtomicU64::new(
                settings.message_follow_duration.as_millis() as u64,
            ),
            faults: settings.faults,
        }
    }

    /// Objects leaving this node: their holds, relays and Message Follow routes.
    pub(crate) fn departures(&self) -> &Arc<Departures> {
        &self.departures
    }

    /// Objects arriving on this node, until their owner change commits.
    pub(crate) fn arrivals(&self) -> &Arrivals {
        &self.arrivals
    }

    /// The bounds on the moves this node runs at once.
    pub(crate) fn permits(&self) -> &RelocationPermits {
        &self.permits
    }

    /// This node starts relocating everything away.
    pub(crate) fn begin_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// This node serves again (not everything could move).
    pub(crate) fn end_draining(&self) {
        self.draining.store(false, Ordering::SeqCst);
    }

    /// Whether this node is relocating everything away (it takes no new objects).
    pub(crate) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// The Relocation Store, if this node has one.
    pub(crate) fn store(&self) -> Option<&Arc<dyn RelocationStore>> {
        self.store.as_ref()
    }

    /// The Relocation Store, for `what` that cannot work without it.
    pub(crate) fn required_store(&self, what: &str) -> Result<&Arc<dyn RelocationStore>> {
        self.store.as_ref().ok_or_else(|| {
            Error::new(
                ErrorKind::NotConfigured,
                format!("this node has no Relocation Store to {what}"),
            )
        })
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

    /// The faults a test injects into this node's moves (none without `test-faults`).
    pub(crate) fn faults(&self) -> RelocationFaults {
        self.faults
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relocations(store: Option<Arc<dyn RelocationStore>>) -> Relocations {
        let settings = ObjectSettings {
            relocation_store: store,
            message_follow_duration: Duration::from_secs(7),
            ..ObjectSettings::default()
        };
        Relocations::new(
            &settings,
            Arc::new(LostSends::default()),
            crate::object::binding::session_bound_routes(std::sync::Weak::new()),
        )
    }

    #[test]
    fn a_node_drains_only_between_begin_and_end() {
        let moves = relocations(None);
        assert!(!moves.is_draining());
        moves.begin_draining();
        assert!(moves.is_draining());
        moves.end_draining();
        assert!(!moves.is_draining());
    }

    #[test]
    fn without_a_relocation_store_what_needs_one_is_not_configured() {
        let moves = relocations(None);
        assert!(moves.store().is_none());
        let err = moves
            .required_store("read the moved state from")
            .err()
            .expect("no store");
        assert!(err.is(ErrorKind::NotConfigured), "{err}");
        assert!(
            err.to_string().contains("read the moved state from"),
            "{err}"
        );
        let with = relocations(Some(<dyn RelocationStore>::in_memory()));
        assert!(with.required_store("read the moved state from").is_ok());
    }

    #[test]
    fn the_follow_duration_is_the_configured_one_and_no_move_is_under_way_at_start() {
        let moves = relocations(None);
        assert_eq!(moves.follow_duration(), Duration::from_secs(7));
        assert_eq!(moves.departures().relayed(), 0);
        // The sessions' bound routes are always there (they seal nothing without a
        // binding).
        assert!(moves.bound_routes().is_some());
    }
}
