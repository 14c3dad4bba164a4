use zlink::HandlerContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(name = "note")]
struct Note;

// A different type that claims the same packet name.
#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(name = "note")]
struct OtherNote;

struct Service;

#[zlink::channel(server)]
impl Service {
    #[handler]
    async fn note(&self, _note: Note, _ctx: &HandlerContext) -> zlink::Result<()> {
        Ok(())
    }

    #[handler]
    async fn other_note(&self, _note: OtherNote, _ctx: &HandlerContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
