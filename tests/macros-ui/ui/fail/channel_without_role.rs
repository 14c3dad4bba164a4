use zlink::HandlerContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Note;

struct Service;

#[zlink::channel(name = "notes")]
impl Service {
    #[handler]
    async fn note(&self, _note: Note, _ctx: &HandlerContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
