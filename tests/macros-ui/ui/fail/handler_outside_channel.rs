use zlink::{handler, HandlerContext};

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Note;

struct Service;

// The block lacks #[zlink::channel(server)].
impl Service {
    #[handler]
    async fn note(&self, _note: Note, _ctx: &HandlerContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
