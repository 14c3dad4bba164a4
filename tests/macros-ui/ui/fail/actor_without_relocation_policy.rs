use zlink::object::ActorContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Move;

struct Player;

// Every Actor type declares exactly one relocation policy.
#[zlink::actor(type = "player")]
impl Player {
    #[handler]
    async fn step(&mut self, _step: Move, _ctx: &ActorContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
