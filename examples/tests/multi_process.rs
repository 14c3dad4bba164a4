//! The multi-process mode of `mesh-demo`, run as documented: two server processes and one
//! client process that find each other through Redis, with no endpoints on any command line.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use zlink_testkit::RedisServer;

const BIN: &str = env!("CARGO_BIN_EXE_mesh-demo");

fn server(rid: &str, redis: &str) -> Child {
    Command::new(BIN)
        .args(["--role", "server", "--rid", rid, "--redis", redis])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn server")
}

/// Sends Ctrl-C (SIGINT) and waits for a clean exit; returns what the process printed.
fn interrupt(mut child: Child) -> String {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let exit = loop {
        if let Some(exit) = child.try_wait().expect("wait") {
            break exit;
        }
        assert!(
            Instant::now() < deadline,
            "server did not stop after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    assert!(exit.success(), "server exited with {exit}: {out}");
    out
}

#[test]
fn processes_discover_each_other_through_redis() {
    let redis = RedisServer::start().expect("redis-server");
    let url = redis.url();
    let a = server("server-a", &url);
    let b = server("server-b", &url);
    let client = Command::new(BIN)
        .args([
            "--role",
            "client",
            "--redis",
            &url,
            "--servers",
            "2",
            "--requests",
            "4",
        ])
        .output()
        .expect("run client");
    let out = String::from_utf8_lossy(&client.stdout).to_string();
    let err = String::from_utf8_lossy(&client.stderr).to_string();
    assert!(client.status.success(), "client failed:\n{out}\n{err}");
    assert!(out.contains("answered by server-a"), "{out}");
    assert!(out.contains("answered by server-b"), "{out}");
    let a_out = interrupt(a);
    let b_out = interrupt(b);
    assert!(
        a_out.contains("server server-a stopped after answering 2 request(s)"),
        "{a_out}"
    );
    assert!(
        b_out.contains("server server-b stopped after answering 2 request(s)"),
        "{b_out}"
    );
}

/// Runs `bin` with `args` to its end; returns (success, stdout, stderr).
fn finished(bin: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(bin).args(args).output().expect("run");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn spawn(bin: &str, args: &[&str]) -> Child {
    Command::new(bin)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// The Security chapter's command-line steps: keys from zlink-keys, a server that
/// trusts the client's public key, a client that names the server's; a stranger's key is
/// refused, and the client says so.
#[test]
fn mesh_demo_runs_curve_between_processes_with_keys_from_zlink_keys() {
    let keys = env!("CARGO_BIN_EXE_zlink-keys");
    let dir = std::env::temp_dir().join(format!("zlink-mp-curve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let d = dir.to_str().expect("utf-8").to_string();
    for name in ["server-a", "client", "stranger"] {
        assert!(finished(keys, &["new", name, "--dir", &d]).0);
    }
    let file = |f: &str| format!("{d}/{f}");
    let endpoint = zlink_testkit::unused_endpoint();
    let server = spawn(
        BIN,
        &[
            "--role",
            "server",
            "--rid",
            "server-a",
            "--listen",
            &endpoint,
            "--curve-key",
            &file("server-a.key"),
            "--trust",
            &file("client.pub"),
        ],
    );
    let peer = format!("{endpoint},{}", file("server-a.pub"));
    let (ok, out, err) = finished(
        BIN,
        &[
            "--role",
            "client",
            "--curve-key",
            &file("client.key"),
            "--peer",
            &peer,
            "--requests",
            "3",
        ],
    );
    assert!(ok, "the trusted client failed:\n{out}\n{err}");
    assert!(out.contains("links: CURVE"), "{out}");
    assert!(out.contains("answered: server-a 3"), "{out}");
    let (ok, out, err) = finished(
        BIN,
        &[
            "--role",
            "client",
            "--curve-key",
            &file("stranger.key"),
            "--peer",
            &peer,
            "--requests",
            "1",
        ],
    );
    assert!(!ok, "a stranger's key was admitted:\n{out}");
    assert!(
        err.contains("CURVE handshake") && err.contains("client key not trusted"),
        "the stranger is told why: {err}"
    );
    let server_out = interrupt(server);
    assert!(
        server_out.contains("answering 3 request(s)"),
        "{server_out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `rooms --redis` one node per process: a room server under any RID, and a lobby that
/// finds it by the type it serves. The room server stopped with Ctrl-C and started again
/// under the same RID serves the same room and player IDs anew (its shutdown released
/// them), so the lobby's second visit is accepted too.
#[test]
fn rooms_runs_one_node_per_process_through_redis_with_any_rid() {
    let redis = RedisServer::start().expect("redis-server");
    let url = redis.url();
    let rooms = env!("CARGO_BIN_EXE_rooms");
    let server = spawn(
        rooms,
        &["--redis", &url, "--role", "server", "--rid", "hall-1"],
    );
    let (ok, out, err) = finished(
        rooms,
        &["--redis", &url, "--role", "lobby", "--rid", "visitor"],
    );
    assert!(ok, "the lobby failed:\n{out}\n{err}");
    assert!(out.contains("waiting for a room server"), "{out}");
    assert!(
        out.contains("arena-1 runs on hall-1; visitor joins it: accepted"),
        "{out}"
    );
    let server_out = interrupt(server);
    assert!(
        server_out.contains("room server hall-1 is up"),
        "{server_out}"
    );
    assert!(
        server_out.contains("room server hall-1: stopped"),
        "{server_out}"
    );
    let again = spawn(
        rooms,
        &["--redis", &url, "--role", "server", "--rid", "hall-1"],
    );
    let (ok, out, err) = finished(
        rooms,
        &["--redis", &url, "--role", "lobby", "--rid", "visitor"],
    );
    assert!(ok, "the lobby failed after the restart:\n{out}\n{err}");
    assert!(
        out.contains("arena-1 runs on hall-1; visitor joins it: accepted"),
        "the same IDs are usable after a Ctrl-C and a restart: {out}"
    );
    interrupt(again);
}

/// A lobby whose Redis is not there says the store is unreachable, not that no server
/// registered.
#[test]
fn a_lobby_without_its_redis_says_the_store_is_unreachable() {
    let url = format!("redis://127.0.0.1:{}/", zlink_testkit::unused_port());
    let (ok, out, err) = finished(
        env!("CARGO_BIN_EXE_rooms"),
        &["--redis", &url, "--role", "lobby"],
    );
    assert!(!ok, "{out}");
    assert!(err.contains("the Location Store is unreachable"), "{err}");
}
