//! Spot timers on a real node (TCP listener, embedded store): ticks run as turns of their
//! Spot, follow their overrun policy, and stop when cancelled or when the Spot closes.
//! Over a real `redis-server`: a tick needs a valid owner lease, and ticks of an older
//! incarnation never run after the ID is created again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{Spot, SpotContext, SpotCreation, TimerPolicy, TimerTick};
use zlink::store::{LocationStore, OwnerLeaseSettings};
use zlink::Runtime;
use zlink_testkit::{wait_until, FaultyLocationStore, RedisServer};
use zlink_tests::{discovered_node, quick_lease, redis_store, start};

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

/// Lease timings with room between the admission deadline and the store's expiry: renew
/// every 200 ms with a 300 ms timeout, TTL 4 s, fencing margin 2.5 s. Admission ends 1.5 s
/// after the last renew; the store keeps the lease 2.5 s longer, so a store that comes
/// back in between renews the same lease.
fn roomy_lease() -> OwnerLeaseSettings {
    OwnerLeaseSettings {
        renew_interval: Duration::from_millis(200),
        ttl: Duration::from_secs(4),
        renew_timeout: Duration::from_millis(300),
        fencing_margin: Duration::from_millis(2500),
    }
}

#[tokio::test]
async fn a_tick_needs_a_valid_owner_lease() {
    let redis = RedisServer::start().expect("redis-server");
    let faulty = Arc::new(FaultyLocationStore::new(redis_store(&redis)));
    let store: Arc<dyn LocationStore> = faulty.clone();
    let ticks = Ticks::default();
    let clock_ticks = ticks.clone();
    let a = start(
        discovered_node("a", &store, roomy_lease()).spot_type(
            Clock::spot_type(move |_| Clock {
                ticks: clock_ticks.clone(),
                policy: TimerPolicy::SkipLateTicks,
                first_tick_takes: Duration::ZERO,
            })
            .unwrap(),
        ),
    )
    .await;
    a.spots().get_or_create("c", "clock", "").await.unwrap();
    wait_until(WAIT, "ticks run", || async { seen(&ticks).len() >= 3 }).await;
    let lease = || a.discovery().owner_lease().expect("an owner lease");
    let token = lease().token.expect("a lease token");

    // The store is unreachable: no renew lands, and the admission deadline passes.
    faulty.set_down(true);
    wait_until(WAIT, "a's admission deadline passed", || async {
        !lease().admits_new_work()
    })
    .await;
    // A tick admitted just before the deadline has run by now; none starts after it.
    tokio::time::sleep(PERIOD * 2).await;
    let stopped_at = seen(&ticks).len();
    tokio::time::sleep(PERIOD * 10).await;
    assert_eq!(
        seen(&ticks).len(),
        stopped_at,
        "no tick runs without a valid lease"
    );

    // The store is back before the lease expired there: the same lease renews.
    faulty.set_down(false);
    wait_until(WAIT, "the lease renewed", || async {
        lease().admits_new_work()
    })
    .await;
    assert_eq!(lease().token, Some(token), "the same lease, renewed");
    wait_until(WAIT, "ticks resume", || async {
        seen(&ticks).len() >= stopped_at + 3
    })
    .await;
    let all = seen(&ticks);
    let first_back = &all[stopped_at];
    assert!(
        first_back.skipped >= 10,
        "the ticks due without a lease were skipped, not run late: {first_back:?}"
    );
    for pair in all.windows(2) {
        assert_eq!(pair[1].delivery_index, pair[0].delivery_index + 1);
        assert!(pair[1].scheduled_index > pair[0].scheduled_index);
    }
    a.shutdown().await;
}

/// Every tick the Beacons heard: (the incarnation's generation, the tick).
type Beats = Arc<Mutex<Vec<(u64, TimerTick)>>>;

/// Ticks from creation on, catching up to 5 missed ticks; while `hold` is set, the next
/// tick's handler waits at `gate` (and notes its generation in `released` once past it).
pub struct Beacon {
    beats: Beats,
    hold: Arc<AtomicBool>,
    gate: Arc<tokio::sync::Semaphore>,
    released: Arc<Mutex<Vec<u64>>>,
}

#[zlink::spot(type = "beacon", relocation = disable)]
impl Beacon {
    #[handler]
    async fn stop(&mut self, _stop: Stop, ctx: &SpotContext) -> zlink::Result<Stopped> {
        Ok(Stopped(ctx.cancel_timer("beat")))
    }
}

#[zlink::async_trait]
impl Spot for Beacon {
    async fn on_initialize(&mut self, ctx: &SpotContext) -> zlink::Result<()> {
        ctx.start_timer("beat", PERIOD, TimerPolicy::CatchUpBounded(5))
    }

    async fn on_timer(&mut self, ctx: &SpotContext, tick: TimerTick) -> zlink::Result<()> {
        self.beats.lock().unwrap().push((ctx.generation(), tick));
        if self.hold.swap(false, Ordering::SeqCst) {
            let _pass = self.gate.acquire().await;
            self.released.lock().unwrap().push(ctx.generation());
        }
        Ok(())
    }
}

#[tokio::test]
async fn ticks_of_an_older_incarnation_never_run_after_it_is_created_again() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let beats = Beats::default();
    let hold = Arc::new(AtomicBool::new(true));
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let released = Arc::new(Mutex::new(Vec::new()));
    let beacon = {
        let (beats, hold, gate, released) =
            (beats.clone(), hold.clone(), gate.clone(), released.clone());
        Beacon::spot_type(move |_| Beacon {
            beats: beats.clone(),
            hold: hold.clone(),
            gate: gate.clone(),
            released: released.clone(),
        })
        .unwrap()
    };
    // A close waits this long for a running turn, then stops it.
    let a = start(
        discovered_node("a", &store, quick_lease())
            .request_timeout(Duration::from_millis(500))
            .spot_type(beacon),
    )
    .await;
    let beats_of = |generation: u64| -> Vec<TimerTick> {
        beats
            .lock()
            .unwrap()
            .iter()
            .filter(|(g, _)| *g == generation)
            .map(|(_, tick)| tick.clone())
            .collect()
    };

    let SpotCreation::Created(first, _) = a.spots().get_or_create("b", "beacon", "").await.unwrap()
    else {
        panic!("not created")
    };
    // The first incarnation's first tick holds its turn; its schedule falls behind, with
    // ticks to catch up on queued behind the held one.
    wait_until(WAIT, "the first tick is held", || async {
        beats.lock().unwrap().len() == 1
    })
    .await;
    assert!(a.spots().close(&first).await.unwrap());
    let old = beats_of(first.generation).len();
    assert_eq!(old, 1, "nothing ran behind the held tick");

    let SpotCreation::Created(second, _) =
        a.spots().get_or_create("b", "beacon", "").await.unwrap()
    else {
        panic!("not re-created")
    };
    assert!(second.generation > first.generation);
    // Were the old turn or its schedule still alive, they could go on now.
    gate.add_permits(100);
    wait_until(WAIT, "the new incarnation ticks", || async {
        beats_of(second.generation).len() >= 5
    })
    .await;
    // Absence of the old schedule is observed over five more periods.
    tokio::time::sleep(PERIOD * 5).await;
    assert_eq!(
        beats_of(first.generation).len(),
        old,
        "no tick of the first incarnation ran after it closed"
    );
    assert!(
        released.lock().unwrap().is_empty(),
        "the held turn of the first incarnation never went on"
    );
    let all = beats.lock().unwrap().clone();
    assert!(
        all[old..].iter().all(|(g, _)| *g == second.generation),
        "{all:?}"
    );
    // The new incarnation's ticks come from its own schedule: from the first tick on, in
    // order, nothing carried over from the old one (which had tens of ticks due).
    let new = beats_of(second.generation);
    assert_eq!((new[0].scheduled_index, new[0].skipped), (1, 0), "{new:?}");
    for (i, tick) in new.iter().enumerate() {
        assert_eq!(tick.delivery_index, i as u64 + 1, "{new:?}");
    }
    a.shutdown().await;
}
