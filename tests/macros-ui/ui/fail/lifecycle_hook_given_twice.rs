use zlink::object::{SpotContext, TimerTick};

struct Clock;

// One method per lifecycle hook.
#[zlink::spot(type = "clock", relocation = disable)]
impl Clock {
    #[on_timer]
    async fn tick(&mut self, _tick: TimerTick, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }

    #[on_timer]
    async fn tock(&mut self, _tick: TimerTick, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
