use zlink::HandlerContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Note;

struct Service;

#[zlink::channel(server)]
impl Service {
    #[handler]
    async fn first(&self, _note: Note, _ctx: &HandlerContext) -> zlink::Result<()> {
        Ok(())
    }

    #[handler]
    async fn second(&self, _note: Note, _ctx: &HandlerContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
