use zlink::HandlerContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Ping;

#[derive(Clone)]
struct Service;

// The handler's mistake is the only error: serving the group and making its client still
// type-check against stand-ins.
#[zlink::channel(server, name = "ping")]
impl Service {
    #[handler]
    async fn ping(&self, _ping: Ping) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {
    let _ = zlink::Runtime::builder().serve(Service);
    let _: fn(zlink::Handle) -> ServiceClient = |handle| ServiceClient::on_default_channel(handle);
}
