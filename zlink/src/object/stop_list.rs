//! [`StopList`]: every turn loop of one node, so that stopping the node reaches each one.
//! A turn loop that waits for work listens to its mailbox only (no stop token registered
//! per idle turn); the node's stop halts every loop on the list, which wakes it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use crate::sync::LockUnpoisoned;

/// Something a node's stop must reach: a running object's turn loop.
pub(crate) trait Halt: Send + Sync {
    /// Marks it stopping and wakes it if it waits.
    fn halt(&self);
}

#[derive(Default)]
struct Entries {
    loops: HashMap<u64, Weak<dyn Halt>>,
    next: u64,
    stopped: bool,
}

/// The loops one node runs, each until it ends: a loop's [`Listed`] takes its entry off
/// when the loop finishes, so a closed object leaves nothing here (not even the
/// allocation a weak reference keeps).
#[derive(Default)]
pub(crate) struct StopList {
    entries: Mutex<Entries>,
}

/// A loop's place on the list; dropping it takes the loop off.
pub(crate) struct Listed {
    list: Arc<StopList>,
    ticket: u64,
}

impl Drop for Listed {
    fn drop(&mut self) {
        self.list
            .entries
            .lock_unpoisoned()
            .loops
            .remove(&self.ticket);
    }
}

impl StopList {
    /// Adds a loop, for as long as the returned [`Listed`] lives. `None` once the node
    /// stopped: then the caller halts it itself.
    pub(crate) fn add(self: &Arc<Self>, running: Weak<dyn Halt>) -> Option<Listed> {
        let mut entries = self.entries.lock_unpoisoned();
        if entries.stopped {
            return None;
        }
        let ticket = entries.next;
        entries.next += 1;
        entries.loops.insert(ticket, running);
        Some(Listed {
            list: self.clone(),
            ticket,
        })
    }

    /// Halts every loop on the list, and refuses new ones from now on.
    pub(crate) fn stop_all(&self) {
        let loops = {
            let mut entries = self.entries.lock_unpoisoned();
            entries.stopped = true;
            std::mem::take(&mut entries.loops)
        };
        for running in loops.values().filter_map(Weak::upgrade) {
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
        let list = Arc::new(StopList::default());
        let (a, b) = (Arc::new(Flag::default()), Arc::new(Flag::default()));
        let listed = (list.add(weak(&a)), list.add(weak(&b)));
        assert!(listed.0.is_some() && listed.1.is_some());
        list.stop_all();
        assert!(a.0.load(Ordering::SeqCst) && b.0.load(Ordering::SeqCst));
        assert_eq!(list.len(), 0);
    }

    #[test]
    fn a_loop_added_after_the_stop_is_refused_so_it_halts_itself() {
        let list = Arc::new(StopList::default());
        list.stop_all();
        let late = Arc::new(Flag::default());
        assert!(list.add(weak(&late)).is_none());
        assert_eq!(list.len(), 0);
    }

    #[test]
    fn a_finished_loop_leaves_nothing_on_the_list_not_even_its_weak_reference() {
        let list = Arc::new(StopList::default());
        let kept = Arc::new(Flag::default());
        let _kept_listed = list.add(weak(&kept));
        for _ in 0..1000 {
            let gone = Arc::new(Flag::default());
            let listed = list.add(weak(&gone));
            assert_eq!(Arc::weak_count(&gone), 1);
            drop(listed);
            assert_eq!(Arc::weak_count(&gone), 0, "the allocation is free to go");
        }
        assert_eq!(list.len(), 1);
        list.stop_all();
        assert!(kept.0.load(Ordering::SeqCst));
    }
}
