use zlink::object::{ActorRef, JoinDecision, SpotContext};
use zlink::Bytes;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Tick;

struct Room;

// A Spot's Actor callbacks run only when it declares the Actor type it takes
// (`actors = Player`).
#[zlink::spot(type = "room", relocation = disable)]
impl Room {
    #[handler]
    async fn tick(&mut self, _tick: Tick, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }

    #[on_actor_join]
    async fn admit(&mut self, _actor: &ActorRef, _request: Bytes, _ctx: &SpotContext) -> JoinDecision {
        JoinDecision::Accept(Bytes::new())
    }
}

fn main() {}
