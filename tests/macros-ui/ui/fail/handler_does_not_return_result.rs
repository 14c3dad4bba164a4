use zlink::HandlerContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Note;

struct Service;

#[zlink::channel(server)]
impl Service {
    #[handler]
    async fn note(&self, _note: Note, _ctx: &HandlerContext) {}
}

fn main() {}
