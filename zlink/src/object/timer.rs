//! Spot timers: named, periodic ticks that run as turns of their Spot, with an overrun
//! policy for a handler that falls behind (digest §3.5).
//!
//! A timer's ticks never overlap: the next one is scheduled after the previous handler
//! finished. A tick needs the owner lease to admit work; a Spot's timers stop with it, so
//! a tick of an older incarnation never runs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::authority::OwnerFence;
use crate::store::OwnerLease;
use crate::sync::LockUnpoisoned;
use crate::wire::trace_context::{current, TraceContext};
use crate::{Error, Result};

/// What a timer does when its handler falls behind its period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimerPolicy {
    /// Fixed rate from the start; after a late handler only the latest due tick runs
    /// (the default).
    #[default]
    SkipLateTicks,
    /// Fixed rate from the start; after a late handler the missed ticks run in order, at
    /// most this many (1 or more), the older ones dropped.
    CatchUpBounded(u32),
    /// The next tick is one period after the previous handler ended; nothing is caught up.
    DelayNextTick,
}

/// One tick, as its handler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerTick {
    /// The timer's name.
    pub name: Arc<str>,
    /// The tick's position on the schedule, from 1; it never decreases.
    pub scheduled_index: u64,
    /// How many ticks this timer delivered, this one included, from 1.
    pub delivery_index: u64,
    /// Ticks skipped since the previous delivery.
    pub skipped: u64,
    /// When the tick was due.
    pub scheduled_at: Instant,
    /// The timer's period.
    pub period: Duration,
}

/// The pure schedule of one timer: which ticks are due when.
///
/// Handing out a due tick and delivering it are two steps: a tick that cannot run (no
/// lease, a full queue) is never taken back from the schedule, so the schedule only moves
/// forward; it is counted as skipped by the next tick that is delivered.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    name: Arc<str>,
    start: Instant,
    period: Duration,
    policy: TimerPolicy,
    /// The scheduled index of the last tick handed out (0 before the first).
    last: u64,
    delivered: u64,
    /// Ticks skipped since the last delivery: dropped by the policy or not run.
    pending_skips: u64,
    /// The trace context of the turn that started the timer: its ticks carry it on.
    trace: Option<Box<TraceContext>>,
}

/// A tick the schedule handed out, not yet delivered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DueTick {
    index: u64,
    at: Instant,
    /// Ticks the policy dropped between the previous tick handed out and this one.
    dropped_before: u64,
}

impl Schedule {
    pub(crate) fn new(
        name: Arc<str>,
        start: Instant,
        period: Duration,
        policy: TimerPolicy,
    ) -> Self {
        Schedule {
            name,
            start,
            period,
            policy,
            last: 0,
            delivered: 0,
            pending_skips: 0,
            trace: None,
        }
    }

    fn at(&self, index: u64) -> Instant {
        let nanos = self.period.as_nanos().saturating_mul(u128::from(index));
        self.start + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// When the next tick is due; `last_end` is when the previous handler finished.
    pub(crate) fn next_due(&self, last_end: Option<Instant>) -> Instant {
        match (self.policy, last_end) {
            (TimerPolicy::DelayNextTick, Some(end)) => end + self.period,
            _ => self.at(self.last + 1),
        }
    }

    /// The ticks due now, in order; `due` is when the timer woke for them (what
    /// [`next_due`](Self::next_due) said). Each must then be [`delivered`](Self::delivered)
    /// or [`missed`](Self::missed), in order.
    pub(crate) fn take_due(&mut self, now: Instant, due: Instant) -> Vec<DueTick> {
        let indices: Vec<u64> = match self.policy {
            TimerPolicy::DelayNextTick => vec![self.last + 1],
            fixed => {
                let elapsed = now.saturating_duration_since(self.start).as_nanos();
                let period = self.period.as_nanos().max(1);
                let latest = u64::try_from(elapsed / period).unwrap_or(u64::MAX);
                if latest <= self.last {
                    return Vec::new();
                }
                let keep = match fixed {
                    TimerPolicy::CatchUpBounded(n) => u64::from(n.max(1)),
                    _ => 1,
                };
                let first = latest.saturating_sub(keep - 1).max(self.last + 1);
                (first..=latest).collect()
            }
        };
        let mut ticks = Vec::with_capacity(indices.len());
        for index in indices {
            ticks.push(DueTick {
                index,
                at: match self.policy {
                    TimerPolicy::DelayNextTick => due,
                    _ => self.at(index),
                },
                dropped_before: index - self.last - 1,
            });
            self.last = index;
        }
        ticks
    }

    /// The tick as its handler would see it if `due` is delivered next.
    pub(crate) fn tick(&self, due: &DueTick) -> TimerTick {
        TimerTick {
            name: self.name.clone(),
            scheduled_index: due.index,
            delivery_index: self.delivered + 1,
            skipped: self.pending_skips + due.dropped_before,
            scheduled_at: due.at,
            period: self.period,
        }
    }

    /// Records that `due` was delivered (admitted to its Spot's queue).
    pub(crate) fn delivered(&mut self) {
        self.delivered += 1;
        self.pending_skips = 0;
    }

    /// Records that `due` did not run: it counts as skipped for the next delivery.
    pub(crate) fn missed(&mut self, due: &DueTick) {
        self.pending_skips += due.dropped_before + 1;
    }
}

/// One running timer as it moves with its object to another node: its schedule's
/// position, so the target continues it rather than starting it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TimerRecord {
    pub(crate) name: String,
    pub(crate) period_ms: u64,
    /// 0 skip late ticks, 1 catch up (with `catch_up`), 2 delay the next tick.
    pub(crate) policy: u8,
    pub(crate) catch_up: u32,
    /// Time until the next tick is due, from the capture.
    pub(crate) next_in_ms: u64,
    pub(crate) last: u64,
    pub(crate) delivered: u64,
    pub(crate) skipped: u64,
}

impl Schedule {
    /// This schedule's position, `now`.
    fn record(&self, now: Instant) -> TimerRecord {
        let (policy, catch_up) = match self.policy {
            TimerPolicy::SkipLateTicks => (0, 0),
            TimerPolicy::CatchUpBounded(n) => (1, n),
            TimerPolicy::DelayNextTick => (2, 0),
        };
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        TimerRecord {
            name: self.name.to_string(),
            period_ms: millis(self.period),
            policy,
            catch_up,
            next_in_ms: millis(self.at(self.last + 1).saturating_duration_since(now)),
            last: self.last,
            delivered: self.delivered,
            skipped: self.pending_skips,
        }
    }

    /// A schedule continued from `record`, `now`: its next tick is due when it was due on
    /// the node it came from. A record that does not describe a timer is refused.
    fn resume(record: &TimerRecord, now: Instant) -> Result<Self> {
        let policy = match (record.policy, record.catch_up) {
            (0, _) => TimerPolicy::SkipLateTicks,
            (1, n) if n > 0 => TimerPolicy::CatchUpBounded(n),
            (2, _) => TimerPolicy::DelayNextTick,
            _ => return Err(Error::InvalidArgument("an unknown timer policy".into())),
        };
        if record.name.is_empty() || record.name.len() > 255 || record.period_ms == 0 {
            return Err(Error::InvalidArgument("a malformed timer record".into()));
        }
        let period = Duration::from_millis(record.period_ms);
        let next = now + Duration::from_millis(record.next_in_ms.min(record.period_ms));
        // The schedule is anchored so that tick `last + 1` falls at `next`.
        let back = u32::try_from(record.last.saturating_add(1))
            .ok()
            .and_then(|n| period.checked_mul(n))
            .and_then(|d| next.checked_sub(d));
        let (start, last) = match back {
            Some(start) => (start, record.last),
            None => (next.checked_sub(period).unwrap_or(now), 0),
        };
        Ok(Schedule {
            name: Arc::from(record.name.as_str()),
            start,
            period,
            policy,
            last,
            delivered: record.delivered,
            pending_skips: record.skipped,
            // A moved timer's ticks start no trace of their own on the new node.
            trace: None,
        })
    }
}

/// Where a due tick goes: its object's mailbox, as the timers see it.
pub(crate) trait TickInbox: Send + Sync + 'static {
    /// Queues `tick` on the application lane, its turn to fire `done` when it ended and
    /// to stop with `cancelled`; `false` when the queue is full (the tick is skipped).
    fn admit_tick(
        &self,
        tick: (TimerTick, Option<Box<TraceContext>>),
        done: oneshot::Sender<()>,
        cancelled: CancellationToken,
    ) -> bool;
}

/// The timers of one Spot.
pub(crate) struct Timers {
    mailbox: Weak<dyn TickInbox>,
    lease: Arc<OwnerLease>,
    /// The Spot's owner fence: a tick runs only while this node's current lease is the one
    /// the Spot's authority names.
    fence: OwnerFence,
    tracker: TaskTracker,
    /// Stops every timer: at the object's close, its move or its node's stop.
    stop: TimerStop,
    running: Mutex<HashMap<Arc<str>, Running>>,
}

/// What stops an object's timers. Its token (a child of the node's) is made when the first
/// timer starts, not with the object: most objects never start one, and an idle object
/// holds no token it does not use.
struct TimerStop {
    node: CancellationToken,
    own: std::sync::OnceLock<CancellationToken>,
    stopped: std::sync::atomic::AtomicBool,
}

impl TimerStop {
    /// The token timers stop on, cancelled already once the timers were stopped. (The
    /// flag is read after the token is set, and set before the token is read, so a stop
    /// that races the first timer still cancels it.)
    fn token(&self) -> CancellationToken {
        let token = self.own.get_or_init(|| self.node.child_token());
        if self.stopped.load(std::sync::atomic::Ordering::SeqCst) {
            token.cancel();
        }
        token.clone()
    }

    fn stop(&self) {
        self.stopped
            .store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(token) = self.own.get() {
            token.cancel();
        }
    }
}

/// A running timer: its stop token and its schedule (shared with its task, so the
/// schedule can be captured when the object moves).
struct Running {
    token: CancellationToken,
    schedule: Arc<Mutex<Schedule>>,
}

impl Timers {
    pub(crate) fn new(
        mailbox: Weak<dyn TickInbox>,
        lease: Arc<OwnerLease>,
        fence: OwnerFence,
        tracker: TaskTracker,
        node: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Timers {
            mailbox,
            lease,
            fence,
            tracker,
            stop: TimerStop {
                node,
                own: std::sync::OnceLock::new(),
                stopped: std::sync::atomic::AtomicBool::new(false),
            },
            running: Mutex::new(HashMap::new()),
        })
    }

    /// Stops every timer for good: the object closes, moves away or its node stops.
    pub(crate) fn stop(&self) {
        self.stop.stop();
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Running>> {
        self.running.lock_unpoisoned()
    }

    /// Whether any timer is armed.
    pub(crate) fn any_armed(&self) -> bool {
        !self.running().is_empty()
    }

    /// Starts (or restarts, from now) the timer `name`.
    pub(crate) fn start(&self, name: &str, period: Duration, policy: TimerPolicy) -> Result<()> {
        if name.is_empty() || name.len() > 255 {
            return Err(Error::InvalidArgument(format!(
                "a timer name must be 1..=255 bytes, got {}",
                name.len()
            )));
        }
        if period.is_zero() {
            return Err(Error::InvalidArgument(
                "a timer period must be greater than zero".into(),
            ));
        }
        if policy == TimerPolicy::CatchUpBounded(0) {
            return Err(Error::InvalidArgument(
                "CatchUpBounded needs at least 1 tick to catch up".into(),
            ));
        }
        let name: Arc<str> = Arc::from(name);
        let mut schedule = Schedule::new(name, Instant::now(), period, policy);
        schedule.trace = current().map(Box::new);
        self.spawn(schedule);
        Ok(())
    }

    fn spawn(&self, schedule: Schedule) {
        let name = schedule.name.clone();
        let token = self.stop.token().child_token();
        let schedule = Arc::new(Mutex::new(schedule));
        let running = Running {
            token: token.clone(),
            schedule: schedule.clone(),
        };
        if let Some(previous) = self.running().insert(name, running) {
            previous.token.cancel();
        }
        let (mailbox, lease, fence) =
            (self.mailbox.clone(), self.lease.clone(), self.fence.clone());
        self.tracker
            .spawn(run(schedule, mailbox, lease, fence, token));
    }

    /// Stops every timer and returns where each one's schedule stood (the object is
    /// moving: its timers continue on the target).
    pub(crate) fn capture(&self) -> Vec<TimerRecord> {
        let now = Instant::now();
        let mut records: Vec<TimerRecord> = self
            .running()
            .drain()
            .map(|(_, running)| {
                running.token.cancel();
                running.schedule.lock_unpoisoned().record(now)
            })
            .collect();
        records.sort_by(|a, b| a.name.cmp(&b.name));
        records
    }

    /// Continues timers captured on the node the object came from.
    pub(crate) fn resume(&self, records: &[TimerRecord]) -> Result<()> {
        let now = Instant::now();
        let schedules = records
            .iter()
            .map(|record| Schedule::resume(record, now))
            .collect::<Result<Vec<_>>>()?;
        for schedule in schedules {
            self.spawn(schedule);
        }
        Ok(())
    }

    /// Stops the timer `name`; a tick already running finishes. `false` if none ran.
    pub(crate) fn cancel(&self, name: &str) -> bool {
        match self.running().remove(name) {
            Some(running) => {
                running.token.cancel();
                true
            }
            None => false,
        }
    }
}

async fn run(
    schedule: Arc<Mutex<Schedule>>,
    mailbox: Weak<dyn TickInbox>,
    lease: Arc<OwnerLease>,
    fence: OwnerFence,
    cancel: CancellationToken,
) {
    let mut last_end = None;
    loop {
        let due = schedule.lock_unpoisoned().next_due(last_end);
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep_until(due) => {}
        }
        let mut batch = schedule
            .lock_unpoisoned()
            .take_due(Instant::now(), due)
            .into_iter();
        while let Some(next) = batch.next() {
            let delivery = deliver(
                &schedule.lock_unpoisoned(),
                &next,
                &mailbox,
                &lease,
                &fence,
                &cancel,
            );
            match delivery {
                Delivery::Admitted(finished) => {
                    schedule.lock_unpoisoned().delivered();
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        _ = finished => {}
                    }
                }
                // Nothing more of this batch can run either: it all counts as skipped.
                Delivery::NotRun => {
                    let mut schedule = schedule.lock_unpoisoned();
                    schedule.missed(&next);
                    batch.by_ref().for_each(|rest| schedule.missed(&rest));
                }
                Delivery::SpotGone => return,
            }
        }
        last_end = Some(Instant::now());
    }
}

enum Delivery {
    Admitted(oneshot::Receiver<()>),
    NotRun,
    SpotGone,
}

fn deliver(
    schedule: &Schedule,
    due: &DueTick,
    mailbox: &Weak<dyn TickInbox>,
    lease: &OwnerLease,
    fence: &OwnerFence,
    cancel: &CancellationToken,
) -> Delivery {
    // A tick needs the lease the Spot's authority names: past the admission deadline, or
    // under a newer lease, nothing new starts.
    if !lease
        .admitting_token()
        .is_some_and(|token| fence.held_by(&token))
    {
        return Delivery::NotRun;
    }
    let Some(mailbox) = mailbox.upgrade() else {
        return Delivery::SpotGone;
    };
    let (done, finished) = oneshot::channel();
    // A full queue drops the tick.
    let tick = (schedule.tick(due), schedule.trace.clone());
    match mailbox.admit_tick(tick, done, cancel.clone()) {
        true => Delivery::Admitted(finished),
        false => Delivery::NotRun,
    }
}

#[cfg(test)]
mod tests;
