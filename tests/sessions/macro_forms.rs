//! The forms `#[zlink::session]` accepts compile and behave: an empty block (every packet
//! to the default `on_packet`), a handler returning another error type, a renamed crate path.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::session::{SessionContext, StreamListener};
use zlink_testkit::stream_client::{kind, StreamClient};

#[derive(Default)]
struct Silent;

#[zlink::session]
impl Silent {}

#[derive(Debug)]
struct AppError(String);

impl From<AppError> for zlink::Error {
    fn from(e: AppError) -> Self {
        zlink::Error::new(zlink::ErrorKind::Rejected, e.0)
    }
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "login", codec = zlink::Json, reply = Welcome)]
struct Login {
    user: String,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "welcome", codec = zlink::Json)]
struct Welcome {
    user: String,
}

#[derive(Default)]
struct Gate;

#[zlink::session(crate = "::zlink")]
impl Gate {
    #[handler]
    async fn login(&mut self, login: Login, _ctx: &SessionContext) -> Result<Welcome, AppError> {
        if login.user.is_empty() {
            return Err(AppError("no user".into()));
        }
        Ok(Welcome { user: login.user })
    }
}

async fn serve(listener: StreamListener) -> (zlink::Runtime, String) {
    let runtime = zlink::Runtime::builder()
        .mesh_name("forms")
        .listen("tcp://127.0.0.1:0")
        .stream_listener(listener)
        .build()
        .expect("valid")
        .start()
        .await
        .expect("starts");
    let endpoint = runtime.stream_endpoint("l").expect("bound");
    let address = endpoint.trim_start_matches("tcp://").to_string();
    (runtime, address)
}

#[tokio::test]
async fn an_empty_session_block_answers_every_request_not_found() {
    let (runtime, address) = serve(
        StreamListener::new("l")
            .bind("tcp://127.0.0.1:0")
            .session(|| Silent),
    )
    .await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    let answer = client
        .call_json(1, "anything", serde_json::json!({}), Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(answer.kind, kind::ERROR);
    assert_eq!(answer.error().unwrap().0, zlink::ErrorKind::NotFound.code());
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_handler_error_type_converts_into_the_error_packet_kind() {
    let (runtime, address) = serve(
        StreamListener::new("l")
            .bind("tcp://127.0.0.1:0")
            .session(|| Gate),
    )
    .await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    let welcome = client
        .call_json(
            1,
            "login",
            serde_json::json!({"user": "ann"}),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(welcome.kind, kind::RESPONSE);
    assert_eq!(welcome.value()["user"], "ann");
    let refused = client
        .call_json(
            2,
            "login",
            serde_json::json!({"user": ""}),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(
        refused.error().unwrap(),
        (zlink::ErrorKind::Rejected.code(), "no user".into())
    );
    runtime.shutdown().await;
}
