//! What a well-behaved client sees: requests answered exactly once under their sequence,
//! one serial lane per session, pushes, error packets, heartbeats, and a reconnect that is
//! a new session.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;
use zlink::session::{CloseReason, StreamLimits};
use zlink::ErrorKind;
use zlink_testkit::stream_client::{kind, ReadEnd, StreamClient, StreamPacket};
use zlink_testkit::wait_until;

use crate::common::{chat_node, WAIT};

#[tokio::test]
async fn every_request_gets_exactly_one_response_under_its_sequence_in_lane_order() {
    let (runtime, _, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    for seq in 1..=64u64 {
        client
            .request_json(seq, "echo", json!({ "text": format!("m{seq}") }))
            .await
            .unwrap();
    }
    let mut answers = Vec::new();
    while answers.len() < 64 {
        let packet = client.next(WAIT).await.expect("an answer");
        assert_eq!(packet.kind, kind::RESPONSE, "{packet:?}");
        answers.push(packet);
    }
    for (i, answer) in answers.iter().enumerate() {
        let seq = i as u64 + 1;
        assert_eq!(answer.request_seq, Some(seq));
        assert_eq!(answer.value()["text"], format!("m{seq}"));
        // One lane: the session's state saw the requests one at a time, in order.
        assert_eq!(answer.value()["count"], seq);
    }
    // Nothing more: no second answer to any of them.
    assert!(client.next(Duration::from_millis(200)).await.is_err());
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_send_packet_reaches_its_handler_and_the_session_pushes_to_its_client() {
    let (runtime, counters, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    client
        .send_json("note", json!({ "text": "hi" }))
        .await
        .unwrap();
    let push = client.next(WAIT).await.unwrap();
    assert_eq!(push.kind, kind::SEND);
    assert_eq!(push.name, "note");
    assert_eq!(push.request_seq, None);
    assert_eq!(push.value()["text"], "heard hi");
    assert_eq!(counters.notes.load(Ordering::SeqCst), 1);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_failing_handler_answers_an_error_packet_with_its_kind_and_the_session_lives_on() {
    let (runtime, _, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    let error = client
        .call_json(7, "fail", json!({ "kind": "rejected" }), WAIT)
        .await
        .unwrap();
    let (code, message) = error.error().expect("an Error packet");
    assert_eq!(code, ErrorKind::Rejected.code());
    assert!(message.contains("asked to fail"), "{message}");
    let echo = client
        .call_json(8, "echo", json!({ "text": "still" }), WAIT)
        .await
        .unwrap();
    assert_eq!(echo.kind, kind::RESPONSE);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_packet_no_handler_names_goes_to_on_packet() {
    let (runtime, _, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    let mut raw = StreamPacket {
        kind: kind::REQUEST,
        codec: 0,
        request_seq: Some(1),
        name: "raw-echo".into(),
        payload: vec![0, 1, 2, 255],
        ..StreamPacket::default()
    };
    client.write(&raw).await.unwrap();
    let echoed = client.next(WAIT).await.unwrap();
    assert_eq!((echoed.kind, echoed.codec), (kind::RESPONSE, 0));
    assert_eq!(echoed.payload, vec![0, 1, 2, 255]);
    raw.name = "nobody".into();
    raw.request_seq = Some(2);
    client.write(&raw).await.unwrap();
    let missing = client.next(WAIT).await.unwrap();
    assert_eq!(missing.request_seq, Some(2));
    assert_eq!(missing.error().unwrap().0, ErrorKind::NotFound.code());
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_packet_sent_as_the_wrong_kind_for_its_handler_is_refused_not_handled() {
    let (runtime, counters, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    // `note` is one-way: as a request it is answered with an error, never handled.
    let refused = client
        .call_json(1, "note", json!({ "text": "x" }), WAIT)
        .await
        .unwrap();
    assert_eq!(
        refused.error().unwrap().0,
        ErrorKind::InvalidOperation.code()
    );
    // `echo` is a request: sent one-way, the session reports a sequence-less error.
    client
        .send_json("echo", json!({ "text": "x" }))
        .await
        .unwrap();
    let error = client.next(WAIT).await.unwrap();
    assert_eq!((error.kind, error.request_seq), (kind::ERROR, None));
    assert_eq!(counters.notes.load(Ordering::SeqCst), 0);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_malformed_payload_is_answered_as_an_error_for_its_sequence() {
    let (runtime, _, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    let mut packet = StreamPacket::json(kind::REQUEST, "echo", &json!({ "wrong": 1 }));
    packet.request_seq = Some(3);
    client.write(&packet).await.unwrap();
    let error = client.next(WAIT).await.unwrap();
    assert_eq!((error.kind, error.request_seq), (kind::ERROR, Some(3)));
    let echo = client
        .call_json(4, "echo", json!({ "text": "ok" }), WAIT)
        .await
        .unwrap();
    assert_eq!(echo.value()["count"], 1);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_reconnect_is_a_new_session_with_nothing_of_the_old_one() {
    let (runtime, counters, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut first = StreamClient::tcp(&address).await.unwrap();
    for seq in 1..=3 {
        first
            .call_json(seq, "echo", json!({ "text": "a" }), WAIT)
            .await
            .unwrap();
    }
    drop(first);
    let mut second = StreamClient::tcp(&address).await.unwrap();
    let echo = second
        .call_json(1, "echo", json!({ "text": "b" }), WAIT)
        .await
        .unwrap();
    // The count restarts: the new connection got a fresh session value.
    assert_eq!(echo.value()["count"], 1);
    wait_until(WAIT, "the first session ended", || async {
        counters.disconnected.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(counters.connected.load(Ordering::SeqCst), 2);
    assert_eq!(counters.reasons(), vec![CloseReason::ClientClose]);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_client_that_answers_heartbeats_stays_and_a_silent_one_is_closed_heartbeat_timeout() {
    let mut limits = StreamLimits::default();
    limits.heartbeat_interval = Duration::from_millis(50);
    limits.heartbeat_timeout = Duration::from_millis(300);
    let (runtime, counters, address) = chat_node("tcp", limits).await;
    let mut live = StreamClient::tcp(&address).await.unwrap();
    let silent = StreamClient::tcp(&address)
        .await
        .unwrap()
        .answer_pings(false);
    let silent = tokio::spawn(async move {
        let mut silent = silent;
        let notice = silent.closed_with(WAIT).await;
        (notice, silent.pings_seen())
    });
    // The live one answers its pings: past several heartbeat timeouts it still works.
    while live.pings_seen() < 20 {
        match live.next(Duration::from_millis(100)).await {
            Ok(_) | Err(ReadEnd::Timeout) => {}
            Err(end) => panic!("the live session ended: {end:?}"),
        }
    }
    let echo = live
        .call_json(1, "echo", json!({ "text": "alive" }), WAIT)
        .await
        .unwrap();
    assert_eq!(echo.kind, kind::RESPONSE);
    let (notice, pings) = silent.await.unwrap();
    let notice = notice.expect("closed in time");
    assert_eq!(
        notice.map(|n| n.0),
        Some(CloseReason::HeartbeatTimeout as u8)
    );
    assert!(pings >= 2, "pings came before the timeout");
    wait_until(WAIT, "the silent session's callback ran", || async {
        counters.reasons().contains(&CloseReason::HeartbeatTimeout)
    })
    .await;
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_node_shutdown_tells_each_client_server_drain() {
    let (runtime, counters, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    client
        .call_json(1, "echo", json!({ "text": "x" }), WAIT)
        .await
        .unwrap();
    let closing = tokio::spawn(async move { client.closed_with(WAIT).await });
    runtime.shutdown().await;
    let notice = closing.await.unwrap().expect("closed in time");
    assert_eq!(notice.map(|n| n.0), Some(CloseReason::ServerDrain as u8));
    assert_eq!(counters.reasons(), vec![CloseReason::ServerDrain]);
}
