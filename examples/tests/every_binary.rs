//! What every example binary has in common: `--help`, CURVE from a key file made by
//! `zlink-keys`, and its other modes, each run as the book shows it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const DEMOS: [&str; 6] = [
    env!("CARGO_BIN_EXE_mesh-demo"),
    env!("CARGO_BIN_EXE_rooms"),
    env!("CARGO_BIN_EXE_client-server-demo"),
    env!("CARGO_BIN_EXE_fanout-demo"),
    env!("CARGO_BIN_EXE_gateway-chat"),
    env!("CARGO_BIN_EXE_league"),
];
const KEYS: &str = env!("CARGO_BIN_EXE_zlink-keys");

fn output(bin: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .output()
        .expect("run the binary")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// Runs `bin` and returns its stdout, failing the test with both streams unless it
/// succeeded.
fn succeeds(bin: &str, args: &[&str]) -> String {
    let out = output(bin, args);
    assert!(
        out.status.success(),
        "{bin} {args:?} failed:\n{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// A fresh directory for this test's key files.
fn key_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zlink-keys-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn new_key(dir: &Path, name: &str) -> String {
    let dir = dir.to_str().expect("utf-8 path");
    succeeds(KEYS, &["new", name, "--dir", dir])
        .trim()
        .to_string()
}

fn path(dir: &Path, file: &str) -> String {
    dir.join(file).to_str().expect("utf-8 path").to_string()
}

#[test]
fn every_binary_answers_help_with_its_modes_and_the_common_flags() {
    for bin in DEMOS {
        let out = succeeds(bin, &["--help"]);
        assert!(out.contains("usage"), "{bin}: {out}");
        assert!(out.contains("--curve-key FILE"), "{bin}: {out}");
        assert!(out.contains("RUST_LOG"), "{bin}: {out}");
        let bad = output(bin, &["--no-such-flag"]);
        assert_eq!(
            bad.status.code(),
            Some(2),
            "{bin} takes a bad flag as a usage error"
        );
        assert!(
            text(&bad.stderr).contains("usage"),
            "{bin}: {}",
            text(&bad.stderr)
        );
    }
    assert!(succeeds(KEYS, &["--help"]).contains("zlink-keys new NAME"));
}

#[test]
fn zlink_keys_makes_a_pair_the_nodes_load_and_never_overwrites_it() {
    let dir = key_dir("pair");
    let public = new_key(&dir, "node-a");
    assert_eq!(public.len(), 40, "a Z85 public key: {public}");
    assert_eq!(
        succeeds(KEYS, &["public", &path(&dir, "node-a.key")]).trim(),
        public
    );
    assert_eq!(
        succeeds(KEYS, &["public", &path(&dir, "node-a.pub")]).trim(),
        public
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("node-a.key"))
            .expect("key file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the secret is the owner's only");
    }
    let again = output(
        KEYS,
        &["new", "node-a", "--dir", dir.to_str().expect("utf-8")],
    );
    assert!(
        !again.status.success(),
        "an existing key is not overwritten"
    );
    assert!(
        text(&again.stderr).contains("exists"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(
        succeeds(KEYS, &["public", &path(&dir, "node-a.key")]).trim(),
        public
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each one-process demo runs as well over CURVE, its nodes sharing the key file given.
#[test]
fn every_demo_runs_over_curve_with_a_key_from_zlink_keys() {
    let dir = key_dir("demos");
    let public = new_key(&dir, "demo");
    let key = path(&dir, "demo.key");
    let expected: [(&str, &str); 6] = [
        (DEMOS[0], "new requests now go to server-b only"),
        (DEMOS[1], "created anew on"),
        (DEMOS[2], "quotes-b answered 6 of 8"),
        (
            DEMOS[3],
            r#"subscribed to tea.:         ["green tea = 280"]"#,
        ),
        (
            DEMOS[4],
            "0 missing, 0 repeated or reordered, 0 disconnected",
        ),
        (DEMOS[5], "board-west heard 4 goals"),
    ];
    for (bin, line) in expected {
        let out = succeeds(bin, &["--curve-key", &key]);
        assert!(
            out.contains(&format!(
                "links: CURVE; the first node's public key is {public}"
            )),
            "{bin}: {out}"
        );
        assert!(out.contains(line), "{bin}: {out}");
        let plain = succeeds(bin, &[]);
        assert!(plain.contains("links: NULL"), "{bin}: {plain}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rooms_drains_either_room_server_the_plain_run_names() {
    let out = succeeds(DEMOS[1], &["--drain", "rooms-west"]);
    assert!(out.contains("Draining rooms-west while they walk"), "{out}");
    assert!(out.contains("to rooms-east in"), "{out}");
    assert!(out.contains("failed calls: 0, lost: 0"), "{out}");
    let refused = output(DEMOS[1], &["--drain", "rooms-north"]);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("--drain takes rooms-east or rooms-west"),
        "{}",
        text(&refused.stderr)
    );
}

const ZONE_WORLD: &str = env!("CARGO_BIN_EXE_zone-world");

/// `zone-world` answers `--help` and a bad flag like the others, and its load mode runs
/// (small) and finds nothing lost.
#[test]
fn zone_world_answers_help_and_its_load_mode_loses_nothing() {
    let help = succeeds(ZONE_WORLD, &["--help"]);
    for mode in [
        "--role zone",
        "--load SECONDS",
        "--curve-key FILE",
        "RUST_LOG",
    ] {
        assert!(help.contains(mode), "{mode}: {help}");
    }
    let bad = output(ZONE_WORLD, &["--no-such-flag", "x"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
    let lonely = output(ZONE_WORLD, &["--role", "zone"]);
    assert!(!lonely.status.success(), "--role needs --redis");
    let load = succeeds(
        ZONE_WORLD,
        &["--load", "4", "--bots", "40", "--clients", "4"],
    );
    assert!(
        load.contains("clients: 0 disconnected, 0 acks lost, 0 duplicated or out of order"),
        "{load}"
    );
    assert!(load.contains("border crossing to another node"), "{load}");
}

/// `zone-world` with no flags starts the whole world, prints the game and ops URLs and
/// the control token, and stops cleanly on Ctrl-C.
#[test]
fn zone_world_prints_its_urls_and_stops_on_ctrl_c() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(ZONE_WORLD)
        .args(["--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("zone-world starts");
    let stdout = child.stdout.take().expect("its stdout");
    let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        seen.push(line.clone());
        if line.contains("bots walk") {
            break;
        }
    }
    let all = seen.join("\n");
    assert!(all.contains("game: http://127.0.0.1:"), "{all}");
    assert!(all.contains("ops: http://127.0.0.1:"), "{all}");
    assert!(all.contains("control token: "), "{all}");
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(interrupted.success());
    let status = child.wait().expect("it exits");
    assert!(status.success(), "{status}");
}
