use zlink::session::SessionContext;

// CBOR (the default codec) is not a codec a STREAM client reads.
#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Chat;

struct Lobby;

#[zlink::session]
impl Lobby {
    #[handler]
    async fn chat(&mut self, _chat: Chat, _ctx: &SessionContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
