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
