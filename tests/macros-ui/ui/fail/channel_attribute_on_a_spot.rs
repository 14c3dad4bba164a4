use zlink::object::SpotContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Tick;

struct Room;

// A Spot's handlers (`&mut self`, `SpotContext`) under the channel attribute.
#[zlink::channel(server)]
impl Room {
    #[handler]
    async fn tick(&mut self, _tick: Tick, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
