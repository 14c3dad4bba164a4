//! TLS on both transports, with a self-signed certificate the test makes: the same packets
//! inside TLS, and a client that does not speak TLS is refused before any session starts.

use std::sync::atomic::Ordering;

use serde_json::json;
use zlink::session::{StreamLimits, TlsIdentity};
use zlink_testkit::stream_client::{kind, self_signed_localhost, StreamClient, StreamPacket};

use crate::common::{chat_node_with, WAIT};

fn identity() -> (TlsIdentity, String) {
    let (cert, key) = self_signed_localhost();
    let identity =
        TlsIdentity::from_pem(cert.as_bytes(), key.as_bytes()).expect("a valid identity");
    (identity, cert)
}

#[tokio::test]
async fn a_tls_listener_carries_the_same_packets_inside_tls() {
    let (identity, cert) = identity();
    let (runtime, counters, address) =
        chat_node_with("tcp", StreamLimits::default(), Some(identity)).await;
    let endpoint = runtime.stream_endpoint("clients").unwrap();
    assert!(endpoint.starts_with("tls://"), "{endpoint}");
    let mut client = StreamClient::tls(&address, &cert).await.unwrap();
    for seq in 1..=8u64 {
        let echo = client
            .call_json(seq, "echo", json!({ "text": "secret" }), WAIT)
            .await
            .unwrap();
        assert_eq!(
            (echo.kind, echo.value()["count"].as_u64()),
            (kind::RESPONSE, Some(seq))
        );
    }
    client
        .send_json("note", json!({ "text": "sealed" }))
        .await
        .unwrap();
    assert_eq!(
        client.next(WAIT).await.unwrap().value()["text"],
        "heard sealed"
    );
    assert_eq!(counters.connected.load(Ordering::SeqCst), 1);
    runtime.shutdown().await;
}

#[tokio::test]
async fn websocket_over_tls_carries_the_same_packets() {
    let (identity, cert) = identity();
    let (runtime, _, address) = chat_node_with("ws", StreamLimits::default(), Some(identity)).await;
    assert!(runtime
        .stream_endpoint("clients")
        .unwrap()
        .starts_with("wss://"));
    let mut client = StreamClient::websocket_tls(&address, &cert).await.unwrap();
    let echo = client
        .call_json(1, "echo", json!({ "text": "wss" }), WAIT)
        .await
        .unwrap();
    assert_eq!(echo.value()["text"], "wss");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_client_that_does_not_speak_tls_is_refused_before_any_session_starts() {
    let (identity, cert) = identity();
    let (runtime, counters, address) =
        chat_node_with("tcp", StreamLimits::default(), Some(identity)).await;
    let mut plain = StreamClient::tcp(&address).await.unwrap();
    let mut packet = StreamPacket::json(kind::REQUEST, "echo", &json!({ "text": "clear" }));
    packet.request_seq = Some(1);
    plain.write(&packet).await.unwrap();
    // Whatever the TLS layer answers, no packet does, and the connection ends.
    let answer = plain.next(WAIT).await;
    assert!(answer.is_err(), "a plain client got a packet: {answer:?}");
    let mut client = StreamClient::tls(&address, &cert).await.unwrap();
    let echo = client
        .call_json(1, "echo", json!({ "text": "ok" }), WAIT)
        .await
        .unwrap();
    assert_eq!(echo.kind, kind::RESPONSE);
    assert_eq!(
        counters.connected.load(Ordering::SeqCst),
        1,
        "only the TLS client had a session"
    );
    runtime.shutdown().await;
}

#[test]
fn a_malformed_certificate_or_key_is_a_clear_error() {
    let (cert, key) = self_signed_localhost();
    let no_cert = TlsIdentity::from_pem(b"not pem", key.as_bytes()).unwrap_err();
    assert!(
        no_cert.to_string().contains("certificate chain"),
        "{no_cert}"
    );
    let no_key = TlsIdentity::from_pem(cert.as_bytes(), b"not pem").unwrap_err();
    assert!(no_key.to_string().contains("private key"), "{no_key}");
    let (other_cert, _) = self_signed_localhost();
    let mismatched = TlsIdentity::from_pem(other_cert.as_bytes(), key.as_bytes()).unwrap_err();
    assert!(
        mismatched.to_string().contains("do not make an identity"),
        "{mismatched}"
    );
    let missing =
        TlsIdentity::from_pem_files("/nonexistent/cert.pem", "/nonexistent/key.pem").unwrap_err();
    assert!(
        missing.to_string().contains("/nonexistent/cert.pem"),
        "{missing}"
    );
}
