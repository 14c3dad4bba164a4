//! The repository's Python STREAM client (`clients/python`, asyncio) against real
//! gateway nodes, over TCP and over WebSocket (the `websockets` package). `.ci/run` creates their environment
//! (`target/interop-venv`); `ZLINK_INTEROP_PYTHON` points elsewhere.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::Ordering;

use zlink::session::{CloseReason, StreamLimits};
use zlink_testkit::wait_until;

use crate::common::{chat_node, WAIT};

/// The interpreter the interop scripts run with.
pub fn python() -> PathBuf {
    let path = std::env::var_os("ZLINK_INTEROP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/interop-venv/bin/python")
        });
    assert!(
        path.exists(),
        "no Python for the interop tests at {}: run .ci/run (it creates the environment)",
        path.display()
    );
    path
}

/// The path of interop script `name`.
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("interop")
        .join(name)
}

/// Runs `script` against `address` for `rounds`; its JSON summary.
async fn run(script_name: &str, address: String, rounds: u32) -> serde_json::Value {
    let script = script(script_name);
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(script)
            .arg(address)
            .arg(rounds.to_string())
            .output()
    })
    .await
    .unwrap()
    .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "python client failed:\n{stdout}\n{stderr}"
    );
    serde_json::from_str(stdout.trim()).expect("a JSON summary")
}

#[tokio::test]
async fn a_python_socket_client_gets_every_answer_once_and_every_push_in_order() {
    let (runtime, counters, address) = chat_node("tcp", StreamLimits::default()).await;
    let summary = run("stream_client.py", address, 200).await;
    assert_eq!(summary["answers"], 200);
    assert_eq!(summary["pushes"], 200);
    assert_eq!(counters.notes.load(Ordering::SeqCst), 200);
    wait_until(WAIT, "the session ended", || async {
        counters.disconnected.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(counters.reasons(), vec![CloseReason::ClientClose]);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_python_websocket_client_gets_every_answer_once_and_every_push_in_order() {
    let (runtime, counters, address) = chat_node("ws", StreamLimits::default()).await;
    let summary = run("stream_ws_client.py", address, 200).await;
    assert_eq!(summary["answers"], 200);
    assert_eq!(summary["pushes"], 200);
    wait_until(WAIT, "the session ended", || async {
        counters.disconnected.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(counters.reasons(), vec![CloseReason::ClientClose]);
    runtime.shutdown().await;
}

#[test]
fn the_python_clients_own_tests_pass() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clients/python");
    let output = Command::new(python())
        .args(["-m", "unittest", "discover", "-s", "tests"])
        .current_dir(dir)
        .output()
        .expect("python runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("Ran 8 tests"), "{stderr}");
}
