use zlink::HandlerContext;

// No `#[message(reply = ...)]`: this is not a request.
#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Ping;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Pong;

struct Service;

#[zlink::channel(server)]
impl Service {
    #[handler]
    async fn ping(&self, _ping: Ping, _ctx: &HandlerContext) -> zlink::Result<Pong> {
        Ok(Pong)
    }
}

fn main() {}
