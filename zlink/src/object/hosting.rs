//! [`Hosting`]: what a node offers the objects it hosts beyond its Location Store — the
//! Relocation Store that keeps relayed results, large states and activation roots, and
//! whether it is draining (then it takes no new objects and none moves in).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::store::RelocationStore;
use crate::{Error, ErrorKind, Result};

/// The Relocation Store of one node, and its draining flag.
pub(crate) struct Hosting {
    /// Required with movable types and Instance Spots.
    relocation_store: Option<Arc<dyn RelocationStore>>,
    /// Relocating everything away: no new object is placed here, and none moves in.
    draining: AtomicBool,
}

impl Hosting {
    /// A node with `relocation_store` (if any), not draining.
    pub(crate) fn new(relocation_store: Option<Arc<dyn RelocationStore>>) -> Self {
        Hosting {
            relocation_store,
            draining: AtomicBool::new(false),
        }
    }

    /// The Relocation Store, if this node has one.
    pub(crate) fn relocation_store(&self) -> Option<&Arc<dyn RelocationStore>> {
        self.relocation_store.as_ref()
    }

    /// The Relocation Store, for `what` that cannot work without it.
    pub(crate) fn required_relocation_store(
        &self,
        what: &str,
    ) -> Result<&Arc<dyn RelocationStore>> {
        self.relocation_store.as_ref().ok_or_else(|| {
            Error::new(
                ErrorKind::NotConfigured,
                format!("this node has no Relocation Store to {what}"),
            )
        })
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_drains_only_between_begin_and_end() {
        let hosting = Hosting::new(None);
        assert!(!hosting.is_draining());
        hosting.begin_draining();
        assert!(hosting.is_draining());
        hosting.end_draining();
        assert!(!hosting.is_draining());
    }

    #[test]
    fn without_a_relocation_store_what_needs_one_is_not_configured() {
        let hosting = Hosting::new(None);
        assert!(hosting.relocation_store().is_none());
        let err = hosting
            .required_relocation_store("read the moved state from")
            .err()
            .expect("no store");
        assert!(err.is(ErrorKind::NotConfigured), "{err}");
        assert!(
            err.to_string().contains("read the moved state from"),
            "{err}"
        );
        let with = Hosting::new(Some(<dyn RelocationStore>::in_memory()));
        assert!(with
            .required_relocation_store("read the moved state from")
            .is_ok());
    }
}
