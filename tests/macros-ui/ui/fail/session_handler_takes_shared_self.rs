use zlink::session::SessionContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(codec = zlink::Json)]
struct Chat;

struct Lobby;

// A session handles one packet at a time and owns its state: handlers take `&mut self`.
#[zlink::session]
impl Lobby {
    #[handler]
    async fn chat(&self, _chat: Chat, _ctx: &SessionContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
