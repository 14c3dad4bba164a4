//! The one-process demos of each channel pattern run and print what the book says.

use std::process::Command;

const WAIT: std::time::Duration = std::time::Duration::from_secs(10);

fn run(bin: &str) -> String {
    run_with(bin, &[])
}

fn run_with(bin: &str, args: &[&str]) -> String {
    let output = Command::new(bin).args(args).output().expect("run demo");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{bin} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn client_server_demo_splits_by_weight() {
    let out = run(env!("CARGO_BIN_EXE_client-server-demo"));
    assert!(out.contains("quotes-a answered 2 of 8"), "{out}");
    assert!(out.contains("quotes-b answered 6 of 8"), "{out}");
}

#[test]
fn fanout_demo_filters_by_topic() {
    let out = run(env!("CARGO_BIN_EXE_fanout-demo"));
    assert!(
        out.contains(r#"subscribed to PriceChanged: ["coffee = 320"]"#),
        "{out}"
    );
    assert!(
        out.contains(r#"subscribed to tea.:         ["green tea = 280"]"#),
        "{out}"
    );
}

#[test]
fn league_demo_starts_matches_by_their_first_goal_and_every_scoreboard_hears_every_goal() {
    let out = run(env!("CARGO_BIN_EXE_league"));
    assert!(
        out.contains("NotFound (a plain call starts nothing)"),
        "{out}"
    );
    assert!(out.contains("final: red scores; red on arena-"), "{out}");
    assert!(
        out.contains("final: red scores; red-blue-red on arena-"),
        "{out}"
    );
    for board in ["board-east", "board-west"] {
        assert!(
            out.contains(&format!(
                "{board} heard 4 goals: final goal 1 for red, final goal 2 for blue, final goal 3 for red, semi-1 goal 1 for blue"
            )),
            "{out}"
        );
    }
    assert!(out.contains("final on arena-"), "{out}");
    assert!(out.contains("was idle: evicted"), "{out}");
    assert!(
        out.contains("a new goal in final starts it again: green on arena-"),
        "{out}"
    );
    assert!(out.contains("(generation 1 -> 2)"), "{out}");
}

#[test]
fn rooms_demo_places_rooms_and_releases_a_stopped_servers_rooms() {
    let out = run(env!("CARGO_BIN_EXE_rooms"));
    // Players are Actors that join a room on their node, talk, and leave.
    assert!(out.contains("ana  created on rooms-east"), "{out}");
    assert!(out.contains("accepted (welcome to the"), "{out}");
    assert!(
        out.contains("players [\"ana\", \"bo\"], lines [\""),
        "{out}"
    );
    assert!(
        out.contains("failed: Unavailable (rooms-west runs no players"),
        "{out}"
    );
    assert!(out.contains("back in an Entry Spot (true)"), "{out}");
    // A clean stop released rooms-west's rooms: their IDs read Missing, and the next
    // get_or_create makes a new incarnation elsewhere.
    assert!(out.contains("rooms-west: stopped"), "{out}");
    assert!(out.contains("on rooms-west: NotFound ("), "{out}");
    assert!(
        out.contains("created anew on rooms-east (generation 2)"),
        "{out}"
    );
}

#[test]
fn rooms_drain_moves_the_walking_players_and_loses_no_step() {
    let out = run_with(env!("CARGO_BIN_EXE_rooms"), &["--drain", "rooms-east"]);
    assert!(out.contains("Draining rooms-east while they walk"), "{out}");
    assert!(
        out.contains("players and 1 room(s) to rooms-west in"),
        "{out}"
    );
    assert!(out.contains("; 0 stayed: []"), "{out}");
    assert!(
        out.contains("now runs on rooms-west with players [\"walker-")
            && out.contains("and 1 line(s) said;"),
        "the room moved with its seated player and what was said: {out}"
    );
    assert!(out.contains("still sits in \"arena-"), "{out}");
    assert!(out.contains("; 0 moves failed"), "{out}");
    assert!(out.contains("failed calls: 0, lost: 0"), "{out}");
}

/// The number right after `before` in `text`.
fn number_after(text: &str, before: &str) -> usize {
    let at = text
        .find(before)
        .unwrap_or_else(|| panic!("{before:?} in:\n{text}"))
        + before.len();
    text[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a number after {before:?} in:\n{text}"))
}

#[test]
fn gateway_chat_drain_moves_the_players_while_every_client_stays_connected_and_hears_every_line() {
    let out = run_with(
        env!("CARGO_BIN_EXE_gateway-chat"),
        &["--drain", "players-1"],
    );
    assert!(
        out.contains("8 clients: ")
            && out.contains(" 0 missing, 0 repeated or reordered, 0 disconnected"),
        "{out}"
    );
    let moved = number_after(&out, "moved ");
    assert!(moved > 0, "placement put players on players-1: {out}");
    assert_eq!(
        number_after(
            &out,
            "lines heard, 0 missing, 0 repeated or reordered, 0 disconnected\n"
        ),
        moved,
        "every moved player's client saw its player on both nodes: {out}"
    );
    assert!(
        out.contains("(Tcp, lobby)") && out.contains("(WebSocket, arena)"),
        "{out}"
    );
}

#[test]
fn gateway_chat_refuses_to_drain_a_node_that_runs_no_players() {
    let output = Command::new(env!("CARGO_BIN_EXE_gateway-chat"))
        .args(["--drain", "hall"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--drain takes players-1 or players-2"),
        "{stderr}"
    );
}

#[test]
fn the_bundled_chat_client_talks_through_a_served_gateway_and_survives_a_drain() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let mut server = Killed(
        Command::new(env!("CARGO_BIN_EXE_gateway-chat"))
            .args(["--serve", "--port", "0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut server_out = BufReader::new(server.0.stdout.take().unwrap());
    let mut line = String::new();
    let tcp = loop {
        line.clear();
        assert!(
            server_out.read_line(&mut line).unwrap() > 0,
            "the server ended"
        );
        if let Some(rest) = line.strip_prefix("gateway: TCP clients at ") {
            break rest.split(',').next().unwrap().to_string();
        }
    };
    let mut client = Killed(
        Command::new(env!("CARGO_BIN_EXE_gateway-chat"))
            .args(["client", "ann", "lobby", "--addr", &tcp])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut typed = client.0.stdin.take().unwrap();
    let mut heard = BufReader::new(client.0.stdout.take().unwrap()).lines();
    let mut until = |wanted: &str| -> String {
        for line in heard.by_ref() {
            let line = line.unwrap();
            if line.contains(wanted) {
                return line;
            }
        }
        panic!("the client ended before {wanted:?}");
    };
    until("join: ");
    writeln!(typed, "/where").unwrap();
    let before = until("your player runs on ");
    let from = before.rsplit(' ').next().unwrap().to_string();
    writeln!(typed, "hello").unwrap();
    until("[lobby #1] ann: hello");
    // Drain the node the player runs on: the client stays connected.
    let mut commands = server.0.stdin.take().unwrap();
    writeln!(commands, "drain {from}").unwrap();
    let drained = loop {
        line.clear();
        assert!(
            server_out.read_line(&mut line).unwrap() > 0,
            "the server ended"
        );
        if line.starts_with("moved ") {
            break line.clone();
        }
    };
    assert!(
        drained.contains(&format!("moved 1 players off {from}")),
        "{drained}"
    );
    writeln!(typed, "/where").unwrap();
    let after = until("your player runs on ");
    assert!(!after.ends_with(&from), "the player moved: {after}");
    writeln!(typed, "still here").unwrap();
    until("[lobby #2] ann: still here");
    drop(typed);
    assert!(client.0.wait().unwrap().success());
}

/// A child process killed when the test ends, passed or not.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `gateway-chat --serve` with TLS and a session cap from the command line: both
/// endpoints are printed as `tls://` and `wss://`, a TLS client logs in, one client over
/// the cap is told `ServerDrain`, and Ctrl-C stops it while its stdin is still open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_chat_serves_tls_with_a_session_cap_and_stops_on_ctrl_c_with_stdin_open() {
    use tokio::io::AsyncBufReadExt;
    use zlink_testkit::stream_client::StreamClient;
    let dir = std::env::temp_dir().join(format!("gateway-chat-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = zlink_testkit::stream_client::self_signed_localhost();
    std::fs::write(dir.join("cert.pem"), &cert).unwrap();
    std::fs::write(dir.join("key.pem"), &key).unwrap();
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_gateway-chat"))
        .args([
            "--serve",
            "--port",
            "0",
            "--max-sessions",
            "1",
            "--tls-cert",
        ])
        .arg(dir.join("cert.pem"))
        .arg("--tls-key")
        .arg(dir.join("key.pem"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let _stdin_kept_open = server.stdin.take();
    let mut out = tokio::io::BufReader::new(server.stdout.take().unwrap()).lines();
    let (tls, wss) = loop {
        let line = out.next_line().await.unwrap().expect("the server runs");
        if let Some(rest) = line.strip_prefix("gateway: TCP clients at ") {
            let (tcp, ws) = rest.split_once(", WebSocket clients at ").unwrap();
            break (tcp.to_string(), ws.to_string());
        }
    };
    assert!(tls.starts_with("tls://127.0.0.1:"), "{tls}");
    assert!(wss.starts_with("wss://127.0.0.1:"), "{wss}");
    let address = tls.trim_start_matches("tls://");
    let mut client = StreamClient::tls(address, &cert).await.unwrap();
    let welcome = client
        .call_json(1, "login", serde_json::json!({ "name": "tia" }), WAIT)
        .await
        .unwrap();
    assert_eq!(welcome.value()["player"], "tia", "{welcome:?}");
    // The cap is one session per listener: the next client is refused.
    let mut refused = StreamClient::tls(address, &cert).await.unwrap();
    let notice = refused.closed_with(WAIT).await.unwrap();
    assert_eq!(notice.map(|n| n.0), Some(4), "ServerDrain");
    // Ctrl-C, with stdin still open.
    let pid = server.id().unwrap().to_string();
    let signalled = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(signalled.success());
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), server.wait())
        .await
        .expect("the server stops within 20 s of Ctrl-C")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
