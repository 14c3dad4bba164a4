use zlink::object::SpotContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Move;

struct Player;

// An Actor's handlers see the Actor's context, not a Spot's.
#[zlink::actor(type = "player", relocation = recreate)]
impl Player {
    #[handler]
    async fn step(&mut self, _step: Move, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
