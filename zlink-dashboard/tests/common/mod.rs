//! What the dashboard's tests share: a node on a real `redis-server`, and HTTP/1.1 by hand
//! (what a probe, a script or an attacker sends).
#![allow(dead_code)] // Each test file uses its own part.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zlink::store::{LocationStore, RedisLocationStore, RedisOptions};
use zlink::Runtime;

pub const WAIT: Duration = Duration::from_secs(10);

/// `GET path` on `addr`: the status code and the body.
pub async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    send(addr, "GET", path, &[], "").await
}

pub async fn node(url: &str) -> Runtime {
    let options = RedisOptions::new(url.to_string(), "dashboard-test")
        .operation_timeout(Duration::from_millis(500));
    let store: Arc<dyn LocationStore> =
        Arc::new(RedisLocationStore::new(options).expect("store options"));
    Runtime::builder()
        .mesh_name("dashboard-mesh")
        .rid("a")
        .listen("tcp://127.0.0.1:0")
        .location_store(store)
        .relocation_store(<dyn zlink::store::RelocationStore>::in_memory())
        .discovery_interval(Duration::from_millis(100))
        .build()
        .expect("valid config")
        .start()
        .await
        .expect("start")
}

/// `method path` on `addr` with `headers` and a JSON `body`: the status code and the body.
pub async fn send(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status code");
    (code, body.to_string())
}
