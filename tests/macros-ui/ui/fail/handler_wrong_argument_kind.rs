use zlink::HandlerContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(reply = Pong)]
struct Ping;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Pong;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Note;

struct Service;

#[zlink::channel(server)]
impl Service {
    // A group is shared by concurrent calls: `&mut self` is refused.
    #[handler]
    async fn ping(&mut self, _ping: Ping, _ctx: &HandlerContext) -> zlink::Result<Pong> {
        Ok(Pong)
    }

    // The message is owned by the handler.
    #[handler]
    async fn pong(&self, _pong: &Pong, _ctx: &HandlerContext) -> zlink::Result<()> {
        Ok(())
    }

    // Context and message swapped.
    #[handler]
    async fn note(&self, _ctx: &HandlerContext, _note: Note) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
