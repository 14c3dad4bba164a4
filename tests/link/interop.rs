//! Interop with an independent ZMTP implementation: Python scripts on pyzmq (libzmq) and
//! cbor2, written from the book's wire chapter, act as a ClientServer client and as a
//! fanout subscriber. `.ci/run` creates their virtual environment
//! (`target/interop-venv`); `ZLINK_INTEROP_PYTHON` points elsewhere.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use zlink::{ClientServer, Fanout};
use zlink_tests::*;

fn python() -> PathBuf {
    let path = std::env::var_os("ZLINK_INTEROP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/interop-venv/bin/python")
        });
    assert!(
        path.exists(),
        "no Python for the interop tests at {}: run .ci/run (it creates the environment with pyzmq and cbor2)",
        path.display()
    );
    path
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("interop")
        .join(name)
}

#[tokio::test]
async fn a_libzmq_client_calls_a_client_server_channel() {
    let server = start(node("zlink-server").client_server(ClientServer::server(
        "echo-cs",
        echo_handlers("zlink-server", Default::default()),
    )))
    .await;
    let endpoint = server.channels().client_server_endpoint("echo-cs").unwrap();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(script("cs_client.py"))
            .args([&endpoint, "echo-cs", "hello from libzmq"])
            .output()
    })
    .await
    .unwrap()
    .expect("run python");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "python client failed:\n{stdout}\n{stderr}"
    );
    let reply: Echoed = serde_json::from_str(stdout.trim()).expect("a JSON reply");
    assert_eq!(reply.text, "hello from libzmq");
    assert_eq!(reply.by, "zlink-server");
    stop([server]).await;
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
struct PriceChanged {
    sku: String,
    cents: u64,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
struct Restocked {
    sku: String,
}

#[derive(Debug, Deserialize)]
struct SeenEvent {
    topic: String,
    packet: String,
    payload: serde_json::Value,
}

/// Runs the Python SUB against `publisher`'s "prices" endpoint (with `extra` arguments),
/// publishing until it has seen three `PriceChanged` events, and checks them.
async fn libzmq_subscriber_receives_prices(publisher: &zlink::Handle, extra: &[String]) {
    let endpoint = publisher.fanout().endpoint("prices").unwrap();
    let mut child = Command::new(python())
        .arg(script("fanout_sub.py"))
        .args([&endpoint, "PriceChanged", "3"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python");
    // PUB drops what is published before the subscription arrives: publish until the
    // subscriber has what it waits for.
    let give_up = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < give_up, "python subscriber got nothing");
        let event = PriceChanged {
            sku: "tea".into(),
            cents: 250,
        };
        publisher.fanout().publish("prices", &event).await.unwrap();
        publisher
            .fanout()
            .publish("prices", &Restocked { sku: "tea".into() })
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        status.success(),
        "python subscriber failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events: Vec<SeenEvent> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 3);
    for event in events {
        assert_eq!(
            (event.topic.as_str(), event.packet.as_str()),
            ("PriceChanged", "PriceChanged")
        );
        assert_eq!(event.payload["cents"], 250);
        assert_eq!(event.payload["sku"], "tea");
    }
}

#[tokio::test]
async fn a_libzmq_sub_receives_topic_filtered_events() {
    let publisher = start(node("zlink-pub").fanout(Fanout::publisher("prices"))).await;
    libzmq_subscriber_receives_prices(&publisher, &[]).await;
    stop([publisher]).await;
}

#[tokio::test]
async fn a_libzmq_curve_sub_receives_events_from_a_curve_publisher() {
    use zlink::security::CurveKeypair;
    let (publisher_keys, subscriber_keys) = (CurveKeypair::generate(), CurveKeypair::generate());
    let publisher = start(
        zlink::Runtime::builder()
            .curve(publisher_keys.clone())
            .trust_key(subscriber_keys.public())
            .fanout(Fanout::publisher("prices")),
    )
    .await;
    let keys = [
        publisher_keys.public().to_z85(),
        subscriber_keys.public().to_z85(),
        subscriber_keys.secret_z85(),
    ];
    libzmq_subscriber_receives_prices(&publisher, &keys).await;
    stop([publisher]).await;
}

/// A TCP relay in front of `upstream` that records every byte in both directions.
async fn recording_proxy(upstream: String) -> (String, Arc<Mutex<Vec<u8>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("tcp://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            let address = upstream.trim_start_matches("tcp://").to_string();
            let Ok(outbound) = tokio::net::TcpStream::connect(address).await else {
                continue;
            };
            let (in_read, in_write) = inbound.into_split();
            let (out_read, out_write) = outbound.into_split();
            tokio::spawn(relay(in_read, out_write, record.clone()));
            tokio::spawn(relay(out_read, in_write, record.clone()));
        }
    });
    (endpoint, seen)
}

async fn relay(
    mut from: impl tokio::io::AsyncRead + Unpin,
    mut to: impl tokio::io::AsyncWrite + Unpin,
    record: Arc<Mutex<Vec<u8>>>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = [0u8; 8192];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 || to.write_all(&buf[..n]).await.is_err() {
            break;
        }
        record.lock().unwrap().extend_from_slice(&buf[..n]);
    }
    let _ = to.shutdown().await;
}

async fn run_cs_client(args: Vec<String>, timeout_ms: &str) -> std::process::Output {
    let timeout_ms = timeout_ms.to_string();
    tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(script("cs_client.py"))
            .args(args)
            .env("ZLINK_RECV_TIMEOUT_MS", timeout_ms)
            .output()
    })
    .await
    .unwrap()
    .expect("run python")
}

fn curve_server_node(
    keys: &zlink::security::CurveKeypair,
    trusted: zlink::security::CurvePublicKey,
) -> zlink::RuntimeBuilder {
    zlink::Runtime::builder()
        .curve(keys.clone())
        .trust_key(trusted)
        .client_server(ClientServer::server(
            "echo-cs",
            echo_handlers("zlink-curve", Default::default()),
        ))
}

#[tokio::test]
async fn a_libzmq_curve_client_with_a_trusted_key_calls_a_client_server_channel() {
    use zlink::security::CurveKeypair;
    let (server_keys, client_keys) = (CurveKeypair::generate(), CurveKeypair::generate());
    let server = start(curve_server_node(&server_keys, client_keys.public())).await;
    let (endpoint, seen) =
        recording_proxy(server.channels().client_server_endpoint("echo-cs").unwrap()).await;
    let secret_text = "a secret that must not cross the wire in plaintext";
    let output = run_cs_client(
        vec![
            endpoint,
            "echo-cs".into(),
            secret_text.into(),
            server_keys.public().to_z85(),
            client_keys.public().to_z85(),
            client_keys.secret_z85(),
        ],
        "10000",
    )
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "python CURVE client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let reply: Echoed = serde_json::from_str(stdout.trim()).expect("a JSON reply");
    assert_eq!(
        (reply.text.as_str(), reply.by.as_str()),
        (secret_text, "zlink-curve")
    );
    let captured = seen.lock().unwrap().clone();
    assert!(captured.len() > 300, "nothing was captured");
    let contains = |needle: &[u8]| captured.windows(needle.len()).any(|w| w == needle);
    assert!(contains(b"CURVE"), "the greeting names the mechanism");
    for plaintext in [
        &b"Echo"[..],
        b"echo-cs",
        secret_text.as_bytes(),
        b"python-client",
    ] {
        assert!(
            !contains(plaintext),
            "{:?} crossed the wire in plaintext",
            String::from_utf8_lossy(plaintext)
        );
    }
    stop([server]).await;
}

#[tokio::test]
async fn untrusted_and_null_libzmq_clients_are_refused() {
    use zlink::security::CurveKeypair;
    let (server_keys, trusted, stranger) = (
        CurveKeypair::generate(),
        CurveKeypair::generate(),
        CurveKeypair::generate(),
    );
    let server = start(curve_server_node(&server_keys, trusted.public())).await;
    let endpoint = server.channels().client_server_endpoint("echo-cs").unwrap();
    let untrusted = run_cs_client(
        vec![
            endpoint.clone(),
            "echo-cs".into(),
            "hi".into(),
            server_keys.public().to_z85(),
            stranger.public().to_z85(),
            stranger.secret_z85(),
        ],
        "2000",
    )
    .await;
    assert_eq!(
        untrusted.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&untrusted.stderr)
    );
    let null = run_cs_client(vec![endpoint, "echo-cs".into(), "hi".into()], "2000").await;
    assert_eq!(
        null.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&null.stderr)
    );
    stop([server]).await;
}
