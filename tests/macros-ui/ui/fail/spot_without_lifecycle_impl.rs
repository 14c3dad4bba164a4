use zlink::object::SpotContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Tick;

struct Room;

#[zlink::spot(type = "room", relocation = disable)]
impl Room {
    #[handler]
    async fn tick(&mut self, _tick: Tick, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }
}

// No `impl zlink::object::Spot for Room {}`: registering the type says what is missing.
fn main() {
    let _ = Room::spot_type(|_| Room);
}
