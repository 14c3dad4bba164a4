//! The context may be taken by value; any error type that converts into `zlink::Error`
//! may be returned; `#[zlink::handler]` may be written with its path.

use zlink::HandlerContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(reply = Ack)]
struct Store(String);

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Ack;

#[derive(Debug)]
enum StoreError {
    Full,
}

impl From<StoreError> for zlink::Error {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Full => zlink::Error::new(zlink::ErrorKind::CapacityExceeded, "full"),
        }
    }
}

struct Storage;

#[zlink::channel(server)]
impl Storage {
    #[zlink::handler]
    async fn store(&self, item: Store, ctx: HandlerContext) -> Result<Ack, StoreError> {
        if item.0.is_empty() || ctx.channel().is_none() {
            return Err(StoreError::Full);
        }
        Ok(Ack)
    }
}

#[test]
fn context_by_value_and_custom_error() {
    fn is_group<G: zlink::HandlerGroup>(_: &G) {}
    is_group(&Storage);
}
