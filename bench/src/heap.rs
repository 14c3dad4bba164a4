//! The bytes this process has allocated and not freed, counted by a global allocator
//! wrapper that counts only once [`start_counting`] was called (in `scale`'s child
//! processes), so no other benchmark pays for it beyond one predictable branch.
//!
//! RSS alone cannot say whether freed memory is gone or only not given back: a heap
//! holding a few live bytes on each page keeps every page resident.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};

/// The system allocator, counting when asked.
pub struct CountingAllocator;

static COUNTING: AtomicBool = AtomicBool::new(false);

/// Counters on cache lines of their own, one per thread slot, so counting threads do not
/// contend on one line.
#[repr(align(128))]
struct Slot(AtomicIsize);

const SLOTS: usize = 16;
static IN_USE: [Slot; SLOTS] = [const { Slot(AtomicIsize::new(0)) }; SLOTS];
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static MY_SLOT: usize = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % SLOTS;
}

fn count(delta: isize) {
    if COUNTING.load(Ordering::Relaxed) {
        let slot = MY_SLOT.try_with(|slot| *slot).unwrap_or(0);
        IN_USE[slot].0.fetch_add(delta, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded to the system allocator unchanged; the wrapper only
// adds to counters.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        System.realloc(ptr, layout, new_size)
    }
}

/// Counts from now on.
pub fn start_counting() {
    COUNTING.store(true, Ordering::Relaxed);
}

/// Bytes allocated and not freed since counting started (negative when more was freed
/// than allocated since).
pub fn in_use() -> isize {
    IN_USE
        .iter()
        .map(|slot| slot.0.load(Ordering::Relaxed))
        .sum()
}
