// A method shaped like a handler but not marked is never dispatched: the macro warns
// (denied here, so the warning shows as this case's output).
#![deny(deprecated)]

use zlink::object::SpotContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Tick;

struct Room;

#[zlink::spot(type = "room", relocation = disable)]
impl Room {
    #[handler]
    async fn marked(&mut self, _tick: Tick, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }

    async fn forgotten(&mut self, _tick: Tick, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }

    // A helper that means it.
    #[allow(deprecated)]
    async fn helper(&mut self, _n: u32, _ctx: &SpotContext) {}
}

impl zlink::object::Spot for Room {}

fn main() {}
