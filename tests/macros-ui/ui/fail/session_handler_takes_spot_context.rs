use zlink::object::SpotContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(codec = zlink::Json)]
struct Chat;

struct Lobby;

// A session's handlers take the session context.
#[zlink::session]
impl Lobby {
    #[handler]
    async fn chat(&mut self, _chat: Chat, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
