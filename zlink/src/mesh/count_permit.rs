//! A permit counted against a per-connection cap (handler calls in flight, sends waiting
//! for queue room): taken only below the cap, given back when dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// One unit of a capped count.
pub(crate) struct CountPermit(Arc<AtomicUsize>);

impl CountPermit {
    /// A permit if fewer than `cap` are out.
    pub(crate) fn take(count: Arc<AtomicUsize>, cap: usize) -> Option<Self> {
        if count.fetch_add(1, Ordering::AcqRel) >= cap {
            count.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(CountPermit(count))
    }
}

impl Drop for CountPermit {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_stop_at_the_cap_and_come_back_when_dropped() {
        let count = Arc::new(AtomicUsize::new(0));
        let a = CountPermit::take(count.clone(), 2).expect("first");
        let _b = CountPermit::take(count.clone(), 2).expect("second");
        assert!(CountPermit::take(count.clone(), 2).is_none());
        assert_eq!(count.load(Ordering::Acquire), 2);
        drop(a);
        assert!(CountPermit::take(count.clone(), 2).is_some());
    }
}
