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

fn timer_stop(node: &CancellationToken) -> TimerStop {
    TimerStop {
        node: node.clone(),
        own: std::sync::OnceLock::new(),
        stopped: std::sync::atomic::AtomicBool::new(false),
    }
}

#[test]
fn the_stop_token_is_made_with_the_first_timer_and_a_timer_started_after_a_stop_is_stopped() {
    let node = CancellationToken::new();
    let idle = timer_stop(&node);
    idle.stop();
    assert!(
        idle.own.get().is_none(),
        "no timer ever started: no token was made"
    );
    assert!(
        idle.token().is_cancelled(),
        "one started after the stop is stopped at once"
    );

    let used = timer_stop(&node);
    let first = used.token();
    assert!(!first.is_cancelled());
    used.stop();
    assert!(first.is_cancelled(), "the stop reaches a running timer");
    assert!(!node.is_cancelled(), "the node goes on");

    let on_node = timer_stop(&node);
    let ticking = on_node.token();
    node.cancel();
    assert!(
        ticking.is_cancelled(),
        "the node's stop reaches every object's timers"
    );
}
