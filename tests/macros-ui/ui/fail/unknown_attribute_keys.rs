use zlink::HandlerContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(packet = "note")]
struct Note;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Other;

struct Service;

#[zlink::channel(server, weight = 100)]
impl Service {
    #[handler]
    async fn other(&self, _other: Other, _ctx: &HandlerContext) -> zlink::Result<()> {
        Ok(())
    }
}

struct Second;

#[zlink::channel(server)]
impl Second {
    #[handler(send)]
    async fn other(&self, _other: Other, _ctx: &HandlerContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
