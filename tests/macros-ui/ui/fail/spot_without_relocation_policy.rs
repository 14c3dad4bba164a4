use zlink::object::SpotContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Tick;

struct Room;

// Every Spot type declares exactly one relocation policy.
#[zlink::spot(type = "room")]
impl Room {
    #[handler]
    async fn tick(&mut self, _tick: Tick, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
