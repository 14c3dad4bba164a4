//! The turn loop's wakeup.

use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

use futures::task::AtomicWaker;

/// The turn loop's wakeup: one waiter (the loop), and a notice given while it does not
/// wait is kept for its next wait, so a job that arrives between its look and its wait
/// is not missed. (A `Notify` does the same with a lock around its waiter list.)
#[derive(Default)]
pub(super) struct Wakeup {
    pub(super) noticed: AtomicBool,
    waker: AtomicWaker,
}

impl Wakeup {
    pub(super) fn notify(&self) {
        self.noticed.store(true, Ordering::Release);
        self.waker.wake();
    }

    /// Drops the waiter's waker: a task that stopped waiting is not kept alive by it
    /// (a waker holds its task's memory).
    pub(super) fn forget_waiter(&self) {
        drop(self.waker.take());
    }

    pub(super) async fn wait(&self) {
        std::future::poll_fn(|cx| {
            if self.noticed.swap(false, Ordering::AcqRel) {
                return Poll::Ready(());
            }
            self.waker.register(cx.waker());
            // A notice given between the first look and the registration.
            if self.noticed.swap(false, Ordering::AcqRel) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await
    }
}
