//! [`StopList`]: every turn loop of one node, so that stopping the node reaches each one.
//! A turn loop that waits for work listens to its mailbox only (no stop token registered
//! per idle turn); the node's stop halts every loop on the list, which wakes it.

use std::sync::{Mutex, Weak};

use crate::sync::LockUnpoisoned;

/// Something a node's stop must reach: a running object's turn loop.
pub(crate) trait Halt: Send + Sync {
    /// Marks it stopping and wakes it if it waits.
    fn halt(&self);
}

#[derive(Default)]
struct Entries {
    loops: Vec<Weak<dyn Halt>>,
    /// Length after the last prune: the list is pruned when it doubles.
    pruned: usize,
    stopped: bool,
}

/// The loops one node runs (weakly: a finished object leaves a dead entry, pruned later).
#[derive(Default)]
pub(crate) struct StopList {
    entries: Mutex<Entries>,
}

impl StopList {
    /// Adds a loop. `false` once the node stopped: then the caller halts it itself.
    pub(crate) fn add(&self, running: Weak<dyn Halt>) -> bool {
        let mut entries = self.entries.lock_unpoisoned();
        if entries.stopped {
            return false;
        }
        if entries.loops.len() >= (2 * entries.pruned).max(64) {
            entries.loops.retain(|w| w.strong_count() > 0);
            entries.pruned = entries.loops.len();
        }
        entries.loops.push(running);
        true
    }

    /// Halts every loop on the list, and refuses new ones from now on.
    pub(crate) fn stop_all(&self) {
        let loops = {
            let mut entries = self.entries.lock_unpoisoned();
            entries.stopped = true;
            std::mem::take(&mut entries.loops)
        };
        for running in loops.iter().filter_map(Weak::upgrade) {
            running.halt();
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock_unpoisoned().loops.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[derive(Default)]
    struct Flag(AtomicBool);

    impl Halt for Flag {
        fn halt(&self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    fn weak(flag: &Arc<Flag>) -> Weak<dyn Halt> {
        let flag: Arc<dyn Halt> = flag.clone();
        Arc::downgrade(&flag)
    }

    #[test]
    fn stopping_halts_every_live_loop_once() {
        let list = StopList::default();
        let (a, b) = (Arc::new(Flag::default()), Arc::new(Flag::default()));
        assert!(list.add(weak(&a)));
        assert!(list.add(weak(&b)));
        list.stop_all();
        assert!(a.0.load(Ordering::SeqCst) && b.0.load(Ordering::SeqCst));
        assert_eq!(list.len(), 0);
    }

    #[test]
    fn a_loop_added_after_the_stop_is_refused_so_it_halts_itself() {
        let list = StopList::default();
        list.stop_all();
        let late = Arc::new(Flag::default());
        assert!(!list.add(weak(&late)));
        assert_eq!(list.len(), 0);
    }

    #[test]
    fn finished_loops_are_pruned_as_the_list_grows() {
        let list = StopList::default();
        for _ in 0..1000 {
            let gone = Arc::new(Flag::default());
            assert!(list.add(weak(&gone)));
        }
        let kept = Arc::new(Flag::default());
        assert!(list.add(weak(&kept)));
        assert!(list.len() <= 64, "dead entries pruned: {}", list.len());
        list.stop_all();
        assert!(kept.0.load(Ordering::SeqCst));
    }
}
