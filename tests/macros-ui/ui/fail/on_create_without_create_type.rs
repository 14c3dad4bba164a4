use zlink::object::{CreateDecision, SpotContext};

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct OpenHall;

struct Hall;

// `#[on_create]` takes the creation arguments the attribute declares: here it declares none.
#[zlink::spot(type = "hall", relocation = disable)]
impl Hall {
    #[on_create]
    async fn open(&mut self, _args: OpenHall, _ctx: &SpotContext) -> CreateDecision {
        CreateDecision::Accept(zlink::Bytes::new())
    }
}

impl zlink::object::Spot for Hall {}

fn main() {}
