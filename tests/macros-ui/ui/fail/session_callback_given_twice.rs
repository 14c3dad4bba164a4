use zlink::session::{CloseReason, SessionContext};

struct Lobby;

#[zlink::session]
impl Lobby {
    #[on_disconnected]
    async fn gone(&mut self, _reason: CloseReason, _ctx: &SessionContext) {}

    #[on_disconnected]
    async fn gone_again(&mut self, _reason: CloseReason, _ctx: &SessionContext) {}
}

fn main() {}
