//! The one-process demos of each channel pattern run and print what the book says.

use std::process::Command;

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
fn rooms_demo_places_rooms_and_is_honest_about_a_stopped_server() {
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
    assert!(out.contains(": Unavailable ("), "{out}");
    assert!(out.contains("(not re-created)"), "{out}");
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
