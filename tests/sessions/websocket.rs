//! The same packets over WebSocket, one per binary message, so a browser can connect.

use std::sync::atomic::Ordering;

use serde_json::json;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use zlink::session::{CloseReason, StreamLimits};
use zlink_testkit::stream_client::{kind, StreamClient};

use crate::common::{chat_node, WAIT};

#[tokio::test]
async fn a_websocket_client_speaks_the_same_packets_one_per_binary_message() {
    let (runtime, counters, address) = chat_node("ws", StreamLimits::default()).await;
    let mut client = StreamClient::websocket(&address).await.unwrap();
    for seq in 1..=16u64 {
        let echo = client
            .call_json(seq, "echo", json!({ "text": format!("w{seq}") }), WAIT)
            .await
            .unwrap();
        assert_eq!(
            (echo.kind, echo.value()["count"].as_u64()),
            (kind::RESPONSE, Some(seq))
        );
    }
    client
        .send_json("note", json!({ "text": "hi" }))
        .await
        .unwrap();
    let push = client.next(WAIT).await.unwrap();
    assert_eq!(
        (push.kind, push.value()["text"].as_str()),
        (kind::SEND, Some("heard hi"))
    );
    assert_eq!(counters.notes.load(Ordering::SeqCst), 1);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_websocket_message_over_the_cap_closes_only_that_session() {
    let (runtime, counters, address) = chat_node("ws", StreamLimits::default()).await;
    let mut bystander = StreamClient::websocket(&address).await.unwrap();
    let mut attacker = StreamClient::websocket(&address).await.unwrap();
    let big = "z".repeat(70 * 1024);
    // tungstenite refuses the frame on read: the session closes without the packet.
    let _ = attacker.send_json("note", json!({ "text": big })).await;
    let _ = attacker.closed_with(WAIT).await;
    let echo = bystander
        .call_json(1, "echo", json!({ "text": "ok" }), WAIT)
        .await
        .unwrap();
    assert_eq!(echo.kind, kind::RESPONSE);
    zlink_testkit::wait_until(WAIT, "the attacker's session ended", || async {
        counters.disconnected.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(counters.notes.load(Ordering::SeqCst), 0);
    assert_eq!(counters.reasons(), vec![CloseReason::ProtocolError]);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_websocket_text_message_is_refused_with_protocol_error() {
    use futures::{SinkExt, StreamExt};
    let (runtime, counters, address) = chat_node("ws", StreamLimits::default()).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{address}/"))
        .await
        .unwrap();
    ws.send(WsMessage::Text("{\"hello\":1}".into()))
        .await
        .unwrap();
    // The server closes; whatever it says last, the stream ends.
    let ended =
        tokio::time::timeout(WAIT, async { while let Some(Ok(_)) = ws.next().await {} }).await;
    assert!(ended.is_ok(), "the server closed the connection");
    zlink_testkit::wait_until(WAIT, "the session ended", || async {
        counters.disconnected.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(counters.reasons(), vec![CloseReason::ProtocolError]);
    runtime.shutdown().await;
}
