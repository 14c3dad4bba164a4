use zlink::object::SpotContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Tick;

struct Room;

// A Spot runs one turn at a time and owns its state: handlers take `&mut self`.
#[zlink::spot(type = "room", relocation = disable)]
impl Room {
    #[handler]
    async fn tick(&self, _tick: Tick, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
