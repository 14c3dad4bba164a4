//! Locks that outlive a panic: every lock in the runtime guards state that is consistent
//! between statements (no guard is held across an `.await` or a user callback that could
//! leave it half-written), so a lock poisoned by a panicking task is taken as it is rather
//! than spreading the panic to the node's other tasks.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Taking a `Mutex` whatever became of its last holder.
pub(crate) trait LockUnpoisoned<T> {
    /// The guard, poisoned or not.
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T>;
}

impl<T> LockUnpoisoned<T> for Mutex<T> {
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Reading or writing an `RwLock` whatever became of its last writer.
pub(crate) trait RwLockUnpoisoned<T> {
    /// The read guard, poisoned or not.
    fn read_unpoisoned(&self) -> RwLockReadGuard<'_, T>;
    /// The write guard, poisoned or not.
    fn write_unpoisoned(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T> RwLockUnpoisoned<T> for RwLock<T> {
    fn read_unpoisoned(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write_unpoisoned(&self) -> RwLockWriteGuard<'_, T> {
        self.write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex, RwLock};

    use super::{LockUnpoisoned, RwLockUnpoisoned};

    #[test]
    fn a_lock_poisoned_by_a_panicking_holder_is_still_taken_with_its_state() {
        let counter = Arc::new(Mutex::new(1));
        let table = Arc::new(RwLock::new(vec![1]));
        let (c, t) = (counter.clone(), table.clone());
        let panicked = std::thread::spawn(move || {
            let mut n = c.lock_unpoisoned();
            let _w = t.write_unpoisoned();
            *n = 2;
            panic!("a holder panics");
        })
        .join();
        assert!(panicked.is_err());
        assert!(counter.is_poisoned() && table.is_poisoned());
        assert_eq!(*counter.lock_unpoisoned(), 2);
        assert_eq!(*table.read_unpoisoned(), vec![1]);
        table.write_unpoisoned().push(2);
        assert_eq!(table.read_unpoisoned().len(), 2);
    }
}
