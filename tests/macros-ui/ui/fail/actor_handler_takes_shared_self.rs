use zlink::object::ActorContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Move;

struct Player;

// An Actor runs one turn at a time and owns its state: handlers take `&mut self`.
#[zlink::actor(type = "player", relocation = recreate)]
impl Player {
    #[handler]
    async fn step(&self, _step: Move, _ctx: &ActorContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
