//! The JavaScript STREAM client's own tests (`clients/js/test`, Node's test runner)
//! against this crate's `gateway-chat` binary, over TCP and WebSocket. Node and the
//! client's `ws` dev dependency must be installed (`.ci/run` does: `npm ci` in
//! `clients/js`); a test that cannot start fails.

use std::process::Command;

#[test]
fn the_js_client_passes_its_tests_in_node_against_a_real_gateway() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../clients/js");
    assert!(
        std::path::Path::new(dir).join("node_modules/ws").exists(),
        "run `npm ci` in clients/js first (the ws package for Node before 22)"
    );
    let output = Command::new("node")
        .args(["--test", "test/"])
        .current_dir(dir)
        .env("ZLINK_GATEWAY_CHAT", env!("CARGO_BIN_EXE_gateway-chat"))
        .output()
        .expect("node runs (Node.js 18 or later)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "node --test failed:\n{stdout}\n{stderr}"
    );
    let passed = stdout
        .lines()
        .find_map(|line| line.strip_prefix("# pass "))
        .and_then(|n| n.trim().parse::<u32>().ok())
        .unwrap_or(0);
    assert!(passed >= 20, "every test ran: {passed} passed\n{stdout}");
}
