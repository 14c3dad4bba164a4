//! The mailbox on its own: lanes, bounds, order and the lending of its runner.

use super::lane::LIFECYCLE_RUN_CAP;
use super::*;
use std::sync::atomic::Ordering;
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
    let big = Mailbox::<_>::new(SMALL, SMALL);
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
    let m = Mailbox::<_>::new(
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

/// A mailbox whose runner is a name, parked by a loop that found nothing to run.
fn parked(runner: &'static str) -> Arc<Mailbox<&'static str, &'static str>> {
    let m = Mailbox::new(SMALL, SMALL);
    assert!(matches!(m.next_for_loop(None, Some(runner)), Next::Wait));
    m
}

#[test]
fn a_runner_is_lent_only_while_the_mailbox_is_idle_and_open() {
    let m: Arc<Mailbox<&str, &str>> = Mailbox::new(SMALL, SMALL);
    assert!(m.lend(0).is_none(), "the loop holds it: nothing to lend");
    let m = parked("instance");
    let lent = m.lend(10).expect("idle: lent");
    assert_eq!(lent.runner, "instance");
    assert!(m.lend(0).is_none(), "lent once at a time");
    // The turn holds its room until it ends.
    assert_eq!(m.used(Lane::Application), (1, 10 + JOB_OVERHEAD_BYTES));
    m.take_back(lent.runner, lent.room);
    assert_eq!(m.used(Lane::Application), (0, 0));
    // Queued work is never overtaken.
    m.admit(Lane::Application, "queued", 0).unwrap();
    assert!(m.lend(0).is_none(), "a queued job goes first");
    let m = parked("instance");
    m.admit(Lane::Lifecycle, "a move", 0).unwrap();
    assert!(m.lend(0).is_none(), "a queued lifecycle job goes first");
    // Sealed, closed, or too big for the lane: queued (and refused) as before.
    let m = parked("instance");
    assert!(m.lend(1000).is_none(), "larger than the lane's byte bound");
    m.seal();
    assert!(m.lend(0).is_none(), "sealed");
    let m = parked("instance");
    m.close();
    assert!(m.lend(0).is_none(), "closed");
}

#[test]
fn what_arrives_during_a_lent_turn_waits_for_it_and_then_wakes_the_loop() {
    let m = parked("instance");
    let lent = m.lend(0).unwrap();
    m.admit(Lane::Application, "arrived", 0).unwrap();
    // The loop, woken by the arrival, finds the runner away and waits again.
    assert!(matches!(m.next_for_loop(None, None), Next::Wait));
    m.arrived.noticed.store(false, Ordering::Release);
    m.take_back(lent.runner, lent.room);
    assert!(
        m.arrived.noticed.load(Ordering::Acquire),
        "the runner's return wakes the loop for the queued job"
    );
    match m.next_for_loop(None, None) {
        Next::Run(mut turn, runner) => {
            assert_eq!(turn.take_job(), Some("arrived"));
            assert_eq!(
                runner,
                Some("instance"),
                "the runner comes back with the job"
            );
        }
        _ => panic!("the queued job runs"),
    }
}

#[test]
fn a_lent_turn_that_returns_to_an_idle_mailbox_wakes_no_one() {
    let m = parked("instance");
    m.arrived.noticed.store(false, Ordering::Release);
    let lent = m.lend(0).unwrap();
    m.take_back(lent.runner, lent.room);
    assert!(!m.arrived.noticed.load(Ordering::Acquire));
    assert!(m.lend(0).is_some(), "parked again for the next caller");
}

#[test]
fn a_handed_over_turn_runs_before_anything_queued_and_keeps_its_room_until_then() {
    let m2 = parked("instance");
    let lent = m2.lend(5).unwrap();
    m2.admit(Lane::Lifecycle, "lifecycle", 0).unwrap();
    m2.admit(Lane::Application, "application", 0).unwrap();
    m2.hand_over("handed over", lent.room);
    assert!(
        m2.arrived.noticed.load(Ordering::Acquire),
        "the loop is woken"
    );
    assert_eq!(m2.used(Lane::Application).0, 2);
    let Next::Run(mut turn, runner) = m2.next_for_loop(None, None) else {
        panic!("the handed-over turn runs");
    };
    assert_eq!(turn.take_job(), Some("handed over"));
    assert_eq!(runner, None, "the runner is inside the handed-over turn");
    let Next::Run(mut next, _) = m2.next_for_loop(Some(turn), None) else {
        panic!("then the queue");
    };
    assert_eq!(next.take_job(), Some("lifecycle"));
    assert_eq!(m2.used(Lane::Application), (1, JOB_OVERHEAD_BYTES));
}

#[test]
fn a_stopping_loop_gets_its_runner_back_from_wherever_it_is() {
    let m = parked("instance");
    assert!(matches!(m.reclaim(), Reclaimed::Runner("instance")));
    let m = parked("instance");
    let lent = m.lend(0).unwrap();
    assert!(matches!(m.reclaim(), Reclaimed::Wait));
    assert!(
        m.lend(0).is_none(),
        "no new lend while the loop waits to stop"
    );
    m.arrived.noticed.store(false, Ordering::Release);
    m.take_back(lent.runner, lent.room);
    assert!(
        m.arrived.noticed.load(Ordering::Acquire),
        "its return wakes the loop"
    );
    assert!(matches!(m.reclaim(), Reclaimed::Runner("instance")));
    let m = parked("instance");
    let lent = m.lend(0).unwrap();
    m.hand_over("handed over", lent.room);
    let Reclaimed::HandedOver(mut turn) = m.reclaim() else {
        panic!("the handed-over turn carries the runner");
    };
    assert_eq!(turn.take_job(), Some("handed over"));
}

#[test]
fn a_close_refuses_a_handed_over_turn_with_the_queue() {
    let m = parked("instance");
    let lent = m.lend(0).unwrap();
    m.hand_over("handed over", lent.room);
    assert_eq!(m.close(), vec!["handed over"]);
}

/// A parked loop that counts its resumptions.
struct Counted(Arc<std::sync::atomic::AtomicUsize>);

impl ParkedLoop for Counted {
    fn resume(self: Box<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A mailbox whose loop looked, found nothing and parked; and its resumption count.
fn with_parked_loop() -> (
    Arc<Mailbox<&'static str>>,
    Arc<std::sync::atomic::AtomicUsize>,
) {
    let m = mailbox();
    let resumed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    assert!(m.try_next().unwrap().is_none());
    assert!(
        m.park(Box::new(Counted(resumed.clone()))).is_none(),
        "parked"
    );
    (m, resumed)
}

#[test]
fn an_idle_loop_is_parked_without_a_task_and_each_kind_of_arrival_resumes_it_once() {
    type Arrival = fn(&Mailbox<&'static str>);
    let arrivals: [(&str, Arrival); 4] = [
        ("a job", |m| m.admit(Lane::Application, "job", 1).unwrap()),
        ("a notice", |m| {
            m.admit_notice(Lane::Lifecycle, "notice").unwrap()
        }),
        ("a stop's wake", |m| m.wake()),
        ("the close", |m| drop(m.close())),
    ];
    for (what, arrive) in arrivals {
        let (m, resumed) = with_parked_loop();
        arrive(&m);
        assert_eq!(resumed.load(Ordering::SeqCst), 1, "{what} resumes the loop");
        // The loop is out: what arrives next finds it busy and resumes nothing.
        let _ = m.admit(Lane::Lifecycle, "later", 1);
        m.wake();
        assert_eq!(
            resumed.load(Ordering::SeqCst),
            1,
            "{what}: resumed once only"
        );
    }
}

#[test]
fn a_loop_woken_between_its_look_and_its_park_is_handed_back_to_run_on() {
    let m = mailbox();
    let resumed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    assert!(m.try_next().unwrap().is_none());
    m.admit(Lane::Application, "raced", 1).unwrap();
    let back = m.park(Box::new(Counted(resumed.clone())));
    assert!(back.is_some(), "not parked: the job would wait for nobody");
    assert_eq!(*m.try_next().unwrap().unwrap().job(), "raced");
    // A closed mailbox never keeps a loop either.
    let closed = mailbox();
    assert!(closed.try_next().unwrap().is_none());
    drop(closed.close());
    assert!(closed.park(Box::new(Counted(resumed.clone()))).is_some());
    assert_eq!(resumed.load(Ordering::SeqCst), 0);
}

#[test]
fn a_lent_turn_resumes_a_parked_loop_only_when_work_waits_or_it_is_handed_over() {
    let m = parked("runner");
    let resumed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let lent = m.lend(1).expect("idle: lent");
    assert!(matches!(m.next_for_loop(None, None), Next::Wait));
    assert!(m.park(Box::new(Counted(resumed.clone()))).is_none());
    m.take_back(lent.runner, lent.room);
    assert_eq!(
        resumed.load(Ordering::SeqCst),
        0,
        "nothing queued: it stays parked"
    );
    let lent = m.lend(1).expect("idle again");
    m.hand_over("handed", lent.room);
    assert_eq!(
        resumed.load(Ordering::SeqCst),
        1,
        "the handed-over turn resumes it"
    );
}

/// A waker that counts nothing: only its reference count is looked at.
struct Unwoken;

impl futures::task::ArcWake for Unwoken {
    fn wake_by_ref(_: &Arc<Self>) {}
}

#[tokio::test(start_paused = true)]
async fn a_bounded_wait_that_ends_without_an_arrival_keeps_no_waker_of_its_task() {
    let m = mailbox();
    let task = Arc::new(Unwoken);
    let waker = futures::task::waker(task.clone());
    let mut cx = std::task::Context::from_waker(&waker);
    use std::future::Future;
    let mut wait = Box::pin(m.arrival_within(Duration::from_millis(1)));
    assert!(wait.as_mut().poll(&mut cx).is_pending());
    tokio::time::advance(Duration::from_millis(2)).await;
    assert_eq!(wait.as_mut().poll(&mut cx), std::task::Poll::Ready(false));
    drop(wait);
    drop(waker);
    // A waker left in the mailbox would keep the finished task's memory alive.
    assert_eq!(Arc::strong_count(&task), 1, "no waker of the task is kept");
    // A wait that an arrival ends says so.
    m.admit(Lane::Application, "a", 1).unwrap();
    assert!(m.try_next().unwrap().is_some());
    let wait = m.arrival_within(Duration::from_millis(1));
    m.wake();
    assert!(wait.await, "the wake ended the wait");
}
