use zlink::HandlerContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(reply = Pong)]
struct Ping;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Pong;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct NotPong;

struct Service;

#[zlink::channel(server)]
impl Service {
    #[handler]
    async fn ping(&self, _ping: Ping, _ctx: &HandlerContext) -> zlink::Result<NotPong> {
        Ok(NotPong)
    }
}

fn main() {}
