//! Zone World in several processes, as `examples/zone-world.sh` runs it: three zone
//! nodes, the gateway and the ops node, each `zone-world --redis URL --role ...`, on a
//! private redis-server. A zone node SIGKILLed: its zones become Unavailable and its
//! players' browsers get a clean close with the reason; after `zlink-admin reclaim`, a
//! replacement node under the same RID serves the zones again, and a player logging in
//! again enters the world anew.

#[path = "zone_world/browser.rs"]
mod browser;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use browser::Browser;
use zlink::store::{RedisLocationStore, RedisOptions};
use zlink::{ErrorKind, Runtime};
use zlink_examples::zone_world::launch::MESH;
use zlink_examples::zone_world::messages::Look;
use zlink_examples::zone_world::world::Zone;
use zlink_examples::zone_world::zone::ZoneSpotClient;
use zlink_testkit::RedisServer;

const BIN: &str = env!("CARGO_BIN_EXE_zone-world");
const WAIT: Duration = Duration::from_secs(30);

/// One `zone-world` process and the lines it prints.
struct Process {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Process {
    fn start(redis: &str, role: &[&str]) -> Process {
        let mut child = Command::new(BIN)
            .args(["--redis", redis, "--port", "0", "--role"])
            .args(role)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("zone-world starts");
        let stdout = child.stdout.take().expect("its stdout");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        Process {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The first line (printed so far or next) holding `wanted`.
    fn line(&mut self, wanted: &str) -> String {
        if let Some(line) = self.seen.iter().find(|l| l.contains(wanted)) {
            return line.clone();
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!("no line with {wanted:?} within {WAIT:?}: {:?}", self.seen)
            });
            self.seen.push(line.clone());
            if line.contains(wanted) {
                return line;
            }
        }
    }

    fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `zlink-admin`, built next to `zone-world` (`cargo test --workspace` builds both).
fn admin(redis: &str, args: &[&str]) -> Output {
    let mut path = PathBuf::from(BIN);
    path.set_file_name("zlink-admin");
    assert!(
        path.exists(),
        "{} is missing: build it (cargo build -p zlink-admin; cargo test --workspace builds it)",
        path.display()
    );
    Command::new(path)
        .args(["--redis", redis, "--prefix", MESH])
        .args(args)
        .output()
        .expect("zlink-admin runs")
}

/// A node of the world's mesh that only looks.
async fn observer(redis: &str) -> Runtime {
    let store = RedisLocationStore::new(RedisOptions::new(redis, MESH)).expect("store");
    Runtime::builder()
        .mesh_name(MESH)
        .rid("observer")
        .listen("tcp://127.0.0.1:0")
        .location_store(Arc::new(store))
        .discovery_interval(Duration::from_millis(200))
        .build()
        .expect("valid")
        .start()
        .await
        .expect("the observer starts")
}

/// The gateway's WebSocket address, from the line it prints.
/// The gateway's WebSocket address, once it says players can log in.
fn browsers(gateway: &mut Process) -> String {
    let line = gateway.line("browsers connect to ws://");
    let (_, after) = line.split_once("ws://").expect("a ws:// endpoint");
    gateway.line("players can log in");
    after.trim_end_matches([')', '/']).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zw_g2_a_killed_zone_node_closes_its_players_cleanly_and_a_replacement_serves_its_zones_after_reclaim(
) {
    let redis = RedisServer::start().expect("redis-server");
    let url = redis.url();
    let mut zone_nodes: Vec<Process> = ["zn-a", "zn-b", "zn-c"]
        .iter()
        .map(|rid| Process::start(&url, &["zone", "--rid", rid]))
        .collect();
    let mut gateway = Process::start(&url, &["gateway"]);
    let _ops = Process::start(&url, &["ops", "--bots", "0"]);
    zone_nodes[0].line("zone node zn-a runs [\"nw\", \"ne\"]");
    zone_nodes[1].line("zone node zn-b runs [\"sw\", \"se\"]");
    let address = browsers(&mut gateway);
    let (mut kim, _) = Browser::login(&address, "kim").await;
    let entered = kim.entered().await;
    assert_eq!((entered.zone, entered.node.as_str()), (Zone::Nw, "zn-a"));

    zone_nodes[0].signal("KILL");
    let observer = observer(&url).await;
    let nw = ZoneSpotClient::new(&observer, "nw");
    let deadline = Instant::now() + WAIT;
    loop {
        match nw.look(&Look).await {
            Err(e) if e.kind() == Some(ErrorKind::Unavailable) => break,
            other => assert!(Instant::now() < deadline, "nw never Unavailable: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The next move finds the player gone: a clean close, saying why.
    kim.step(1, 1, 0).await;
    let (reason, why) = kim.closed().await;
    assert_eq!(reason, 4, "ServerDrain: {why}");
    assert!(why.contains("cannot be reached"), "{why}");

    // Refused while the dead node's lease lives; then every object of it released.
    let early = admin(&url, &["reclaim", "--node", "zn-a"]);
    assert_eq!(
        early.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&early.stdout)
    );
    let deadline = Instant::now() + WAIT;
    loop {
        let reclaimed = admin(&url, &["reclaim", "--node", "zn-a"]);
        if reclaimed.status.success() {
            break;
        }
        assert!(Instant::now() < deadline, "never reclaimed: {reclaimed:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let mut replacement = Process::start(&url, &["zone", "--rid", "zn-a"]);
    replacement.line("zone node zn-a runs [\"nw\", \"ne\"]");
    // Once every node has heard of the replacement, the zone answers and kim comes back.
    let deadline = Instant::now() + WAIT;
    let view = loop {
        match nw.look(&Look).await {
            Ok(view) => break view,
            Err(e) => assert!(Instant::now() < deadline, "nw never answered again: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(view.zone, Zone::Nw);
    let mut again = loop {
        match Browser::try_login(&address, "kim").await {
            Ok((again, _)) => break again,
            Err(e) => assert!(Instant::now() < deadline, "kim never logged in again: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let anew = again.entered().await;
    assert_eq!((anew.zone, anew.node.as_str()), (Zone::Nw, "zn-a"));
    assert!(anew.generation > entered.generation, "a new incarnation");
    observer.shutdown().await;
}
