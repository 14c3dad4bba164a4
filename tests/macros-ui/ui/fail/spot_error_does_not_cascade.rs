use zlink::object::{Spot, SpotContext};

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Tick;

struct Room;

// The handler's mistake is the only error: the rest of the program, which names what
// the macro generates (the Spot trait's supertrait, the registration, the client), still
// type-checks against stand-ins.
#[zlink::spot(type = "room", relocation = disable)]
impl Room {
    #[handler]
    async fn tick(&self, _tick: Tick, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }
}

impl Spot for Room {}

fn main() {
    let _ = Room::spot_type(|_| Room);
    let _ = Room::STABLE_TYPE;
    let _: fn(zlink::Handle) -> RoomClient = |handle| RoomClient::new(handle, "room-1");
}
