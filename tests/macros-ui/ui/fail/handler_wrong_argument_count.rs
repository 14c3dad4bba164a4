use zlink::HandlerContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(reply = Pong)]
struct Ping;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Pong;

struct Service;

#[zlink::channel(server)]
impl Service {
    #[handler]
    async fn ping(&self, _ping: Ping) -> zlink::Result<Pong> {
        Ok(Pong)
    }

    #[handler]
    async fn pong(&self, _pong: Pong, _ctx: &HandlerContext, _extra: u32) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
