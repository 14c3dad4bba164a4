use zlink::session::SessionContext;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(codec = zlink::Json, reply = Welcome)]
struct Login;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(codec = zlink::Json)]
struct Welcome;

struct Lobby;

// The Response packet is the request's declared reply type, nothing else.
#[zlink::session]
impl Lobby {
    #[handler]
    async fn login(&mut self, _login: Login, _ctx: &SessionContext) -> zlink::Result<u64> {
        Ok(7)
    }
}

fn main() {}
