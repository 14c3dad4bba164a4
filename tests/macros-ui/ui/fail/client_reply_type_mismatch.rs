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
    async fn ping(&self, _ping: Ping, _ctx: &HandlerContext) -> zlink::Result<Pong> {
        Ok(Pong)
    }
}

// The reply type comes from the request: expecting another type does not compile.
async fn call(client: &ServiceClient) -> zlink::Result<NotPong> {
    client.ping(&Ping).await
}

fn main() {}
