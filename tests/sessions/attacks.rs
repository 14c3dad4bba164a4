//! Hostile clients, one rule each: every one closes (or is refused) only its own session,
//! with a reason, and the node goes on serving everyone else.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncWriteExt;
use zlink::session::{CloseReason, StreamLimits};
use zlink::ErrorKind;
use zlink_testkit::stream_client::{kind, prefix, StreamClient, StreamPacket};
use zlink_testkit::wait_until;

use crate::common::{chat_node, WAIT};

/// Another client's echo still works: the attack touched only its own session.
async fn others_are_served(address: &str) {
    let mut other = StreamClient::tcp(address).await.unwrap();
    let echo = other
        .call_json(1, "echo", json!({ "text": "bystander" }), WAIT)
        .await
        .unwrap();
    assert_eq!(echo.kind, kind::RESPONSE);
    assert_eq!(echo.value()["text"], "bystander");
}

#[tokio::test]
async fn a_message_over_max_message_size_closes_only_its_session_and_is_never_delivered() {
    let (runtime, counters, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut bystander = StreamClient::tcp(&address).await.unwrap();
    let mut attacker = StreamClient::tcp(&address).await.unwrap();
    // 64 KiB of text plus JSON and header: over the 64 KiB cap.
    let big = "y".repeat(64 * 1024);
    attacker
        .send_json("note", json!({ "text": big }))
        .await
        .unwrap();
    let notice = attacker.closed_with(WAIT).await.expect("closed in time");
    assert_eq!(notice.map(|n| n.0), Some(CloseReason::ProtocolError as u8));
    // Just under the cap passes, on the other session.
    let fits = "y".repeat(60 * 1024);
    bystander
        .send_json("note", json!({ "text": fits }))
        .await
        .unwrap();
    let push = bystander.next(WAIT).await.unwrap();
    assert_eq!(
        push.value()["text"].as_str().map(str::len),
        Some(6 + 60 * 1024)
    );
    assert_eq!(
        counters.notes.load(Ordering::SeqCst),
        1,
        "the oversized note was never handled"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_prefix_declaring_4_gib_is_closed_at_the_prefix() {
    let (runtime, counters, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut attacker = StreamClient::tcp(&address).await.unwrap();
    // Only the prefix is sent: the close cannot wait for (or allocate) the body.
    attacker.write_raw(&prefix(16, u32::MAX)).await.unwrap();
    let notice = attacker
        .closed_with(WAIT)
        .await
        .expect("closed without the body");
    let (reason, diagnostic) = notice.expect("a closing notice");
    assert_eq!(reason, CloseReason::ProtocolError as u8);
    assert!(diagnostic.contains("65536"), "names the cap: {diagnostic}");
    others_are_served(&address).await;
    wait_until(WAIT, "the attacker's session ended", || async {
        counters.reasons().contains(&CloseReason::ProtocolError)
    })
    .await;
    runtime.shutdown().await;
}

#[tokio::test]
async fn garbage_before_the_first_packet_closes_the_session_with_protocol_error() {
    let (runtime, counters, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut attacker = StreamClient::tcp(&address).await.unwrap();
    attacker
        .write_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let notice = attacker.closed_with(WAIT).await.expect("closed in time");
    assert_eq!(notice.map(|n| n.0), Some(CloseReason::ProtocolError as u8));
    // A header that does not start with the marker is garbage too.
    let mut wrong_marker = StreamPacket::json(kind::SEND, "note", &json!({ "text": "x" })).encode();
    wrong_marker[6] = 0xF1;
    let mut attacker = StreamClient::tcp(&address).await.unwrap();
    attacker.write_raw(&wrong_marker).await.unwrap();
    let notice = attacker.closed_with(WAIT).await.expect("closed in time");
    assert_eq!(notice.map(|n| n.0), Some(CloseReason::ProtocolError as u8));
    others_are_served(&address).await;
    assert_eq!(counters.notes.load(Ordering::SeqCst), 0);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_truncated_header_is_a_protocol_error_and_a_half_sent_packet_is_never_delivered() {
    let (runtime, counters, address) = chat_node("tcp", StreamLimits::default()).await;
    // The declared header ends inside its name.
    let mut short = StreamPacket::json(kind::SEND, "note", &json!({ "text": "x" })).encode();
    short[1] = 6;
    let mut attacker = StreamClient::tcp(&address).await.unwrap();
    attacker.write_raw(&short).await.unwrap();
    let notice = attacker.closed_with(WAIT).await.expect("closed in time");
    assert_eq!(notice.map(|n| n.0), Some(CloseReason::ProtocolError as u8));
    // Half a packet, then the client hangs up: the half is dropped, not handled.
    let whole = StreamPacket::json(kind::SEND, "note", &json!({ "text": "half" })).encode();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    stream.write_all(&whole[..whole.len() - 3]).await.unwrap();
    stream.shutdown().await.unwrap();
    drop(stream);
    wait_until(WAIT, "both sessions ended", || async {
        counters.disconnected.load(Ordering::SeqCst) == 2
    })
    .await;
    others_are_served(&address).await;
    assert_eq!(counters.notes.load(Ordering::SeqCst), 0);
    runtime.shutdown().await;
}

#[tokio::test]
async fn app_packet_names_starting_with_the_reserved_prefix_are_refused() {
    let (runtime, _, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    let refused = client
        .call_json(1, "$zlink.heartbeat.ping", json!({}), WAIT)
        .await
        .unwrap();
    let (code, message) = refused.error().expect("an Error packet");
    assert_eq!(code, ErrorKind::ProtocolError.code());
    assert!(message.contains("reserved"), "{message}");
    // The session is still open.
    let echo = client
        .call_json(2, "echo", json!({ "text": "x" }), WAIT)
        .await
        .unwrap();
    assert_eq!(echo.kind, kind::RESPONSE);
    // A one-way has no sequence to answer under: the session closes.
    client
        .send_json("$zlink.anything", json!({}))
        .await
        .unwrap();
    let notice = client.closed_with(WAIT).await.expect("closed in time");
    assert_eq!(notice.map(|n| n.0), Some(CloseReason::ProtocolError as u8));
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_codec_other_than_json_or_raw_is_refused_with_an_error_naming_it() {
    let (runtime, _, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    let mut packet = StreamPacket::json(kind::REQUEST, "echo", &json!({ "text": "x" }));
    packet.codec = 2;
    packet.request_seq = Some(9);
    client.write(&packet).await.unwrap();
    let error = client.next(WAIT).await.unwrap();
    assert_eq!(error.request_seq, Some(9));
    let (code, message) = error.error().unwrap();
    assert_eq!(code, ErrorKind::ProtocolError.code());
    assert!(message.contains("MessagePack"), "{message}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_undefined_flag_on_a_request_is_answered_protocol_error_to_its_sequence() {
    let (runtime, _, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    let mut packet = StreamPacket::json(kind::REQUEST, "echo", &json!({ "text": "x" }));
    packet.request_seq = Some(5);
    packet.extra_flags = 0x80;
    client.write(&packet).await.unwrap();
    let error = client.next(WAIT).await.unwrap();
    assert_eq!(error.request_seq, Some(5));
    assert_eq!(error.error().unwrap().0, ErrorKind::ProtocolError.code());
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_session_cap_refuses_one_more_client_with_server_drain() {
    let mut limits = StreamLimits::default();
    limits.max_sessions = 2;
    let (runtime, counters, address) = chat_node("tcp", limits).await;
    let mut first = StreamClient::tcp(&address).await.unwrap();
    let mut second = StreamClient::tcp(&address).await.unwrap();
    first
        .call_json(1, "echo", json!({ "text": "1" }), WAIT)
        .await
        .unwrap();
    second
        .call_json(1, "echo", json!({ "text": "2" }), WAIT)
        .await
        .unwrap();
    let mut third = StreamClient::tcp(&address).await.unwrap();
    let notice = third.closed_with(WAIT).await.expect("refused in time");
    assert_eq!(notice.map(|n| n.0), Some(CloseReason::ServerDrain as u8));
    assert_eq!(
        counters.connected.load(Ordering::SeqCst),
        2,
        "no session for the refused one"
    );
    let status = &runtime.status().stream_listeners[0];
    assert_eq!((status.open_sessions, status.refused), (2, 1));
    // A place freed is a place taken.
    drop(first);
    wait_until(WAIT, "the first session ended", || async {
        runtime.status().stream_listeners[0].open_sessions == 1
    })
    .await;
    let mut fourth = StreamClient::tcp(&address).await.unwrap();
    let echo = fourth
        .call_json(1, "echo", json!({ "text": "4" }), WAIT)
        .await
        .unwrap();
    assert_eq!(echo.kind, kind::RESPONSE);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_client_that_never_reads_is_closed_transport_error_and_others_are_unaffected() {
    let mut limits = StreamLimits::default();
    limits.outbound_bytes = 16 * 1024;
    limits.send_timeout = Duration::from_millis(300);
    let (runtime, counters, address) = chat_node("tcp", limits).await;
    let mut stalled = StreamClient::tcp(&address).await.unwrap();
    // 64 MB of pushes: more than the socket buffers and the queue can hold.
    stalled
        .send_json("flood", json!({ "packets": 65_536, "bytes": 1000 }))
        .await
        .unwrap();
    let mut bystander = StreamClient::tcp(&address).await.unwrap();
    let mut seq = 0;
    let started = tokio::time::Instant::now();
    while !counters.reasons().contains(&CloseReason::TransportError) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the stalled client was never closed"
        );
        seq += 1;
        let echo = bystander
            .call_json(seq, "echo", json!({ "text": "x" }), WAIT)
            .await
            .unwrap();
        assert_eq!(echo.kind, kind::RESPONSE);
    }
    others_are_served(&address).await;
    // The stalled client still holds its socket; the node cut it off all the same.
    wait_until(WAIT, "only the bystander's session is open", || async {
        runtime.status().stream_listeners[0].open_sessions == 1
    })
    .await;
    drop(stalled);
    runtime.shutdown().await;
}

#[tokio::test]
async fn ten_thousand_idle_connections_are_held_and_the_node_still_answers() {
    // Idle means silent: no heartbeat either (a live client would answer the pings).
    let mut limits = StreamLimits::default();
    limits.heartbeat_interval = Duration::ZERO;
    limits.heartbeat_timeout = Duration::ZERO;
    let (runtime, _, address) = chat_node("tcp", limits).await;
    // The idle clients live in another process: 10,000 sockets on each side would
    // pass one process's descriptor limit.
    let mut idle = IdleClients(
        std::process::Command::new("python3")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/sessions/idle_clients.py"
            ))
            .arg(&address)
            .arg("10000")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("python3 runs"),
    );
    let before = rss_kib();
    wait_until(Duration::from_secs(60), "10,000 sessions open", || async {
        runtime.status().stream_listeners[0].open_sessions == 10_000
    })
    .await;
    let per_session = (rss_kib().saturating_sub(before)) as f64 / 10_000.0;
    eprintln!("10,000 idle sessions: {per_session:.2} KiB of RSS each (the benchmark reports it)");
    others_are_served(&address).await;
    drop(idle.0.stdin.take());
    let _ = tokio::task::spawn_blocking(move || idle.0.wait()).await;
    wait_until(
        Duration::from_secs(30),
        "every idle session ended",
        || async { runtime.status().stream_listeners[0].open_sessions == 0 },
    )
    .await;
    runtime.shutdown().await;
}

/// The client process, killed if the test fails before it ends it.
struct IdleClients(std::process::Child);

impl Drop for IdleClients {
    fn drop(&mut self) {
        let _ = self.0.kill();
    }
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
