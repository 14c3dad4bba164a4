use zlink::object::SpotContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(reply = Count)]
struct Join;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Count(u32);

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Welcome;

struct Room;

#[zlink::spot(type = "room", relocation = disable)]
impl Room {
    // `Join` declares `Count` as its reply; a `u64` is not even a message.
    #[handler]
    async fn join(&mut self, _join: Join, _ctx: &SpotContext) -> zlink::Result<u64> {
        Ok(1)
    }
}

impl zlink::object::Spot for Room {}

fn main() {}
