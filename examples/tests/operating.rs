//! Every example serves what an operator needs on request: `--metrics ADDR` and
//! `--dashboard ADDR` (its controls behind `--dashboard-token`), one per node.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

const TOKEN: &str = "an-operators-token-for-the-test";

/// `method path` on `addr` over plain HTTP/1.1: the status code and the body.
fn http(addr: &str, method: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: 0\r\n{auth}\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a code");
    (code, body.to_string())
}

#[test]
fn every_example_lists_the_operator_flags_and_a_token_without_a_dashboard_is_a_usage_error() {
    for bin in [
        env!("CARGO_BIN_EXE_mesh-demo"),
        env!("CARGO_BIN_EXE_gateway-chat"),
        env!("CARGO_BIN_EXE_rooms"),
        env!("CARGO_BIN_EXE_league"),
        env!("CARGO_BIN_EXE_fanout-demo"),
        env!("CARGO_BIN_EXE_client-server-demo"),
    ] {
        let help = Command::new(bin).arg("--help").output().unwrap();
        let help = String::from_utf8_lossy(&help.stdout);
        assert!(
            help.contains("--metrics ADDR") && help.contains("--dashboard ADDR"),
            "{bin}: {help}"
        );
        let bad = Command::new(bin)
            .args(["--dashboard-token", TOKEN])
            .output()
            .unwrap();
        assert_eq!(bad.status.code(), Some(2), "{bin}");
        assert!(
            String::from_utf8_lossy(&bad.stderr).contains("--dashboard-token needs --dashboard")
        );
    }
}

/// `gateway-chat --serve` with both flags: each node prints where its metrics and its
/// dashboard are; the metrics carry the gateway's series, the dashboard's status names
/// it, and its controls answer only with the token.
#[test]
fn a_served_example_prints_and_serves_each_nodes_metrics_and_dashboard() {
    let mut server = Command::new(env!("CARGO_BIN_EXE_gateway-chat"))
        .args([
            "--serve",
            "--port",
            "0",
            "--metrics",
            "0",
            "--dashboard",
            "0",
        ])
        .args(["--dashboard-token", TOKEN])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let (mut metrics, mut dashboard) = (None, None);
    while metrics.is_none() || dashboard.is_none() {
        let line = lines
            .next()
            .expect("the server prints its addresses")
            .unwrap();
        if let Some(url) = line.strip_prefix("metrics of gateway: http://") {
            metrics = url.strip_suffix("/metrics").map(str::to_string);
        }
        if let Some(url) = line.strip_prefix("dashboard of gateway: http://") {
            dashboard = url.strip_suffix('/').map(str::to_string);
        }
    }
    let (metrics, dashboard) = (metrics.unwrap(), dashboard.unwrap());
    let (code, text) = http(&metrics, "GET", "/metrics", None);
    assert_eq!(code, 200);
    assert!(
        text.contains("zlink_mesh_peers{") && text.contains("rid=\"gateway\""),
        "{text}"
    );
    let (code, status) = http(&dashboard, "GET", "/api/status", None);
    assert_eq!(code, 200);
    assert!(status.contains("\"rid\":\"gateway\""), "{status}");
    let (code, page) = http(&dashboard, "GET", "/", None);
    assert_eq!(code, 200);
    assert!(page.contains("EventSource"), "the page");
    assert_eq!(
        http(&dashboard, "POST", "/api/control/undrain", None).0,
        401
    );
    assert_eq!(
        http(&dashboard, "POST", "/api/control/undrain", Some(TOKEN)).0,
        200
    );
    // The metrics-only listener has no controls.
    assert_eq!(
        http(&metrics, "POST", "/api/control/undrain", Some(TOKEN)).0,
        403
    );
    drop(server.stdin.take());
    let _ = server.kill();
    let _ = server.wait();
}
