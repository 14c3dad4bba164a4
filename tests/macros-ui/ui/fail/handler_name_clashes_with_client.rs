use zlink::HandlerContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Note;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Other;

struct Service;

#[zlink::channel(server)]
impl Service {
    #[handler]
    async fn new(&self, _note: Note, _ctx: &HandlerContext) -> zlink::Result<()> {
        Ok(())
    }

    #[handler]
    async fn channel_name(&self, _other: Other, _ctx: &HandlerContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
