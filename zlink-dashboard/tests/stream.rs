//! `/api/stream` over real HTTP: Server-Sent Events carrying the node's status and its
//! status stream's events, resumable with `Last-Event-ID`.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use zlink_dashboard::Dashboard;
use zlink_testkit::RedisServer;

mod common;
use common::{node, WAIT};

/// An open `/api/stream`, read one SSE message at a time.
struct Updates {
    lines: tokio::io::Lines<BufReader<tokio::net::TcpStream>>,
}

impl Updates {
    async fn open(addr: std::net::SocketAddr, last_event_id: Option<u64>) -> Updates {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let resume = last_event_id
            .map(|id| format!("Last-Event-ID: {id}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "GET /api/stream HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n{resume}\r\n"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut lines = BufReader::new(stream).lines();
        // The head: a 200 of type text/event-stream.
        let status = lines.next_line().await.unwrap().expect("a status line");
        assert!(status.contains(" 200 "), "{status}");
        let mut event_stream = false;
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.is_empty() {
                break;
            }
            event_stream |= line.to_ascii_lowercase().contains("text/event-stream");
        }
        assert!(event_stream, "an event stream");
        Updates { lines }
    }

    /// The next `update` message: its SSE id and its JSON (chunk-size lines of the
    /// chunked body are skipped, they are not `field: value`).
    async fn next(&mut self) -> (u64, serde_json::Value) {
        let (mut id, mut data, mut kind) = (None, String::new(), String::new());
        loop {
            let line = tokio::time::timeout(WAIT, self.lines.next_line())
                .await
                .expect("an update within the wait")
                .unwrap()
                .expect("the stream stays open");
            if let Some(value) = line.strip_prefix("id:") {
                id = value.trim().parse().ok();
            } else if let Some(value) = line.strip_prefix("data:") {
                data.push_str(value.trim_start());
            } else if let Some(value) = line.strip_prefix("event:") {
                kind = value.trim().to_string();
            } else if line.is_empty() && !data.is_empty() {
                assert_eq!(kind, "update");
                let json = serde_json::from_str(&data).expect("JSON data");
                return (id.expect("an id"), json);
            }
        }
    }
}

/// The stream pushes an update at once and then at most once a second, with the
/// status, the health and the node's events; its id is the last event's sequence, and a
/// client that resumes with `Last-Event-ID` gets the events after it again.
#[tokio::test]
async fn the_stream_pushes_status_and_events_at_most_once_a_second_and_resumes_after_last_event_id()
{
    let redis = RedisServer::start().expect("redis-server");
    let rt = node(&redis.url()).await;
    let dashboard = Dashboard::new(rt.operator())
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = dashboard.local_addr();
    let mut updates = Updates::open(addr, None).await;
    let (_, first) = updates.next().await;
    assert_eq!(first["status"]["rid"], "a");
    assert!(first["health"]["checks"].is_array());

    rt.relocate_all().await.unwrap();
    rt.undrain().await.unwrap();
    let started = tokio::time::Instant::now();
    let mut seen = Vec::new();
    let mut updates_read = 0u32;
    let last_id = loop {
        let (id, update) = updates.next().await;
        updates_read += 1;
        seen.extend(update["events"].as_array().cloned().unwrap_or_default());
        if seen.iter().any(|e| e["state"] == "serving") {
            break id;
        }
    };
    // Updates come at most once a second.
    assert!(started.elapsed() >= Duration::from_secs(updates_read.saturating_sub(1).into()));
    let states: Vec<_> = seen.iter().map(|e| e["state"].clone()).collect();
    assert_eq!(states, ["draining", "serving"], "{seen:?}");
    assert_eq!(seen.last().unwrap()["sequence"], last_id);

    // Resuming after the first of the two events gets the second again.
    let mut resumed = Updates::open(addr, Some(last_id - 1)).await;
    let (id, update) = resumed.next().await;
    assert_eq!(id, last_id);
    assert_eq!(update["events"][0]["sequence"], last_id);
    assert_eq!(update["events"][0]["state"], "serving");
    assert_eq!(update["lost"], 0);
    rt.shutdown().await;
}
