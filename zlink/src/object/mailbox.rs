//! A Spot's or Actor's mailbox: two bounded lanes and the order a turn takes from them.
//!
//! - The **lifecycle lane** holds framework control (join, leave, closing, relocation
//!   steps); the **application lane** holds business messages and timer ticks (digest
//!   §3.3). They are never mixed, so a backlog can be captured and moved on its own.
//! - Each lane is bounded by count **and** bytes (payload + metadata + a fixed cost per
//!   job, so an empty payload still counts). Both are reserved at admission and released
//!   when the job's handler reaches its terminal completion, not when it is dequeued.
//! - The lifecycle lane goes first, under a continuous-run cap: after
//!   [`LIFECYCLE_RUN_CAP`] lifecycle turns in a row, one application turn runs if one is
//!   waiting, so application work always progresses.
//! - A mailbox can be **sealed** at a turn boundary (no new admission; queued work can
//!   be taken out whole, in order) and **closed** (nothing more runs).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use crate::sync::LockUnpoisoned;
use futures::task::AtomicWaker;
use tokio::sync::Notify;

/// The fixed cost of one job, in bytes, on top of its payload and metadata.
pub(crate) const JOB_OVERHEAD_BYTES: usize = 64;
/// Lifecycle turns in a row before a waiting application turn gets its go.
pub(crate) const LIFECYCLE_RUN_CAP: u32 = 16;

/// The bounds of one lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LaneLimits {
    pub(crate) jobs: usize,
    pub(crate) bytes: usize,
}

/// The default application lane: 4096 jobs, 64 MiB.
pub(crate) const APPLICATION_LANE: LaneLimits = LaneLimits {
    jobs: 4096,
    bytes: 64 * 1024 * 1024,
};
/// The default lifecycle lane: 256 jobs, 4 MiB.
pub(crate) const LIFECYCLE_LANE: LaneLimits = LaneLimits {
    jobs: 256,
    bytes: 4 * 1024 * 1024,
};

/// Which lane a job goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    Lifecycle,
    Application,
}

/// Why a job was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The lane is at its count or byte bound.
    Full(Lane),
    /// The mailbox is sealed (a move or a close is under way).
    Sealed,
    /// The mailbox is closed.
    Closed,
}

#[derive(Debug, Default, Clone, Copy)]
struct Usage {
    jobs: usize,
    bytes: usize,
}

struct LaneState<J> {
    limits: LaneLimits,
    queued: VecDeque<(J, usize)>,
    /// Queued plus running-but-not-completed.
    used: Usage,
}

impl<J> LaneState<J> {
    fn new(limits: LaneLimits) -> Self {
        LaneState {
            limits,
            queued: VecDeque::new(),
            used: Usage::default(),
        }
    }

    fn fits(&self, bytes: usize) -> bool {
        self.used.jobs < self.limits.jobs
            && self
                .used
                .bytes
                .checked_add(bytes)
                .is_some_and(|b| b <= self.limits.bytes)
    }
}

struct State<J> {
    lifecycle: LaneState<J>,
    application: LaneState<J>,
    lifecycle_run: u32,
    application_owed: bool,
    sealed: bool,
    closed: bool,
    /// Senders waiting for room (only they are woken when a job completes).
    room_waiters: usize,
    /// The turn loop found nothing to run and waits (only then does an arrival wake it).
    loop_waits: bool,
}

impl<J> State<J> {
    fn lane(&mut self, lane: Lane) -> &mut LaneState<J> {
        match lane {
            Lane::Lifecycle => &mut self.lifecycle,
            Lane::Application => &mut self.application,
        }
    }

    /// The lane the next turn takes from, if any job waits.
    fn pick(&mut self) -> Option<Lane> {
        let lifecycle = !self.lifecycle.queued.is_empty();
        let application = !self.application.queued.is_empty();
        if !lifecycle {
            self.lifecycle_run = 0;
        }
        match (lifecycle, application) {
            (false, false) => None,
            (false, true) => {
                self.application_owed = false;
                Some(Lane::Application)
            }
            (true, true) if self.application_owed => {
                self.application_owed = false;
                Some(Lane::Application)
            }
            (true, _) => {
                self.lifecycle_run += 1;
                if self.lifecycle_run >= LIFECYCLE_RUN_CAP {
                    self.lifecycle_run = 0;
                    self.application_owed = true;
                }
                Some(Lane::Lifecycle)
            }
        }
    }
}

/// One object's mailbox. Jobs of type `J` are opaque to it.
pub(crate) struct Mailbox<J> {
    state: Mutex<State<J>>,
    /// Wakes the turn loop when a job arrives or the mailbox closes.
    arrived: Arrival,
    /// Wakes senders waiting for room.
    released: Notify,
}

/// A job taken for a turn. Its lane's count and bytes are released when this is dropped,
/// after the handler's terminal completion.
pub(crate) struct Turn<J> {
    job: Option<J>,
    pub(crate) lane: Lane,
    bytes: usize,
    mailbox: Arc<Mailbox<J>>,
    /// Its room was given back already (by the next [`Mailbox::try_next_after`]).
    released: bool,
}

impl<J> Turn<J> {
    /// Takes the job out to run it; the turn keeps the lane's room until it is dropped.
    pub(crate) fn take_job(&mut self) -> Option<J> {
        self.job.take()
    }

    #[cfg(test)]
    fn job(&self) -> &J {
        self.job.as_ref().expect("not taken in tests")
    }
}

/// The turn loop's wakeup: one waiter (the loop), and a notice given while it does not
/// wait is kept for its next wait, so a job that arrives between its look and its wait
/// is not missed. (A `Notify` does the same with a lock around its waiter list.)
#[derive(Default)]
struct Arrival {
    noticed: AtomicBool,
    waker: AtomicWaker,
}

impl Arrival {
    fn notify(&self) {
        self.noticed.store(true, Ordering::Release);
        self.waker.wake();
    }

    async fn wait(&self) {
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

impl<J> Drop for Turn<J> {
    fn drop(&mut self) {
        if !self.released {
            self.mailbox.release(self.lane, self.bytes);
        }
    }
}

impl<J> Mailbox<J> {
    pub(crate) fn new(lifecycle: LaneLimits, application: LaneLimits) -> Arc<Self> {
        Arc::new(Mailbox {
            state: Mutex::new(State {
                lifecycle: LaneState::new(lifecycle),
                application: LaneState::new(application),
                lifecycle_run: 0,
                application_owed: false,
                sealed: false,
                closed: false,
                room_waiters: 0,
                loop_waits: false,
            }),
            arrived: Arrival::default(),
            released: Notify::new(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State<J>> {
        self.state.lock_unpoisoned()
    }

    /// Admits `job` to `lane` if both bounds leave room for `payload_bytes` (plus the
    /// per-job cost); never waits. A full lane refuses the whole job: nothing is taken.
    pub(crate) fn admit(
        &self,
        lane: Lane,
        job: J,
        payload_bytes: usize,
    ) -> Result<(), (Refused, J)> {
        let bytes = payload_bytes.saturating_add(JOB_OVERHEAD_BYTES);
        let mut state = self.state();
        if state.closed {
            return Err((Refused::Closed, job));
        }
        if state.sealed && lane == Lane::Application {
            return Err((Refused::Sealed, job));
        }
        let target = state.lane(lane);
        if !target.fits(bytes) {
            return Err((Refused::Full(lane), job));
        }
        target.used.jobs += 1;
        target.used.bytes += bytes;
        target.queued.push_back((job, bytes));
        self.wake_loop(state);
        Ok(())
    }

    /// Admits a framework notice to `lane` even past its bounds (it still counts): a
    /// notice stands for one object event, so their number is bounded by the objects,
    /// and losing one would lose a callback. Refused only when closed.
    pub(crate) fn admit_notice(&self, lane: Lane, job: J) -> Result<(), (Refused, J)> {
        let mut state = self.state();
        if state.closed {
            return Err((Refused::Closed, job));
        }
        let target = state.lane(lane);
        target.used.jobs += 1;
        target.used.bytes += JOB_OVERHEAD_BYTES;
        target.queued.push_back((job, JOB_OVERHEAD_BYTES));
        self.wake_loop(state);
        Ok(())
    }

    /// Wakes the turn loop if it waits for work; a busy loop finds the job on its own.
    fn wake_loop(&self, mut state: std::sync::MutexGuard<'_, State<J>>) {
        let waits = std::mem::take(&mut state.loop_waits);
        drop(state);
        if waits {
            self.arrived.notify();
        }
    }

    /// Admits `job`, waiting for room until `deadline` (a send's send timeout).
    pub(crate) async fn admit_by(
        &self,
        lane: Lane,
        mut job: J,
        payload_bytes: usize,
        deadline: tokio::time::Instant,
    ) -> Result<(), (Refused, J)> {
        // Room now: no wait is registered at all.
        match self.admit(lane, job, payload_bytes) {
            Err((Refused::Full(_), back)) => job = back,
            other => return other,
        }
        // Counted while waiting, however the wait ends (a dropped future included).
        struct Waiting<'a, J>(&'a Mailbox<J>);
        impl<J> Drop for Waiting<'_, J> {
            fn drop(&mut self) {
                self.0.state().room_waiters -= 1;
            }
        }
        self.state().room_waiters += 1;
        let _waiting = Waiting(self);
        loop {
            let room = self.released.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            match self.admit(lane, job, payload_bytes) {
                Err((Refused::Full(l), back)) => {
                    job = back;
                    if tokio::time::timeout_at(deadline, room).await.is_err() {
                        return Err((Refused::Full(l), job));
                    }
                }
                other => return other,
            }
        }
    }

    fn release(&self, lane: Lane, bytes: usize) {
        let mut state = self.state();
        Self::give_back(&mut state, lane, bytes);
        self.after_release(state);
    }

    fn give_back(state: &mut State<J>, lane: Lane, bytes: usize) {
        let used = &mut state.lane(lane).used;
        used.jobs = used.jobs.saturating_sub(1);
        used.bytes = used.bytes.saturating_sub(bytes);
    }

    /// Only a sender waiting for room needs to hear that some was given back.
    fn after_release(&self, state: std::sync::MutexGuard<'_, State<J>>) {
        let waiting = state.room_waiters > 0;
        drop(state);
        if waiting {
            self.released.notify_waiters();
        }
    }

    /// The job to run now, if one is queued; `Err` once the mailbox is closed.
    /// (Finding none marks the loop as waiting: the next arrival wakes it.)
    #[cfg(test)]
    pub(crate) fn try_next(self: &Arc<Self>) -> Result<Option<Turn<J>>, ()> {
        self.try_next_after(None)
    }

    /// [`try_next`](Self::try_next), giving back the room of the turn that just ended
    /// under the same lock.
    pub(crate) fn try_next_after(
        self: &Arc<Self>,
        finished: Option<Turn<J>>,
    ) -> Result<Option<Turn<J>>, ()> {
        let mut finished = finished;
        let mut state = self.state();
        let mut gave_back = false;
        if let Some(turn) = finished.as_mut() {
            if !turn.released && Arc::ptr_eq(&turn.mailbox, self) {
                Self::give_back(&mut state, turn.lane, turn.bytes);
                turn.released = true;
                gave_back = true;
            }
        }
        let next = self.next_locked(&mut state);
        if gave_back {
            self.after_release(state);
        } else {
            drop(state);
        }
        // Dropped unlocked: a turn of another mailbox gives its room back on its own.
        drop(finished);
        next
    }

    fn next_locked(self: &Arc<Self>, state: &mut State<J>) -> Result<Option<Turn<J>>, ()> {
        if state.closed {
            return Err(());
        }
        let Some(lane) = state.pick() else {
            state.loop_waits = true;
            return Ok(None);
        };
        Ok(state
            .lane(lane)
            .queued
            .pop_front()
            .map(|(job, bytes)| Turn {
                job: Some(job),
                lane,
                bytes,
                mailbox: self.clone(),
                released: false,
            }))
    }

    /// Wakes the turn loop (or leaves it a permit): a stop for it to notice.
    pub(crate) fn wake(&self) {
        self.arrived.notify();
    }

    /// Waits until a job arrives, the mailbox closes or [`wake`](Self::wake) is called,
    /// after a [`try_next`](Self::try_next) that found nothing (it may return with
    /// nothing new: the caller looks again).
    pub(crate) async fn arrival(&self) {
        self.arrived.wait().await;
    }

    /// The next job to run, lifecycle first under the run cap; waits for one. `None` once
    /// the mailbox is closed. (The turn loop does the same, looking at its stop flag
    /// between the look and the wait.)
    #[cfg(test)]
    pub(crate) async fn next_turn(self: &Arc<Self>) -> Option<Turn<J>> {
        loop {
            // A queued job is taken without arming a wakeup. An empty look marks the loop
            // as waiting, so the next arrival calls `notify_one`, whose permit covers a
            // job that arrives between the look and the wait.
            match self.try_next() {
                Err(()) => return None,
                Ok(Some(turn)) => return Some(turn),
                Ok(None) => self.arrival().await,
            }
        }
    }

    /// Stops admitting application work (lifecycle work still enters, to finish the move
    /// or the close). Called at a turn boundary.
    pub(crate) fn seal(&self) {
        self.state().sealed = true;
    }

    /// Takes every queued application job out, oldest first, releasing their room (a
    /// sealed mailbox's backlog, to move with its object).
    pub(crate) fn take_application_backlog(&self) -> Vec<(J, usize)> {
        let mut state = self.state();
        let lane = &mut state.application;
        let jobs: Vec<(J, usize)> = lane.queued.drain(..).collect();
        for (_, bytes) in &jobs {
            lane.used.jobs = lane.used.jobs.saturating_sub(1);
            lane.used.bytes = lane.used.bytes.saturating_sub(*bytes);
        }
        drop(state);
        self.released.notify_waiters();
        jobs.into_iter()
            .map(|(job, bytes)| (job, bytes - JOB_OVERHEAD_BYTES.min(bytes)))
            .collect()
    }

    /// Opens a sealed mailbox again (a move cancelled before its boundary): `front` (the
    /// backlog taken out) goes back ahead of what is queued, `back` (what arrived while
    /// sealed) after it, each in its order and counted again, past the bounds (it was
    /// admitted once already).
    pub(crate) fn put_back(&self, front: Vec<(J, usize)>, back: Vec<(J, usize)>) {
        let mut state = self.state();
        let lane = &mut state.application;
        for (job, payload) in front.into_iter().rev() {
            let bytes = payload.saturating_add(JOB_OVERHEAD_BYTES);
            lane.used.jobs += 1;
            lane.used.bytes += bytes;
            lane.queued.push_front((job, bytes));
        }
        for (job, payload) in back {
            let bytes = payload.saturating_add(JOB_OVERHEAD_BYTES);
            lane.used.jobs += 1;
            lane.used.bytes += bytes;
            lane.queued.push_back((job, bytes));
        }
        state.sealed = false;
        drop(state);
        self.arrived.notify();
    }

    /// Ends the mailbox: nothing more is admitted or run; queued jobs are returned so
    /// their callers can be completed (each exactly once).
    pub(crate) fn close(&self) -> Vec<J> {
        let mut state = self.state();
        state.closed = true;
        let mut left: Vec<J> = state.lifecycle.queued.drain(..).map(|(j, _)| j).collect();
        left.extend(state.application.queued.drain(..).map(|(j, _)| j));
        drop(state);
        // The turn loop may be waiting (a permit wakes it if it is not yet).
        self.arrived.notify();
        self.released.notify_waiters();
        left
    }

    /// Jobs and bytes a lane holds (queued and running).
    #[cfg(test)]
    fn used(&self, lane: Lane) -> (usize, usize) {
        let mut state = self.state();
        let used = state.lane(lane).used;
        (used.jobs, used.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const SMALL: LaneLimits = LaneLimits {
        jobs: 2,
        bytes: 1000,
    };

    fn mailbox() -> Arc<Mailbox<&'static str>> {
        Mailbox::new(SMALL, SMALL)
    }

    #[test]
    fn the_default_lanes_are_4096_jobs_64_mib_and_256_jobs_4_mib() {
        assert_eq!(
            (APPLICATION_LANE.jobs, APPLICATION_LANE.bytes),
            (4096, 64 << 20)
        );
        assert_eq!((LIFECYCLE_LANE.jobs, LIFECYCLE_LANE.bytes), (256, 4 << 20));
    }

    #[tokio::test]
    async fn a_lane_is_bounded_by_count_and_by_bytes() {
        let m = mailbox();
        m.admit(Lane::Application, "a", 0).unwrap();
        m.admit(Lane::Application, "b", 0).unwrap();
        assert_eq!(
            m.admit(Lane::Application, "c", 0),
            Err((Refused::Full(Lane::Application), "c"))
        );
        let big = Mailbox::new(SMALL, SMALL);
        assert_eq!(
            big.admit(Lane::Application, "x", 1000 - JOB_OVERHEAD_BYTES + 1),
            Err((Refused::Full(Lane::Application), "x"))
        );
        big.admit(Lane::Application, "y", 1000 - JOB_OVERHEAD_BYTES)
            .unwrap();
        assert_eq!(
            big.admit(Lane::Application, "z", usize::MAX),
            Err((Refused::Full(Lane::Application), "z")),
            "no overflow"
        );
        // The lifecycle lane has its own room.
        m.admit(Lane::Lifecycle, "l", 0).unwrap();
    }

    #[tokio::test]
    async fn room_is_released_at_completion_not_at_dequeue() {
        let m = mailbox();
        m.admit(Lane::Application, "a", 10).unwrap();
        m.admit(Lane::Application, "b", 10).unwrap();
        let turn = m.next_turn().await.unwrap();
        assert_eq!(*turn.job(), "a");
        assert!(
            m.admit(Lane::Application, "c", 0).is_err(),
            "a is still running"
        );
        assert_eq!(
            m.used(Lane::Application),
            (2, 2 * (10 + JOB_OVERHEAD_BYTES))
        );
        drop(turn);
        m.admit(Lane::Application, "c", 0).unwrap();
    }

    #[tokio::test]
    async fn lifecycle_goes_first_but_application_work_is_never_starved() {
        let m: Arc<Mailbox<u32>> = Mailbox::new(
            LaneLimits {
                jobs: 100,
                bytes: 1 << 20,
            },
            SMALL,
        );
        m.admit(Lane::Application, 1000, 0).unwrap();
        for i in 0..40 {
            m.admit(Lane::Lifecycle, i, 0).unwrap();
        }
        let mut order = Vec::new();
        for _ in 0..41 {
            order.push(*m.next_turn().await.unwrap().job());
        }
        let app_at = order.iter().position(|j| *j == 1000).unwrap();
        assert_eq!(app_at, LIFECYCLE_RUN_CAP as usize, "{order:?}");
        let lifecycle: Vec<u32> = order.into_iter().filter(|j| *j != 1000).collect();
        assert_eq!(lifecycle, (0..40).collect::<Vec<_>>(), "FIFO within a lane");
    }

    #[tokio::test]
    async fn a_waiting_send_gets_in_when_room_frees_or_gives_up_at_its_deadline() {
        let m = mailbox();
        m.admit(Lane::Application, "a", 0).unwrap();
        m.admit(Lane::Application, "b", 0).unwrap();
        let soon = tokio::time::Instant::now() + Duration::from_millis(30);
        assert_eq!(
            m.admit_by(Lane::Application, "late", 0, soon).await,
            Err((Refused::Full(Lane::Application), "late"))
        );
        let waiter = {
            let m = m.clone();
            tokio::spawn(async move {
                let later = tokio::time::Instant::now() + Duration::from_secs(5);
                m.admit_by(Lane::Application, "c", 0, later).await
            })
        };
        let turn = m.next_turn().await.unwrap();
        drop(turn);
        assert_eq!(waiter.await.unwrap(), Ok(()));
    }

    #[tokio::test]
    async fn a_sealed_mailbox_keeps_its_backlog_in_order_for_the_move() {
        let m = mailbox();
        m.admit(Lane::Application, "a", 0).unwrap();
        m.admit(Lane::Application, "b", 0).unwrap();
        m.seal();
        assert_eq!(
            m.admit(Lane::Application, "c", 0),
            Err((Refused::Sealed, "c"))
        );
        m.admit(Lane::Lifecycle, "seal-step", 0).unwrap();
        let backlog = m.take_application_backlog();
        assert_eq!(backlog, [("a", 0), ("b", 0)]);
        assert_eq!(m.used(Lane::Application), (0, 0));
        // A cancelled move puts the backlog back ahead, and what arrived meanwhile after.
        m.put_back(backlog, vec![("c", 0)]);
        assert_eq!(m.used(Lane::Application).0, 3, "counted again");
        let mut order = Vec::new();
        while let Ok(Some(mut turn)) = m.try_next() {
            if turn.lane == Lane::Application {
                order.push(turn.take_job().unwrap());
            }
        }
        assert_eq!(order, ["a", "b", "c"]);
    }

    #[tokio::test]
    async fn only_a_loop_that_found_nothing_is_woken_and_a_wake_reaches_it() {
        let m = mailbox();
        let pending = |m: &Arc<Mailbox<&'static str>>| {
            let m = m.clone();
            async move {
                tokio::time::timeout(Duration::from_millis(50), m.arrival())
                    .await
                    .is_err()
            }
        };
        // A busy loop (its last look found a job) is not notified of the next arrival...
        m.admit(Lane::Application, "a", 1).unwrap();
        let first = m.try_next().unwrap().unwrap();
        m.admit(Lane::Application, "b", 1).unwrap();
        drop(first);
        let second = m.try_next().unwrap().unwrap();
        assert_eq!(*second.job(), "b");
        drop(second);
        // ...so once it finds nothing, no stale permit ends its wait early.
        assert!(m.try_next().unwrap().is_none());
        assert!(pending(&m).await, "no arrival, no wake");
        // An arrival after an empty look wakes it, and so does a stop's wake.
        m.admit(Lane::Application, "c", 1).unwrap();
        assert!(!pending(&m).await, "the arrival woke the waiting loop");
        assert_eq!(*m.try_next().unwrap().unwrap().job(), "c");
        assert!(m.try_next().unwrap().is_none());
        m.wake();
        assert!(!pending(&m).await, "a stop's wake reaches the waiting loop");
    }

    #[test]
    fn the_next_turn_gives_back_the_room_of_the_one_that_ended() {
        let one = LaneLimits {
            jobs: 1,
            bytes: 1024,
        };
        let m = Mailbox::new(
            LaneLimits {
                jobs: 8,
                bytes: 1024,
            },
            one,
        );
        m.admit(Lane::Application, "a", 10).unwrap();
        let first = m.try_next_after(None).unwrap().unwrap();
        // One job fits: the running turn still holds the room.
        assert!(matches!(
            m.admit(Lane::Application, "b", 10),
            Err((Refused::Full(Lane::Application), "b"))
        ));
        // Looking for the next job ends the first turn: its room is free again.
        assert!(m.try_next_after(Some(first)).unwrap().is_none());
        m.admit(Lane::Application, "b", 10).unwrap();
        let second = m.try_next_after(None).unwrap().unwrap();
        assert_eq!(*second.job(), "b");
        // A turn dropped on its own still gives its room back.
        drop(second);
        m.admit(Lane::Application, "c", 10).unwrap();
    }

    #[tokio::test]
    async fn close_returns_what_was_queued_and_ends_the_turn_loop() {
        let m = mailbox();
        m.admit(Lane::Application, "a", 0).unwrap();
        m.admit(Lane::Lifecycle, "l", 0).unwrap();
        let running = m.next_turn().await.unwrap();
        assert_eq!(*running.job(), "l");
        assert_eq!(m.close(), ["a"], "queued work comes back to be completed");
        drop(running);
        assert!(m.next_turn().await.is_none());
        assert_eq!(
            m.admit(Lane::Lifecycle, "x", 0),
            Err((Refused::Closed, "x"))
        );
        // A turn loop waiting on an empty mailbox ends too.
        let empty = mailbox();
        let waiting = {
            let empty = empty.clone();
            tokio::spawn(async move { empty.next_turn().await.is_none() })
        };
        tokio::task::yield_now().await;
        empty.close();
        let ended = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the turn loop ended");
        assert!(ended.unwrap());
    }
}
