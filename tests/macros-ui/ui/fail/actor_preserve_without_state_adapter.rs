use zlink::object::ActorContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Move;

struct Player;

// `relocation = preserve` needs the type's state adapter (`impl RelocationState`).
#[zlink::actor(type = "player", relocation = preserve)]
impl Player {
    #[handler]
    async fn step(&mut self, _step: Move, _ctx: &ActorContext) -> zlink::Result<()> {
        Ok(())
    }
}

impl zlink::object::Actor for Player {}

fn main() {}
