use zlink::HandlerContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Note;

struct Empty;

#[zlink::channel(server, name = "")]
impl Empty {
    #[handler]
    async fn note(&self, _note: Note, _ctx: &HandlerContext) -> zlink::Result<()> {
        Ok(())
    }
}

struct NotText;

#[zlink::channel(server, name = pricing)]
impl NotText {
    #[handler]
    async fn note(&self, _note: Note, _ctx: &HandlerContext) -> zlink::Result<()> {
        Ok(())
    }
}

struct TooLong;

#[zlink::channel(
    server,
    name = "a-channel-name-that-goes-on-and-on-and-on-a-channel-name-that-goes-on-and-on-and-on-a-channel-name-that-goes-on-and-on-and-on-a-channel-name-that-goes-on-and-on-and-on-a-channel-name-that-goes-on-and-on-and-on-a-channel-name-that-goes-on-and-on-and-on-and-on"
)]
impl TooLong {
    #[handler]
    async fn note(&self, _note: Note, _ctx: &HandlerContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
