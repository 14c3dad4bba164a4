//! Spot timers on a real node (TCP listener, embedded store): ticks run as turns of their
//! Spot, follow their overrun policy, and stop when cancelled or when the Spot closes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{Spot, SpotContext, SpotCreation, TimerPolicy, TimerTick};
use zlink::Runtime;
use zlink_testkit::wait_until;

const PERIOD: Duration = Duration::from_millis(20);
const WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Stopped)]
pub struct Stop;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Stopped(pub bool);

type Ticks = Arc<Mutex<Vec<TimerTick>>>;

/// Starts its timer when created; the first tick's handler may run late.
pub struct Clock {
    ticks: Ticks,
    policy: TimerPolicy,
    first_tick_takes: Duration,
}

#[zlink::spot(type = "clock", relocation = disable)]
impl Clock {
    #[handler]
    async fn stop(&mut self, _stop: Stop, ctx: &SpotContext) -> zlink::Result<Stopped> {
        Ok(Stopped(ctx.cancel_timer("beat")))
    }
}

// ANCHOR: timer
#[zlink::async_trait]
impl Spot for Clock {
    async fn on_initialize(&mut self, ctx: &SpotContext) -> zlink::Result<()> {
        ctx.start_timer("beat", PERIOD, self.policy)
    }

    async fn on_timer(&mut self, ctx: &SpotContext, tick: TimerTick) -> zlink::Result<()> {
        assert_eq!(ctx.packet(), Some("beat"));
        let first = tick.delivery_index == 1;
        self.ticks.lock().unwrap().push(tick);
        if first {
            tokio::time::sleep(self.first_tick_takes).await;
        }
        Ok(())
    }
}
// ANCHOR_END: timer

async fn clock_node(ticks: &Ticks, policy: TimerPolicy, first_tick_takes: Duration) -> Runtime {
    let ticks = ticks.clone();
    Runtime::builder()
        .mesh_name("timers")
        .listen("tcp://127.0.0.1:0")
        .location_store(<dyn zlink::store::LocationStore>::in_memory())
        .spot_type(
            Clock::spot_type(move |_| Clock {
                ticks: ticks.clone(),
                policy,
                first_tick_takes,
            })
            .unwrap(),
        )
        .build()
        .unwrap()
        .start()
        .await
        .unwrap()
}

fn seen(ticks: &Ticks) -> Vec<TimerTick> {
    ticks.lock().unwrap().clone()
}

#[tokio::test]
async fn ticks_run_as_turns_and_stop_when_the_timer_is_cancelled() {
    let ticks = Ticks::default();
    let rt = clock_node(&ticks, TimerPolicy::SkipLateTicks, Duration::ZERO).await;
    rt.spots().get_or_create("c", "clock", "").await.unwrap();
    wait_until(WAIT, "three ticks", || async { seen(&ticks).len() >= 3 }).await;
    let stopped = rt.spots().request("c", &Stop).await.unwrap();
    assert!(stopped.0, "the timer was running");
    let after_cancel = seen(&ticks).len();
    // Absence is observed over five periods.
    tokio::time::sleep(PERIOD * 5).await;
    assert_eq!(seen(&ticks).len(), after_cancel, "no tick after the cancel");
    let all = seen(&ticks);
    for pair in all.windows(2) {
        assert!(pair[1].scheduled_index > pair[0].scheduled_index);
        assert_eq!(pair[1].delivery_index, pair[0].delivery_index + 1);
    }
    assert!(
        !rt.spots().request("c", &Stop).await.unwrap().0,
        "already stopped"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn a_late_tick_makes_skip_late_ticks_skip_and_catch_up_bounded_catch_up() {
    for (policy, caught_up) in [
        (TimerPolicy::SkipLateTicks, false),
        (TimerPolicy::CatchUpBounded(3), true),
    ] {
        let ticks = Ticks::default();
        let rt = clock_node(&ticks, policy, PERIOD * 6).await;
        rt.spots().get_or_create("c", "clock", "").await.unwrap();
        wait_until(WAIT, "four ticks", || async { seen(&ticks).len() >= 4 }).await;
        let all = seen(&ticks);
        // The first handler took six periods: ticks fell due meanwhile.
        let second = &all[1];
        if caught_up {
            // Up to three missed ticks run back to back, in order.
            assert_eq!(
                all[2].scheduled_index,
                second.scheduled_index + 1,
                "{all:?}"
            );
            assert_eq!(all[2].skipped, 0, "{all:?}");
        } else {
            assert!(second.skipped >= 3, "{all:?}");
        }
        rt.shutdown().await;
    }
}

#[tokio::test]
async fn delay_next_tick_waits_a_period_after_the_handler() {
    let ticks = Ticks::default();
    let rt = clock_node(&ticks, TimerPolicy::DelayNextTick, PERIOD * 4).await;
    rt.spots().get_or_create("c", "clock", "").await.unwrap();
    wait_until(WAIT, "two ticks", || async { seen(&ticks).len() >= 2 }).await;
    let all = seen(&ticks);
    assert_eq!(
        (all[1].scheduled_index, all[1].skipped),
        (2, 0),
        "nothing is skipped"
    );
    let gap = all[1].scheduled_at - all[0].scheduled_at;
    assert!(
        gap >= PERIOD * 5,
        "the second tick waited for the handler: {gap:?}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn closing_a_spot_stops_its_timers() {
    let ticks = Ticks::default();
    let rt = clock_node(&ticks, TimerPolicy::SkipLateTicks, Duration::ZERO).await;
    let SpotCreation::Created(clock, _) = rt.spots().get_or_create("c", "clock", "").await.unwrap()
    else {
        panic!("not created")
    };
    wait_until(WAIT, "a tick", || async { !seen(&ticks).is_empty() }).await;
    assert!(rt.spots().close(&clock).await.unwrap());
    let at_close = seen(&ticks).len();
    tokio::time::sleep(PERIOD * 5).await;
    assert_eq!(seen(&ticks).len(), at_close, "no tick of a closed Spot");
    rt.shutdown().await;
}
