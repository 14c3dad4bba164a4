use zlink::object::SpotContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Tick;

struct Room;

#[zlink::spot(type = "room", relocation = disable, relocation = recreate)]
impl Room {
    #[handler]
    async fn tick(&mut self, _tick: Tick, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
