//! The Sessions chapter's promises to a client author, one test each, over real sockets:
//! in-order answers from one Actor, pong payloads, the one rule for malformed packets,
//! what happens to packets read before a violation, and the WebSocket close code.

use std::sync::atomic::Ordering;

use serde_json::json;
use zlink::session::{CloseReason, StreamLimits};
use zlink::ErrorKind;
use zlink_testkit::stream_client::{kind, StreamClient, StreamPacket};

use crate::common::{chat_node, WAIT};

/// A client of `scheme` ("tcp" or "ws") at `address`.
pub async fn connect(scheme: &str, address: &str) -> StreamClient {
    match scheme {
        "ws" => StreamClient::websocket(address).await.unwrap(),
        _ => StreamClient::tcp(address).await.unwrap(),
    }
}

#[tokio::test]
async fn pong_echoes_the_payload_of_the_ping() {
    for scheme in ["tcp", "ws"] {
        let (runtime, _, address) = chat_node(scheme, StreamLimits::default()).await;
        let mut client = connect(scheme, &address).await;
        let ping = StreamPacket {
            kind: kind::CONTROL,
            codec: 0,
            name: "$zlink.heartbeat.ping".into(),
            payload: vec![0, 1, 0xff, b'z', 7],
            ..StreamPacket::default()
        };
        client.write(&ping).await.unwrap();
        let pong = client.next(WAIT).await.unwrap();
        assert_eq!(
            (pong.kind, pong.name.as_str()),
            (kind::CONTROL, "$zlink.heartbeat.pong"),
            "{scheme}"
        );
        assert_eq!(pong.payload, ping.payload, "{scheme}: the ping's payload");
        runtime.shutdown().await;
    }
}

/// One field of a header, broken.
struct Fault {
    field: &'static str,
    /// Breaks the header of a packet whose sequence (if any) is at bytes 4..12.
    apply: fn(&mut RawHeader),
}

/// A header built field by field, so each can be broken on its own.
#[derive(Clone)]
struct RawHeader {
    marker: u8,
    kind: u8,
    codec: u8,
    flags: u8,
    seq: Option<[u8; 8]>,
    name: Vec<u8>,
    metadata: Option<Vec<u8>>,
    correlation: Option<Vec<u8>>,
    flow: Option<Vec<u8>>,
    trailing: Vec<u8>,
    payload: Vec<u8>,
}

impl RawHeader {
    /// A well-formed JSON packet of `kind` named `name`, with request sequence `seq`.
    fn new(kind: u8, name: &str, seq: Option<u64>, payload: serde_json::Value) -> RawHeader {
        RawHeader {
            marker: 0xF2,
            kind,
            codec: 1,
            flags: if seq.is_some() { 0x01 } else { 0 },
            seq: seq.map(u64::to_be_bytes),
            name: name.as_bytes().to_vec(),
            metadata: None,
            correlation: None,
            flow: None,
            trailing: Vec::new(),
            payload: serde_json::to_vec(&payload).unwrap(),
        }
    }

    /// A metadata block: `count u8` then, per entry, `key_len u8`, key, `value_len u16`,
    /// value. The block length before it counts the count byte.
    fn metadata_block(entries: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut block = vec![entries.len() as u8];
        for (key, value) in entries {
            block.push(key.len() as u8);
            block.extend_from_slice(key);
            block.extend_from_slice(&(value.len() as u16).to_be_bytes());
            block.extend_from_slice(value);
        }
        block
    }

    fn encode(&self) -> Vec<u8> {
        let mut header = vec![self.marker, self.kind, self.codec, self.flags];
        if let Some(seq) = self.seq {
            header.extend_from_slice(&seq);
        }
        header.push(self.name.len() as u8);
        header.extend_from_slice(&self.name);
        if let Some(block) = &self.metadata {
            header.extend_from_slice(&(block.len() as u16).to_be_bytes());
            header.extend_from_slice(block);
        }
        if let Some(correlation) = &self.correlation {
            header.push(correlation.len() as u8);
            header.extend_from_slice(correlation);
        }
        if let Some(flow) = &self.flow {
            header.extend_from_slice(flow);
        }
        header.extend_from_slice(&self.trailing);
        let mut out = (header.len() as u16).to_be_bytes().to_vec();
        out.extend_from_slice(&(self.payload.len() as u32).to_be_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&self.payload);
        out
    }
}

const FLOW_ID: &[u8; 36] = b"0b7e4c5a-1d2f-4e3a-9c8b-7a6f5e4d3c2b";

/// Every field of the header, broken one at a time.
fn faults() -> Vec<Fault> {
    vec![
        Fault {
            field: "kind: undefined",
            apply: |h| h.kind = 9,
        },
        Fault {
            field: "kind: a Response from the client",
            apply: |h| h.kind = kind::RESPONSE,
        },
        Fault {
            field: "codec: MessagePack",
            apply: |h| h.codec = 2,
        },
        Fault {
            field: "codec: undefined",
            apply: |h| h.codec = 77,
        },
        Fault {
            field: "flags: an undefined bit",
            apply: |h| h.flags |= 0x80,
        },
        Fault {
            field: "flags: compressed",
            apply: |h| h.flags |= 0x04,
        },
        Fault {
            field: "name: empty",
            apply: |h| h.name.clear(),
        },
        Fault {
            field: "name: not UTF-8",
            apply: |h| h.name = vec![b'n', 0xff, 0xfe],
        },
        Fault {
            field: "name: reserved prefix",
            apply: |h| h.name = b"$zlink.mine".to_vec(),
        },
        Fault {
            field: "metadata: a key given twice",
            apply: |h| {
                h.flags |= 0x02;
                h.metadata = Some(RawHeader::metadata_block(&[(b"k", b"1"), (b"k", b"2")]));
            },
        },
        Fault {
            field: "metadata: an empty key",
            apply: |h| {
                h.flags |= 0x02;
                h.metadata = Some(RawHeader::metadata_block(&[(b"", b"1")]));
            },
        },
        Fault {
            field: "metadata: a value that is not UTF-8",
            apply: |h| {
                h.flags |= 0x02;
                h.metadata = Some(RawHeader::metadata_block(&[(b"k", &[0xc3, 0x28])]));
            },
        },
        Fault {
            field: "metadata: over 1024 bytes",
            apply: |h| {
                h.flags |= 0x02;
                h.metadata = Some(RawHeader::metadata_block(&[(b"k", &[b'v'; 1100])]));
            },
        },
        Fault {
            field: "metadata: the block length leaves out the count byte",
            apply: |h| {
                h.flags |= 0x02;
                let block = RawHeader::metadata_block(&[(b"k", b"v")]);
                // Declares one byte less than the block: the count byte not counted.
                let mut lying = ((block.len() - 1) as u16).to_be_bytes().to_vec();
                lying.extend_from_slice(&block);
                h.metadata = None;
                h.trailing = lying;
            },
        },
        Fault {
            field: "correlation: shorter than its length",
            apply: |h| {
                h.flags |= 0x08;
                h.trailing = vec![10, 1, 2, 3];
            },
        },
        Fault {
            field: "flow: an ID that is not ASCII",
            apply: |h| {
                h.flags |= 0x10;
                let mut flow = FLOW_ID.to_vec();
                flow[0] = 0xc3;
                flow.push(1);
                h.flow = Some(flow);
            },
        },
        Fault {
            field: "flow: cut short",
            apply: |h| {
                h.flags |= 0x10;
                h.flow = Some(FLOW_ID[..20].to_vec());
            },
        },
        Fault {
            field: "header: a byte after its last field",
            apply: |h| h.trailing = vec![0],
        },
        Fault {
            field: "control: an undefined control packet",
            apply: |h| {
                h.kind = kind::CONTROL;
                h.codec = 0;
                h.name = b"$zlink.heartbeat.pang".to_vec();
            },
        },
    ]
}

#[tokio::test]
async fn a_malformed_packet_with_a_readable_sequence_is_answered_under_it_and_any_other_closes_the_session(
) {
    let (runtime, counters, address) = chat_node("tcp", StreamLimits::default()).await;
    for fault in faults() {
        // With a readable sequence: an Error under it, and the session goes on.
        let mut client = StreamClient::tcp(&address).await.unwrap();
        let mut request = RawHeader::new(kind::REQUEST, "echo", Some(7), json!({ "text": "x" }));
        (fault.apply)(&mut request);
        client.write_raw(&request.encode()).await.unwrap();
        let answer = client.next(WAIT).await.unwrap();
        assert_eq!(
            (answer.kind, answer.request_seq),
            (kind::ERROR, Some(7)),
            "{}: {answer:?}",
            fault.field
        );
        assert_eq!(
            answer.error().map(|e| e.0),
            Some(ErrorKind::ProtocolError.code()),
            "{}",
            fault.field
        );
        let echo = client
            .call_json(8, "echo", json!({ "text": "after" }), WAIT)
            .await
            .unwrap();
        assert_eq!(echo.kind, kind::RESPONSE, "{}: goes on", fault.field);

        // Without one (the same fault on a Send): the session closes.
        let mut client = StreamClient::tcp(&address).await.unwrap();
        let mut send = RawHeader::new(kind::SEND, "note", None, json!({ "text": "x" }));
        (fault.apply)(&mut send);
        client.write_raw(&send.encode()).await.unwrap();
        let notice = client.closed_with(WAIT).await.expect("closed in time");
        assert_eq!(
            notice.map(|n| n.0),
            Some(CloseReason::ProtocolError as u8),
            "{}: closed",
            fault.field
        );
    }
    assert_eq!(
        counters.notes.load(Ordering::SeqCst),
        0,
        "no malformed note was handled"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_header_with_no_readable_sequence_closes_the_session_whatever_its_kind() {
    let (runtime, _, address) = chat_node("tcp", StreamLimits::default()).await;
    let cases: [(&str, RawHeader); 4] = [
        ("a Request without flag 0x01", {
            RawHeader::new(kind::REQUEST, "echo", None, json!({ "text": "x" }))
        }),
        ("a request sequence of 0", {
            RawHeader::new(kind::REQUEST, "echo", Some(0), json!({ "text": "x" }))
        }),
        ("a sequence cut short", {
            let mut h = RawHeader::new(kind::REQUEST, "echo", None, json!(null));
            h.flags = 0x01;
            h.name.clear();
            h.trailing = vec![0, 0, 1];
            h
        }),
        ("the wrong marker", {
            let mut h = RawHeader::new(kind::REQUEST, "echo", Some(3), json!({ "text": "x" }));
            h.marker = 0xF3;
            h
        }),
    ];
    for (case, header) in cases {
        let mut client = StreamClient::tcp(&address).await.unwrap();
        client.write_raw(&header.encode()).await.unwrap();
        let mut answers = Vec::new();
        let notice = loop {
            match client.next(WAIT).await {
                Ok(packet) if packet.closing().is_some() => break packet.closing(),
                Ok(packet) => answers.push(packet),
                Err(e) => panic!("{case}: no closing notice: {e:?}"),
            }
        };
        assert!(answers.is_empty(), "{case}: nothing answered: {answers:?}");
        assert_eq!(
            notice.map(|n| n.0),
            Some(CloseReason::ProtocolError as u8),
            "{case}"
        );
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_sequence_reused_while_pending_closes_the_session_and_the_first_is_not_answered_twice() {
    let (runtime, _, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    // The flood keeps the lane busy, so request 4 is still pending when 4 comes again.
    client
        .send_json("flood", json!({ "packets": 50, "bytes": 10 }))
        .await
        .unwrap();
    client
        .request_json(4, "echo", json!({ "text": "a" }))
        .await
        .unwrap();
    client
        .request_json(4, "echo", json!({ "text": "b" }))
        .await
        .unwrap();
    let mut answers = Vec::new();
    let notice = loop {
        match client.next(WAIT).await {
            Ok(packet) if packet.closing().is_some() => break packet.closing(),
            Ok(packet) if packet.request_seq == Some(4) => answers.push(packet),
            Ok(_) => {}
            Err(e) => panic!("no closing notice: {e:?}"),
        }
    };
    assert!(answers.len() <= 1, "at most one answer to 4: {answers:?}");
    assert_eq!(notice.map(|n| n.0), Some(CloseReason::ProtocolError as u8));
    runtime.shutdown().await;
}

#[tokio::test]
async fn packets_read_before_a_violation_or_a_client_close_are_handled_and_answered_before_the_notice(
) {
    for (ending, reason) in [
        ("violation", CloseReason::ProtocolError),
        ("client close", CloseReason::ClientClose),
    ] {
        let (runtime, counters, address) = chat_node("tcp", StreamLimits::default()).await;
        let mut client = StreamClient::tcp(&address).await.unwrap();
        let mut bytes = Vec::new();
        let mut first = StreamPacket::json(kind::REQUEST, "echo", &json!({ "text": "one" }));
        first.request_seq = Some(1);
        bytes.extend(first.encode());
        bytes.extend(StreamPacket::json(kind::SEND, "note", &json!({ "text": "n" })).encode());
        let mut second = StreamPacket::json(kind::REQUEST, "echo", &json!({ "text": "two" }));
        second.request_seq = Some(2);
        bytes.extend(second.encode());
        match reason {
            CloseReason::ProtocolError => bytes.extend(
                RawHeader::new(kind::REQUEST, "echo", Some(0), json!({ "text": "x" })).encode(),
            ),
            _ => bytes.extend(
                StreamPacket {
                    kind: kind::CONTROL,
                    name: "session-closing".into(),
                    payload: vec![1, CloseReason::ClientClose as u8, 0, 0],
                    ..StreamPacket::default()
                }
                .encode(),
            ),
        }
        // One write: everything is read before any of it is handled.
        client.write_raw(&bytes).await.unwrap();
        let mut seen = Vec::new();
        let notice = loop {
            let packet = client
                .next(WAIT)
                .await
                .unwrap_or_else(|e| panic!("{ending}: {e:?} after {seen:?}"));
            if let Some(notice) = packet.closing() {
                break notice;
            }
            seen.push(match packet.kind {
                kind::RESPONSE => format!("answer {}", packet.value()["text"]),
                kind::SEND => format!("push {}", packet.value()["text"]),
                _ => format!("{packet:?}"),
            });
        };
        assert_eq!(
            seen,
            ["answer \"one\"", "push \"heard n\"", "answer \"two\""],
            "{ending}: in order, before the notice"
        );
        assert_eq!(notice.0, reason as u8, "{ending}");
        let closed = counters.clone();
        zlink_testkit::wait_until(WAIT, "on_disconnected ran", move || {
            let closed = closed.clone();
            async move { closed.disconnected.load(Ordering::SeqCst) == 1 }
        })
        .await;
        assert_eq!(counters.reasons(), vec![reason], "{ending}");
        runtime.shutdown().await;
    }
}

#[tokio::test]
async fn an_undecodable_payload_is_answered_protocol_error_under_its_sequence_and_the_session_goes_on(
) {
    let (runtime, counters, address) = chat_node("tcp", StreamLimits::default()).await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    let mut request = StreamPacket::json(kind::REQUEST, "echo", &json!(null));
    request.payload = b"{not json".to_vec();
    request.request_seq = Some(3);
    client.write(&request).await.unwrap();
    let answer = client.next(WAIT).await.unwrap();
    assert_eq!(answer.request_seq, Some(3));
    let (code, message) = answer.error().expect("an Error");
    assert_eq!(code, ErrorKind::ProtocolError.code(), "{message}");
    // A one-way with the same payload: an Error with no sequence, the session goes on.
    let mut note = StreamPacket::json(kind::SEND, "note", &json!(null));
    note.payload = b"[1,".to_vec();
    client.write(&note).await.unwrap();
    let error = client.next(WAIT).await.unwrap();
    assert_eq!((error.kind, error.request_seq), (kind::ERROR, None));
    assert_eq!(
        error.error().map(|e| e.0),
        Some(ErrorKind::ProtocolError.code())
    );
    let echo = client
        .call_json(4, "echo", json!({ "text": "still here" }), WAIT)
        .await
        .unwrap();
    assert_eq!(echo.kind, kind::RESPONSE);
    assert_eq!(counters.notes.load(Ordering::SeqCst), 0);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_websocket_session_closes_with_code_4000_plus_its_reason_and_the_notices_reason_text() {
    let (runtime, _, address) = chat_node("ws", StreamLimits::default()).await;
    // A violation: 4005, ProtocolError.
    let mut client = StreamClient::websocket(&address).await.unwrap();
    client.write_raw(&[0u8; 9]).await.unwrap();
    let notice = client.closed_with(WAIT).await.expect("closed").unwrap();
    let (code, reason) = client.websocket_close().expect("a close frame with a code");
    assert_eq!(code, 4000 + CloseReason::ProtocolError as u16);
    assert!(reason.starts_with("ProtocolError: "), "{reason}");
    assert!(
        notice
            .1
            .starts_with(reason.trim_start_matches("ProtocolError: ")),
        "the frame's text is the notice's diagnostic: {reason:?} vs {:?}",
        notice.1
    );
    // The node stopping: 4004, ServerDrain.
    let mut client = StreamClient::websocket(&address).await.unwrap();
    let echo = client
        .call_json(1, "echo", json!({ "text": "x" }), WAIT)
        .await
        .unwrap();
    assert_eq!(echo.kind, kind::RESPONSE);
    let stopping = tokio::spawn(async move { runtime.shutdown().await });
    let notice = client.closed_with(WAIT).await.expect("closed").unwrap();
    assert_eq!(notice.0, CloseReason::ServerDrain as u8);
    let (code, reason) = client.websocket_close().expect("a close frame with a code");
    assert_eq!(code, 4000 + CloseReason::ServerDrain as u16);
    assert!(reason.starts_with("ServerDrain"), "{reason}");
    stopping.await.unwrap();
}

#[tokio::test]
async fn a_client_over_the_cap_is_told_server_drain_in_its_own_transport() {
    let (cert, key) = zlink_testkit::stream_client::self_signed_localhost();
    let mut capped = StreamLimits::default();
    capped.max_sessions = 1;
    for (scheme, tls) in [("ws", false), ("tcp", true), ("ws", true)] {
        let identity = tls.then(|| {
            zlink::session::TlsIdentity::from_pem(cert.as_bytes(), key.as_bytes()).unwrap()
        });
        let (runtime, _, address) =
            crate::common::chat_node_with(scheme, capped.clone(), identity).await;
        let open = |address: String| {
            let cert = cert.clone();
            async move {
                match (scheme, tls) {
                    ("ws", false) => StreamClient::websocket(&address).await.unwrap(),
                    ("ws", true) => StreamClient::websocket_tls(&address, &cert).await.unwrap(),
                    _ => StreamClient::tls(&address, &cert).await.unwrap(),
                }
            }
        };
        let mut first = open(address.clone()).await;
        let echo = first
            .call_json(1, "echo", json!({ "text": "in" }), WAIT)
            .await
            .unwrap();
        assert_eq!(echo.kind, kind::RESPONSE);
        let mut refused = open(address.clone()).await;
        let notice = refused.closed_with(WAIT).await.expect("closed in time");
        assert_eq!(
            notice.map(|n| n.0),
            Some(CloseReason::ServerDrain as u8),
            "{scheme} (TLS: {tls}): the notice, readable in the client's transport"
        );
        if scheme == "ws" {
            assert_eq!(
                refused.websocket_close().map(|c| c.0),
                Some(4000 + CloseReason::ServerDrain as u16)
            );
        }
        runtime.shutdown().await;
    }
}

#[tokio::test]
async fn an_application_closes_its_session_telling_the_client_why() {
    let (runtime, counters, address) = chat_node("ws", StreamLimits::default()).await;
    let mut client = StreamClient::websocket(&address).await.unwrap();
    let why = "your player's node stopped answering: log in again";
    client
        .send_json("leave", json!({ "why": why }))
        .await
        .unwrap();
    let notice = client.closed_with(WAIT).await.expect("closed").unwrap();
    assert_eq!(notice, (CloseReason::ServerDrain as u8, why.to_string()));
    let (code, reason) = client.websocket_close().expect("a close frame with a code");
    assert_eq!(code, 4000 + CloseReason::ServerDrain as u16);
    assert!(reason.ends_with(why), "{reason}");
    zlink_testkit::wait_until(WAIT, "on_disconnected ran", || async {
        counters.disconnected.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(
        *counters.reasons.lock().unwrap(),
        [CloseReason::ServerDrain]
    );
    runtime.shutdown().await;
}
