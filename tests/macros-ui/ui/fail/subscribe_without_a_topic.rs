use zlink::object::SpotContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct News;

struct Observer;

// A subscription names both its channel and its topic.
#[zlink::spot(type = "observer", relocation = disable)]
impl Observer {
    #[subscribe(channel = "rooms")]
    async fn news(&mut self, _news: News, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }
}

impl zlink::object::Spot for Observer {}

fn main() {}
