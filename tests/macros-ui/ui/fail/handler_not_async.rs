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
    fn ping(&self, _ping: Ping, _ctx: &HandlerContext) -> zlink::Result<Pong> {
        Ok(Pong)
    }
}

fn main() {}
