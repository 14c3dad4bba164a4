//! The dashboard's listener under hostile clients: a silent connection is cut at the
//! header deadline, an oversized request head is refused, and a flood past the
//! connection cap is turned away without stopping the dashboard for long.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zlink_dashboard::{Dashboard, HEADER_TIMEOUT, MAX_CONNECTIONS, MAX_HEAD_BYTES};
use zlink_testkit::{wait_until, RedisServer};

mod common;
use common::{get, node};

/// What the server sends on `stream` until it closes it (or `within` passes).
async fn answer(stream: &mut tokio::net::TcpStream, within: Duration) -> Option<String> {
    let mut read = Vec::new();
    tokio::time::timeout(within, stream.read_to_end(&mut read))
        .await
        .ok()
        .map(|_| String::from_utf8_lossy(&read).into_owned())
}

/// A flood of silent connections fills the cap: the one over it is answered 503 and
/// closed; the silent ones are closed at the header deadline, after which the dashboard
/// serves again. A request head over the limit is refused with 431.
#[tokio::test]
async fn silent_floods_and_oversized_heads_are_cut_off_and_the_dashboard_serves_again() {
    let redis = RedisServer::start().expect("redis-server");
    let rt = node(&redis.url()).await;
    let dashboard = Dashboard::new(rt.operator())
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = dashboard.local_addr();

    let mut oversized = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "GET /alive HTTP/1.1\r\nHost: x\r\nX-Padding: {}\r\n\r\n",
        "p".repeat(MAX_HEAD_BYTES * 2)
    );
    // The server may close before it read everything: a failed write is an answer too.
    let _ = oversized.write_all(head.as_bytes()).await;
    let said = answer(&mut oversized, Duration::from_secs(5))
        .await
        .unwrap_or_default();
    assert!(
        said.is_empty() || said.starts_with("HTTP/1.1 431"),
        "{said}"
    );

    let mut silent = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        silent.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    let flooded = tokio::time::Instant::now();
    let mut over = tokio::net::TcpStream::connect(addr).await.unwrap();
    let said = answer(&mut over, Duration::from_secs(2))
        .await
        .expect("the connection over the cap is closed at once");
    assert!(said.starts_with("HTTP/1.1 503"), "{said}");

    // Each silent connection is closed at the header deadline, not left open.
    for mut connection in silent {
        let closed = answer(&mut connection, HEADER_TIMEOUT * 2).await;
        assert!(closed.is_some(), "a silent connection stayed open");
    }
    assert!(flooded.elapsed() >= HEADER_TIMEOUT - Duration::from_millis(500));
    wait_until(HEADER_TIMEOUT, "the dashboard serves again", || async {
        get(addr, "/alive").await.0 == 200
    })
    .await;
    rt.shutdown().await;
}
