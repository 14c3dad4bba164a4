use zlink::object::SpotContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(reply = Ack)]
struct News;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Ack;

struct Observer;

// A multicast event has nobody waiting for a reply: a subscription handler is one-way.
#[zlink::spot(type = "observer", relocation = disable)]
impl Observer {
    #[subscribe(channel = "rooms", topic = "announce")]
    async fn news(&mut self, _news: News, _ctx: &SpotContext) -> zlink::Result<Ack> {
        Ok(Ack)
    }
}

impl zlink::object::Spot for Observer {}

fn main() {}
