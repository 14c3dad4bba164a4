use zlink::object::{Actor, ActorContext};

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Ping;

struct Player;

#[zlink::actor(type = "player", relocation = disable, on_owner_lost = restart)]
impl Player {
    #[handler]
    async fn ping(&mut self, _ping: Ping, _ctx: &ActorContext) -> zlink::Result<()> {
        Ok(())
    }
}

impl Actor for Player {}

fn main() {}
