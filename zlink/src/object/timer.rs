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
use super::live_object::ObjectJob;
use super::mailbox::{Lane, Mailbox};
use crate::store::OwnerLease;
use crate::sync::LockUnpoisoned;
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
        })
    }
}

/// The timers of one Spot.
pub(crate) struct Timers {
    mailbox: Weak<Mailbox<ObjectJob>>,
    lease: Arc<OwnerLease>,
    /// The Spot's owner fence: a tick runs only while this node's current lease is the one
    /// the Spot's authority names.
    fence: OwnerFence,
    tracker: TaskTracker,
    /// The Spot's own token: cancelled when it closes or its node stops.
    cancel: CancellationToken,
    running: Mutex<HashMap<Arc<str>, Running>>,
}

/// A running timer: its stop token and its schedule (shared with its task, so the
/// schedule can be captured when the object moves).
struct Running {
    token: CancellationToken,
    schedule: Arc<Mutex<Schedule>>,
}

impl Timers {
    pub(crate) fn new(
        mailbox: Weak<Mailbox<ObjectJob>>,
        lease: Arc<OwnerLease>,
        fence: OwnerFence,
        tracker: TaskTracker,
        cancel: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Timers {
            mailbox,
            lease,
            fence,
            tracker,
            cancel,
            running: Mutex::new(HashMap::new()),
        })
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Running>> {
        self.running.lock_unpoisoned()
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
        self.spawn(Schedule::new(name, Instant::now(), period, policy));
        Ok(())
    }

    fn spawn(&self, schedule: Schedule) {
        let name = schedule.name.clone();
        let token = self.cancel.child_token();
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
    mailbox: Weak<Mailbox<ObjectJob>>,
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
    mailbox: &Weak<Mailbox<ObjectJob>>,
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
    let job = ObjectJob::Tick {
        tick: schedule.tick(due),
        done,
        cancelled: cancel.clone(),
    };
    // A full queue drops the tick.
    match mailbox.admit(Lane::Application, job, 0) {
        Ok(_) => Delivery::Admitted(finished),
        Err(_) => Delivery::NotRun,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Duration = Duration::from_millis(100);

    fn schedule(policy: TimerPolicy) -> (Schedule, Instant) {
        let start = Instant::now();
        (Schedule::new(Arc::from("t"), start, P, policy), start)
    }

    #[test]
    fn a_moved_schedule_continues_where_it_was_and_a_malformed_record_is_refused() {
        let (mut s, start) = schedule(TimerPolicy::CatchUpBounded(2));
        run(&mut s, start + P * 3);
        let record = s.record(start + P * 3 + P / 4);
        assert_eq!(
            (record.last, record.delivered, record.next_in_ms),
            (3, 2, 75)
        );
        // On the target, the next tick is due 75 ms after the restore, then every period.
        let there = start + Duration::from_secs(10);
        let mut moved = Schedule::resume(&record, there).unwrap();
        assert_eq!(moved.next_due(None), there + Duration::from_millis(75));
        let ticks = run(&mut moved, there + Duration::from_millis(75));
        assert_eq!(ticks, [(4, 3, 0)], "it carries on from tick 4, delivery 3");
        for bad in [
            TimerRecord {
                policy: 9,
                ..record.clone()
            },
            TimerRecord {
                period_ms: 0,
                ..record.clone()
            },
            TimerRecord {
                policy: 1,
                catch_up: 0,
                ..record.clone()
            },
            TimerRecord {
                name: String::new(),
                ..record.clone()
            },
        ] {
            assert!(Schedule::resume(&bad, there).is_err());
        }
    }

    /// Delivers every due tick (each handler ran) and lists (scheduled, delivery, skipped).
    fn run(s: &mut Schedule, now: Instant) -> Vec<(u64, u64, u64)> {
        s.take_due(now, now)
            .iter()
            .map(|due| {
                let t = s.tick(due);
                s.delivered();
                (t.scheduled_index, t.delivery_index, t.skipped)
            })
            .collect()
    }

    #[test]
    fn skip_late_ticks_delivers_only_the_latest_due_tick() {
        let (mut s, start) = schedule(TimerPolicy::SkipLateTicks);
        assert_eq!(s.next_due(None), start + P);
        assert_eq!(run(&mut s, start + P), [(1, 1, 0)]);
        // The handler ran 3.5 periods: ticks 2, 3 and 4 are due, only 4 runs.
        assert_eq!(run(&mut s, start + P * 4 + P / 2), [(4, 2, 2)]);
        assert_eq!(s.next_due(Some(start + P * 5)), start + P * 5);
        assert!(
            s.take_due(start + P * 4 + P * 3 / 4, start + P * 4 + P * 3 / 4)
                .is_empty(),
            "nothing new due"
        );
    }

    #[test]
    fn catch_up_bounded_runs_missed_ticks_in_order_up_to_its_bound() {
        let (mut s, start) = schedule(TimerPolicy::CatchUpBounded(2));
        assert_eq!(run(&mut s, start + P), [(1, 1, 0)]);
        // Ticks 2..=6 are due: the last two run, in order; 2, 3 and 4 are dropped.
        assert_eq!(run(&mut s, start + P * 6), [(5, 2, 3), (6, 3, 0)]);
        assert_eq!(run(&mut s, start + P * 7), [(7, 4, 0)]);
    }

    #[test]
    fn a_tick_that_did_not_run_counts_as_skipped_next_time() {
        let (mut s, start) = schedule(TimerPolicy::SkipLateTicks);
        let first = s.take_due(start + P, start + P);
        s.missed(&first[0]);
        assert!(
            s.next_due(None) > start + P,
            "a missed tick is not due again: the schedule only moves forward"
        );
        assert_eq!(run(&mut s, start + P * 2), [(2, 1, 1)]);
    }

    #[test]
    fn a_batch_that_could_not_run_counts_every_tick_once() {
        let (mut s, start) = schedule(TimerPolicy::CatchUpBounded(3));
        // Ticks 1..=5 are due; 3, 4 and 5 are handed out and none runs (2 dropped by policy).
        for due in s.take_due(start + P * 5, start + P * 5) {
            s.missed(&due);
        }
        assert_eq!(run(&mut s, start + P * 6), [(6, 1, 5)]);
    }

    #[test]
    fn delay_next_tick_waits_one_period_after_the_handler_ended() {
        let (mut s, start) = schedule(TimerPolicy::DelayNextTick);
        assert_eq!(run(&mut s, start + P), [(1, 1, 0)]);
        let handler_end = start + P * 3;
        assert_eq!(s.next_due(Some(handler_end)), handler_end + P);
        let second = s.take_due(handler_end + P, handler_end + P);
        let tick = s.tick(&second[0]);
        assert_eq!(
            (tick.scheduled_index, tick.delivery_index, tick.skipped),
            (2, 2, 0)
        );
        assert_eq!(
            tick.scheduled_at,
            handler_end + P,
            "due a period after the end"
        );
    }

    #[test]
    fn indices_never_go_back_and_delivery_never_outruns_the_schedule() {
        for policy in [
            TimerPolicy::SkipLateTicks,
            TimerPolicy::CatchUpBounded(3),
            TimerPolicy::DelayNextTick,
        ] {
            let (mut s, start) = schedule(policy);
            let mut last = (0, 0);
            for step in [1u32, 2, 7, 8, 8, 20, 21] {
                let now = start + P * step;
                for (index, delivery, _) in run(&mut s, now) {
                    let tick = (index, delivery);
                    assert!(tick.0 > last.0, "{policy:?}");
                    assert_eq!(tick.1, last.1 + 1, "{policy:?}");
                    assert!(tick.0 >= tick.1, "{policy:?}");
                    last = tick;
                }
            }
        }
    }
}
