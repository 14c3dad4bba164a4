//! The code shown in the book's "Sessions" chapter, run against a real TCP client.

use std::time::Duration;

use serde_json::json;
use zlink_testkit::stream_client::{kind, StreamClient};

zlink_book_snippets::snippet!("sessions.md", "messages");

zlink_book_snippets::snippet!("sessions.md", "session");

zlink_book_snippets::snippet!("sessions.md", "listener");

#[tokio::test]
async fn the_sessions_chapter_lobby_logs_in_and_chats() {
    let gateway = gateway().await.unwrap();
    zlink_book_snippets::statements!("sessions.md", "endpoint");
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
