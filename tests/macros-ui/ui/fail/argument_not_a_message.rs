use zlink::HandlerContext;

#[derive(serde::Serialize, serde::Deserialize)]
struct Plain;

struct Service;

#[zlink::channel(server)]
impl Service {
    #[handler]
    async fn plain(&self, _plain: Plain, _ctx: &HandlerContext) -> zlink::Result<()> {
        Ok(())
    }
}

fn main() {}
