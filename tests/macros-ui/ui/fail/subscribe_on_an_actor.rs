use zlink::object::ActorContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct News;

struct Player;

// Logical Multicast delivers to Spots only.
#[zlink::actor(type = "player", relocation = disable)]
impl Player {
    #[subscribe(channel = "rooms", topic = "announce")]
    async fn news(&mut self, _news: News, _ctx: &ActorContext) -> zlink::Result<()> {
        Ok(())
    }
}

impl zlink::object::Actor for Player {}

fn main() {}
