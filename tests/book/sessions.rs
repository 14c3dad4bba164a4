//! The code shown in the book's "Sessions" chapter, run against a real TCP client.

use std::time::Duration;

use serde_json::json;
use zlink_testkit::stream_client::{kind, StreamClient};

// ANCHOR: messages
use serde::{Deserialize, Serialize};

/// A client logs in: a request, answered with a [`Welcome`].
#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "login", codec = zlink::Json, reply = Welcome)]
pub struct Login {
    pub user: String,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "welcome", codec = zlink::Json)]
pub struct Welcome {
    pub user: String,
    pub online: u64,
}

/// A one-way chat line from the client, and the line the server pushes back.
#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "say", codec = zlink::Json)]
pub struct Say {
    pub text: String,
}
// ANCHOR_END: messages

// ANCHOR: session
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use zlink::session::{CloseReason, SessionContext};
use zlink::{Error, ErrorKind};

/// One client connection. The listener makes a fresh value per connection.
pub struct Lobby {
    online: Arc<AtomicU64>,
    user: Option<String>,
}

#[zlink::session]
impl Lobby {
    #[on_connected]
    async fn connected(&mut self, _ctx: &SessionContext) -> zlink::Result<()> {
        self.online.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    #[handler]
    async fn login(&mut self, login: Login, _ctx: &SessionContext) -> zlink::Result<Welcome> {
        if login.user.is_empty() {
            return Err(Error::new(ErrorKind::Rejected, "a user name is required"));
        }
        self.user = Some(login.user.clone());
        Ok(Welcome {
            user: login.user,
            online: self.online.load(Ordering::SeqCst),
        })
    }

    #[handler]
    async fn say(&mut self, say: Say, ctx: &SessionContext) -> zlink::Result<()> {
        let Some(user) = &self.user else {
            return Err(Error::new(ErrorKind::InvalidOperation, "log in first"));
        };
        // Pushed to this client as a Send packet.
        ctx.send(&Say {
            text: format!("{user}: {}", say.text),
        })
        .await
    }

    #[on_disconnected]
    async fn disconnected(&mut self, _reason: CloseReason, _ctx: &SessionContext) {
        self.online.fetch_sub(1, Ordering::SeqCst);
    }
}
// ANCHOR_END: session

// ANCHOR: listener
use zlink::session::StreamListener;
use zlink::Runtime;

pub async fn gateway() -> zlink::Result<Runtime> {
    let online = Arc::new(AtomicU64::new(0));
    let clients = StreamListener::new("clients")
        .bind("tcp://127.0.0.1:0")
        .max_sessions(5_000)
        .session(move || Lobby {
            online: online.clone(),
            user: None,
        });
    Runtime::builder()
        .mesh_name("chat")
        .listen("tcp://127.0.0.1:0")
        .stream_listener(clients)
        .build()?
        .start()
        .await
}
// ANCHOR_END: listener

#[tokio::test]
async fn the_sessions_chapter_lobby_logs_in_and_chats() {
    let gateway = gateway().await.unwrap();
    // ANCHOR: endpoint
    let endpoint = gateway
        .stream_endpoint("clients")
        .expect("the listener is bound");
    // e.g. "tcp://127.0.0.1:40123": give clients this address.
    // ANCHOR_END: endpoint
    let address = endpoint.trim_start_matches("tcp://");
    let wait = Duration::from_secs(5);
    let mut client = StreamClient::tcp(address).await.unwrap();
    let early = client
        .call_json(1, "say", json!({"text": "hi"}), wait)
        .await;
    // `say` is one-way: as a request it is refused, and it never ran.
    assert_eq!(early.unwrap().kind, kind::ERROR);
    let welcome = client
        .call_json(2, "login", json!({"user": "ann"}), wait)
        .await
        .unwrap();
    assert_eq!(welcome.value()["online"], 1);
    client
        .send_json("say", json!({"text": "hello"}))
        .await
        .unwrap();
    let line = client.next(wait).await.unwrap();
    assert_eq!(line.value()["text"], "ann: hello");
    gateway.shutdown().await;
}
