use zlink::session::StreamListener;

#[derive(Default)]
struct Lobby;

// The listener is declared with StreamListener, not on the session type.
#[zlink::session(bind = "tcp://0.0.0.0:9001")]
impl Lobby {}

fn main() {
    // The stand-in impl keeps this line free of a second error.
    let _ = StreamListener::new("gateway").session(Lobby::default);
}
