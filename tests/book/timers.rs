//! The code of the Spots chapter's "Timers" section: a Spot that counts its own beats.

// ANCHOR: timer
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{SpotContext, TimerPolicy, TimerTick};

/// How often a Heartbeat beats.
const PERIOD: Duration = Duration::from_millis(20);

/// Asks a Heartbeat how many times it beat.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Beats)]
pub struct CountBeats;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Beats(pub u64);

/// Beats every PERIOD from the moment it starts.
#[derive(Default)]
pub struct Heartbeat {
    beats: u64,
}

// The lifecycle hooks are methods of the block too (#[on_initialize], #[on_timer],
// #[on_closing]): the macro writes the Spot impl, so there is none to write here.
#[zlink::spot(type = "heartbeat", relocation = disable)]
impl Heartbeat {
    #[handler]
    async fn count(&mut self, _ask: CountBeats, _ctx: &SpotContext) -> zlink::Result<Beats> {
        Ok(Beats(self.beats))
    }

    #[on_initialize]
    async fn start(&mut self, ctx: &SpotContext) -> zlink::Result<()> {
        ctx.start_timer("beat", PERIOD, TimerPolicy::SkipLateTicks)
    }

    /// Each tick is a turn of the Spot: never alongside a handler.
    #[on_timer]
    async fn beat(&mut self, tick: TimerTick, _ctx: &SpotContext) -> zlink::Result<()> {
        self.beats = tick.delivery_index;
        Ok(())
    }
}
// ANCHOR_END: timer

#[tokio::test]
async fn a_heartbeat_beats_on_its_own() -> zlink::Result<()> {
    let store = <dyn zlink::store::LocationStore>::in_memory();
    let rt = zlink::Runtime::builder()
        .mesh_name("book")
        .listen("tcp://127.0.0.1:0")
        .location_store(store)
        .spot_type(Heartbeat::spot_type(|_| Heartbeat::default())?)
        .build()?
        .start()
        .await?;
    rt.spots().ready(Heartbeat::STABLE_TYPE, 1).await?;
    rt.spots()
        .get_or_create("pulse", Heartbeat::STABLE_TYPE, zlink::Bytes::new())
        .await?;
    let pulse = HeartbeatClient::new(&rt, "pulse");
    zlink_testkit::wait_until(Duration::from_secs(5), "three beats", || async {
        pulse.count(CountBeats).await.is_ok_and(|b| b.0 >= 3)
    })
    .await;
    rt.shutdown().await;
    Ok(())
}
