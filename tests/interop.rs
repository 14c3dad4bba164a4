//! Interop with an independent ZMTP implementation: Python scripts on pyzmq (libzmq) and
//! cbor2, written from the book's wire chapter, act as a ClientServer client and as a
//! fanout subscriber. `.ci/run` creates their virtual environment
//! (`target/interop-venv`); `ZLINK_INTEROP_PYTHON` points elsewhere.

use std::path::PathBuf;
use std::process::{Command, Stdio};
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
    let endpoint = server.client_server_endpoint("echo-cs").unwrap();
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

#[tokio::test]
async fn a_libzmq_sub_receives_topic_filtered_events() {
    let publisher = start(node("zlink-pub").fanout(Fanout::publisher("prices"))).await;
    let endpoint = publisher.fanout_endpoint("prices").unwrap();
    let mut child = Command::new(python())
        .arg(script("fanout_sub.py"))
        .args([&endpoint, "PriceChanged", "3"])
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
        publisher.publish("prices", &event).await.unwrap();
        publisher
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
    stop([publisher]).await;
}
