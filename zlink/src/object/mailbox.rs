//! A Spot's or Actor's mailbox: two bounded lanes and the order a turn takes from them.
//!
//! - The **lifecycle lane** holds framework control (join, leave, closing, relocation
//!   steps); the **application lane** holds business messages and timer ticks (digest
//!   §3.3). They are never mixed, so a backlog can be captured and moved on its own.
//! - Each lane is bounded by count **and** bytes (payload + metadata + a fixed cost per
//!   job, so an empty payload still counts). Both are reserved at admission and released
//!   when the job's handler reaches its terminal completion, not when it is dequeued.
//! - The lifecycle lane goes first, under a continuous-run cap: after
//!   [`lane::LIFECYCLE_RUN_CAP`] lifecycle turns in a row, one application turn runs if one is
//!   waiting, so application work always progresses.
//! - A mailbox can be **sealed** at a turn boundary (no new admission; queued work can
//!   be taken out whole, in order) and **closed** (nothing more runs).
//! - Whatever runs the turns (the runner `R`: the object's instance) is **parked** here
//!   while the turn loop waits, and can be **lent** for one turn to a caller on this
//!   node while nothing is queued or running: the turn then runs on the caller's task
//!   instead of waking the loop. A lent turn that cannot finish at once is **handed over**
//!   to the loop, ahead of everything queued.
//! - The turn loop itself is **parked** here while the object is idle: no task waits for
//!   an idle object. The arrival that gives it work (a job, a handed-over turn, a stop's
//!   wake, the close) takes it out and [resumes](ParkedLoop::resume) it.

use std::sync::{Arc, Mutex};

use crate::sync::LockUnpoisoned;
use tokio::sync::Notify;

mod arrival;
mod lane;

use arrival::Wakeup;
pub(crate) use lane::{
    Lane, LaneLimits, Refused, APPLICATION_LANE, JOB_OVERHEAD_BYTES, LIFECYCLE_LANE,
};
use lane::{LaneOrder, LaneState};

/// A turn loop parked in its mailbox while there is nothing to run (see
/// [`Mailbox::park`]).
pub(crate) trait ParkedLoop: Send {
    /// Starts the loop again (on a task of its own): work arrived, or it has to stop.
    fn resume(self: Box<Self>);
}

/// Where the runner is.
enum Holder<R> {
    /// With the turn loop (running turns, or inside a handed-over turn).
    Loop,
    /// Parked while the loop waits: a caller may borrow it.
    Parked(R),
    /// Lent to a caller for one turn.
    Lent,
}

struct State<J, R> {
    lifecycle: LaneState<J>,
    application: LaneState<J>,
    order: LaneOrder,
    sealed: bool,
    closed: bool,
    /// Senders waiting for room (only they are woken when a job completes).
    room_waiters: usize,
    /// The turn loop found nothing to run and waits (only then does an arrival wake it).
    /// Cleared by whatever wakes it, under this lock.
    loop_waits: bool,
    /// The waiting loop, parked here (only while `loop_waits`).
    parked_loop: Option<Box<dyn ParkedLoop>>,
    holder: Holder<R>,
    /// A lent turn that did not finish on the caller's task: the loop's next turn.
    /// (Boxed: a job is large, and an idle object should not keep room for one.)
    handed_over: Option<Box<(J, usize)>>,
    /// The loop waits for the lent runner to come back (it has to stop).
    reclaiming: bool,
    /// Every job admitted or turn lent so far: a mark that moves whenever work comes.
    work: u64,
}

impl<J, R> State<J, R> {
    fn lane(&mut self, lane: Lane) -> &mut LaneState<J> {
        match lane {
            Lane::Lifecycle => &mut self.lifecycle,
            Lane::Application => &mut self.application,
        }
    }

    fn nothing_queued(&self) -> bool {
        self.lifecycle.queued.is_empty() && self.application.queued.is_empty()
    }

    /// The lane the next turn takes from, if any job waits.
    fn pick(&mut self) -> Option<Lane> {
        let lifecycle = !self.lifecycle.queued.is_empty();
        let application = !self.application.queued.is_empty();
        self.order.pick(lifecycle, application)
    }
}

/// One object's mailbox. Jobs of type `J` and the runner `R` are opaque to it.
pub(crate) struct Mailbox<J, R = ()> {
    state: Mutex<State<J, R>>,
    /// Wakes the turn loop when a job arrives or the mailbox closes.
    arrived: Wakeup,
    /// Wakes senders waiting for room.
    released: Notify,
}

/// A job taken for a turn. Its lane's count and bytes are released when this is dropped,
/// after the handler's terminal completion.
pub(crate) struct Turn<J, R = ()> {
    job: Option<J>,
    pub(crate) lane: Lane,
    bytes: usize,
    mailbox: Arc<Mailbox<J, R>>,
    /// Its room was given back already (by the next [`Mailbox::try_next_after`]).
    released: bool,
}

impl<J, R> Turn<J, R> {
    /// Takes the job out to run it; the turn keeps the lane's room until it is dropped.
    pub(crate) fn take_job(&mut self) -> Option<J> {
        self.job.take()
    }

    #[cfg(test)]
    fn job(&self) -> &J {
        self.job.as_ref().expect("not taken in tests")
    }
}

impl<J, R> Drop for Turn<J, R> {
    fn drop(&mut self) {
        if !self.released {
            self.mailbox.release(self.lane, self.bytes);
        }
    }
}

/// A lent runner with the room its turn holds in the application lane (given back by
/// [`Mailbox::take_back`] or with the handed-over turn).
pub(crate) struct Lent<R> {
    pub(crate) runner: R,
    pub(crate) room: LentRoom,
}

/// The application-lane room a lent turn holds (its bytes with the per-job cost).
pub(crate) struct LentRoom(usize);

/// What the turn loop does next ([`Mailbox::next_for_loop`]).
pub(crate) enum Next<J, R> {
    /// Run this turn, with the runner back if it was parked.
    Run(Turn<J, R>, Option<R>),
    /// Nothing to run now (the runner is parked, or lent): wait for an arrival.
    Wait,
    /// The mailbox is closed; the runner back if it was parked.
    Closed(Option<R>),
}

/// What a loop that has to stop gets back ([`Mailbox::reclaim`]).
pub(crate) enum Reclaimed<J, R> {
    /// The parked runner.
    Runner(R),
    /// The turn a caller handed over: the runner is in it.
    HandedOver(Turn<J, R>),
    /// Lent: wait for an arrival (its return wakes the loop).
    Wait,
    /// Neither parked, lent nor handed over: the loop has it already.
    Gone,
}

impl<J, R> Mailbox<J, R> {
    pub(crate) fn new(lifecycle: LaneLimits, application: LaneLimits) -> Arc<Self> {
        Arc::new(Mailbox {
            state: Mutex::new(State {
                lifecycle: LaneState::new(lifecycle),
                application: LaneState::new(application),
                order: LaneOrder::default(),
                sealed: false,
                closed: false,
                room_waiters: 0,
                loop_waits: false,
                parked_loop: None,
                holder: Holder::Loop,
                handed_over: None,
                reclaiming: false,
                work: 0,
            }),
            arrived: Wakeup::default(),
            released: Notify::new(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State<J, R>> {
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
        state.work += 1;
        self.wake_loop(state);
        Ok(())
    }

    /// Jobs waiting in its lanes now (not the one running).
    pub(crate) fn queued(&self) -> usize {
        let state = self.state();
        state.lifecycle.queued.len() + state.application.queued.len()
    }

    /// Whether framework work (a move's seal, a close) waits in the lifecycle lane.
    pub(crate) fn lifecycle_waits(&self) -> bool {
        !self.state().lifecycle.queued.is_empty()
    }

    /// Whether none of this object's accepted work runs or waits now: nothing queued,
    /// running or lent (or the mailbox closed, or handed to a move's target). What a
    /// shutdown's drain waits for.
    pub(crate) fn at_rest(&self) -> bool {
        let state = self.state();
        state.closed
            || state.handed_over.is_some()
            || (matches!(state.holder, Holder::Parked(_))
                && state.lifecycle.used.jobs == 0
                && state.application.used.jobs == 0)
    }

    /// `Some(mark)` while the mailbox is idle: open, nothing queued, running, lent or
    /// handed over, the loop parked. The mark moves with every job admitted and every
    /// turn lent, so the same mark seen later means no work came in between.
    pub(crate) fn idle_mark(&self) -> Option<u64> {
        let state = self.state();
        let idle = !state.closed
            && !state.sealed
            && !state.reclaiming
            && state.handed_over.is_none()
            && matches!(state.holder, Holder::Parked(_))
            && state.lifecycle.used.jobs == 0
            && state.application.used.jobs == 0;
        idle.then_some(state.work)
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
        state.work += 1;
        self.wake_loop(state);
        Ok(())
    }

    /// Wakes the turn loop if it waits for work; a busy loop finds the job on its own.
    fn wake_loop(&self, state: std::sync::MutexGuard<'_, State<J, R>>) {
        if state.loop_waits {
            self.rouse(state);
        }
    }

    /// Wakes the turn loop, wherever it waits: a parked loop is resumed (outside the
    /// lock), one still on its task gets a permit for its next wait.
    fn rouse(&self, mut state: std::sync::MutexGuard<'_, State<J, R>>) {
        state.loop_waits = false;
        let parked = state.parked_loop.take();
        drop(state);
        match parked {
            Some(parked) => parked.resume(),
            None => self.arrived.notify(),
        }
    }

    /// Parks the turn loop that found nothing to run ([`Next::Wait`]): it stays here,
    /// without a task, until work arrives. `Some` (the loop back) when something woke it
    /// since its look: it runs on.
    pub(crate) fn park<P: ParkedLoop + 'static>(&self, idle: Box<P>) -> Option<Box<P>> {
        let mut state = self.state();
        if !state.loop_waits || state.closed {
            return Some(idle);
        }
        state.parked_loop = Some(idle);
        None
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
        struct Waiting<'a, J, R>(&'a Mailbox<J, R>);
        impl<J, R> Drop for Waiting<'_, J, R> {
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

    fn give_back(state: &mut State<J, R>, lane: Lane, bytes: usize) {
        let used = &mut state.lane(lane).used;
        used.jobs = used.jobs.saturating_sub(1);
        used.bytes = used.bytes.saturating_sub(bytes);
    }

    /// Only a sender waiting for room needs to hear that some was given back.
    fn after_release(&self, state: std::sync::MutexGuard<'_, State<J, R>>) {
        let waiting = state.room_waiters > 0;
        drop(state);
        if waiting {
            self.released.notify_waiters();
        }
    }

    /// The job to run now, if one is queued; `Err` once the mailbox is closed.
    /// (Finding none marks the loop as waiting: the next arrival wakes it.)
    #[cfg(test)]
    pub(crate) fn try_next(self: &Arc<Self>) -> Result<Option<Turn<J, R>>, ()> {
        self.try_next_after(None)
    }

    /// [`try_next`](Self::try_next), giving back the room of the turn that just ended
    /// under the same lock.
    #[cfg(test)]
    pub(crate) fn try_next_after(
        self: &Arc<Self>,
        finished: Option<Turn<J, R>>,
    ) -> Result<Option<Turn<J, R>>, ()> {
        self.with_finished(finished, |mailbox, state| mailbox.next_locked(state))
    }

    /// Runs `then` under the lock that gives back the room of `finished` (a turn of this
    /// mailbox), and wakes the senders waiting for room after.
    fn with_finished<T>(
        self: &Arc<Self>,
        finished: Option<Turn<J, R>>,
        then: impl FnOnce(&Arc<Self>, &mut State<J, R>) -> T,
    ) -> T {
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
        let next = then(self, &mut state);
        if gave_back {
            self.after_release(state);
        } else {
            drop(state);
        }
        // Dropped unlocked: a turn of another mailbox gives its room back on its own.
        drop(finished);
        next
    }

    fn next_locked(self: &Arc<Self>, state: &mut State<J, R>) -> Result<Option<Turn<J, R>>, ()> {
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
            .map(|(job, bytes)| self.turn(job, lane, bytes)))
    }

    fn turn(self: &Arc<Self>, job: J, lane: Lane, bytes: usize) -> Turn<J, R> {
        Turn {
            job: Some(job),
            lane,
            bytes,
            mailbox: self.clone(),
            released: false,
        }
    }

    /// The turn loop's next step, giving back the room of the turn that ended under the
    /// same lock. `runner` is the runner if the loop holds it: it comes back with a turn
    /// to run, or is parked when nothing is queued. A turn a caller handed over runs
    /// first (the runner is inside it); while the runner is lent, the loop waits.
    pub(crate) fn next_for_loop(
        self: &Arc<Self>,
        finished: Option<Turn<J, R>>,
        runner: Option<R>,
    ) -> Next<J, R> {
        self.with_finished(finished, |mailbox, state| {
            let mut runner = runner;
            if let Holder::Parked(_) = state.holder {
                if let Holder::Parked(parked) = std::mem::replace(&mut state.holder, Holder::Loop) {
                    runner = Some(parked);
                }
            }
            if state.closed {
                return Next::Closed(runner);
            }
            if let Some(handed) = state.handed_over.take() {
                let (job, bytes) = *handed;
                return Next::Run(mailbox.turn(job, Lane::Application, bytes), runner);
            }
            if matches!(state.holder, Holder::Lent) {
                state.loop_waits = true;
                return Next::Wait;
            }
            match mailbox.next_locked(state) {
                Ok(Some(turn)) => Next::Run(turn, runner),
                Ok(None) => {
                    if let Some(runner) = runner {
                        state.holder = Holder::Parked(runner);
                    }
                    Next::Wait
                }
                Err(()) => Next::Closed(runner),
            }
        })
    }

    /// Lends the parked runner for one turn on the caller's task, when that keeps the
    /// order: the mailbox is open, nothing is queued, running or handed over, and the
    /// application lane has room for `payload_bytes` (held until the turn ends).
    pub(crate) fn lend(&self, payload_bytes: usize) -> Option<Lent<R>> {
        let bytes = payload_bytes.saturating_add(JOB_OVERHEAD_BYTES);
        let mut state = self.state();
        if state.closed
            || state.sealed
            || state.reclaiming
            || state.handed_over.is_some()
            || !matches!(state.holder, Holder::Parked(_))
            || !state.nothing_queued()
            || !state.application.fits(bytes)
        {
            return None;
        }
        let Holder::Parked(runner) = std::mem::replace(&mut state.holder, Holder::Lent) else {
            return None;
        };
        state.application.used.jobs += 1;
        state.application.used.bytes += bytes;
        state.work += 1;
        Some(Lent {
            runner,
            room: LentRoom(bytes),
        })
    }

    /// A lent runner whose turn ended on the caller's task: parked again, its room given
    /// back. The loop hears of it only if work arrived meanwhile (or it waits to stop).
    pub(crate) fn take_back(&self, runner: R, room: LentRoom) {
        let mut state = self.state();
        Self::give_back(&mut state, Lane::Application, room.0);
        state.holder = Holder::Parked(runner);
        let wake = (state.loop_waits && !state.nothing_queued()) || state.reclaiming;
        let waiting = state.room_waiters > 0;
        if wake {
            self.rouse(state);
        } else {
            drop(state);
        }
        if waiting {
            self.released.notify_waiters();
        }
    }

    /// A lent turn that has to go on (its handler waits, or a Join follows it): the loop
    /// runs `job` next, with the runner inside it, and the turn keeps its room until then.
    pub(crate) fn hand_over(&self, job: J, room: LentRoom) {
        let mut state = self.state();
        state.holder = Holder::Loop;
        state.handed_over = Some(Box::new((job, room.0)));
        self.rouse(state);
    }

    /// The runner for a loop that has to stop, wherever it is: parked, inside a handed-over
    /// turn, or (lent) soon back.
    pub(crate) fn reclaim(self: &Arc<Self>) -> Reclaimed<J, R> {
        let mut state = self.state();
        if let Some(handed) = state.handed_over.take() {
            let (job, bytes) = *handed;
            state.reclaiming = false;
            return Reclaimed::HandedOver(self.turn(job, Lane::Application, bytes));
        }
        match std::mem::replace(&mut state.holder, Holder::Loop) {
            Holder::Parked(runner) => {
                state.reclaiming = false;
                Reclaimed::Runner(runner)
            }
            Holder::Lent => {
                state.holder = Holder::Lent;
                state.reclaiming = true;
                Reclaimed::Wait
            }
            Holder::Loop => {
                state.reclaiming = false;
                Reclaimed::Gone
            }
        }
    }

    /// Wakes the turn loop (or leaves it a permit): a stop for it to notice.
    pub(crate) fn wake(&self) {
        self.rouse(self.state());
    }

    /// Waits until a job arrives, the mailbox closes or [`wake`](Self::wake) is called,
    /// after a [`try_next`](Self::try_next) that found nothing (it may return with
    /// nothing new: the caller looks again).
    pub(crate) async fn arrival(&self) {
        self.arrived.wait().await;
    }

    /// [`arrival`](Self::arrival), for at most `linger`: whether it came.
    pub(crate) async fn arrival_within(&self, linger: std::time::Duration) -> bool {
        let arrived = tokio::time::timeout(linger, self.arrival()).await.is_ok();
        if !arrived {
            self.arrived.forget_waiter();
        }
        arrived
    }

    /// The next job to run, lifecycle first under the run cap; waits for one. `None` once
    /// the mailbox is closed. (The turn loop does the same, looking at its stop flag
    /// between the look and the wait.)
    #[cfg(test)]
    pub(crate) async fn next_turn(self: &Arc<Self>) -> Option<Turn<J, R>> {
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
        self.rouse(state);
    }

    /// Ends the mailbox: nothing more is admitted or run; queued jobs are returned so
    /// their callers can be completed (each exactly once).
    pub(crate) fn close(&self) -> Vec<J> {
        let mut state = self.state();
        state.closed = true;
        let mut left: Vec<J> = state
            .handed_over
            .take()
            .map(|handed| handed.0)
            .into_iter()
            .collect();
        left.extend(state.lifecycle.queued.drain(..).map(|(j, _)| j));
        left.extend(state.application.queued.drain(..).map(|(j, _)| j));
        // The turn loop may be waiting (a permit wakes it if it is not yet).
        self.rouse(state);
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
mod tests;
