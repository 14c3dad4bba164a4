//! `zlink-admin` against a real `redis-server` and a node process killed with SIGKILL: it
//! lists the nodes and what the dead node owned, refuses to reclaim while the node's lease
//! lives (and says so), reclaims once it expired, and the IDs are created anew.

use std::process::Output;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use zlink::object::{Actor, ActorContext, ActorCreation};
use zlink::store::{LocationStore, OwnerLeaseSettings, RedisLocationStore, RedisOptions};
use zlink::Runtime;
use zlink_testkit::{wait_until, RedisServer};

const MESH: &str = "admin-mesh";
const PREFIX: &str = "admin-test";
const WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(reply = Counted)]
struct Count;

#[derive(Debug, serde::Serialize, serde::Deserialize, zlink::Message)]
struct Counted(u64);

struct Counter(u64);

#[zlink::actor(type = "counter", relocation = disable)]
impl Counter {
    #[handler]
    async fn count(&mut self, _count: Count, _ctx: &ActorContext) -> zlink::Result<Counted> {
        self.0 += 1;
        Ok(Counted(self.0))
    }
}

impl Actor for Counter {}

fn store(url: &str) -> Arc<dyn LocationStore> {
    let options = RedisOptions::new(url.to_string(), PREFIX);
    Arc::new(RedisLocationStore::new(options).expect("store options"))
}

/// A node on Redis `url`: quick leases (TTL 1.5 s), serving counters when `serves`.
async fn node(rid: &str, url: &str, serves: bool) -> Runtime {
    let mut builder = Runtime::builder()
        .mesh_name(MESH)
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
        .location_store(store(url))
        .relocation_store(<dyn zlink::store::RelocationStore>::in_memory())
        .owner_lease(OwnerLeaseSettings {
            renew_interval: Duration::from_millis(200),
            ttl: Duration::from_millis(1500),
            renew_timeout: Duration::from_millis(300),
            fencing_margin: Duration::from_millis(500),
        })
        .discovery_interval(Duration::from_millis(100));
    if serves {
        builder = builder.actor_type(Counter::actor_type(|_| Counter(0)).expect("a valid type"));
    }
    builder
        .build()
        .expect("valid config")
        .start()
        .await
        .expect("start")
}

/// The child process: node `victim` serving counters until it is killed.
#[tokio::test]
#[ignore = "run as a child process by zlink_admin_reclaims_a_killed_nodes_objects_only_after_its_lease_expired"]
async fn victim_node() {
    let url = std::env::var("ZLINK_CHILD_REDIS").expect("ZLINK_CHILD_REDIS");
    let _rt = node("victim", &url, true).await;
    println!("\nready");
    std::future::pending::<()>().await;
}

async fn admin(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zlink-admin"))
        .args(["--redis", url, "--prefix", PREFIX])
        .args(args)
        .output()
        .await
        .expect("zlink-admin runs")
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "JSON on stdout ({e}): {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn zlink_admin_reclaims_a_killed_nodes_objects_only_after_its_lease_expired() {
    let redis = RedisServer::start().expect("redis-server");
    let url = redis.url();
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["victim_node", "--exact", "--ignored", "--nocapture"])
        .env("ZLINK_CHILD_REDIS", &url)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the victim");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.expect("the child's stdout") {
            if line == "ready" {
                return;
            }
        }
        panic!("the victim ended before it started");
    })
    .await
    .expect("the victim starts");
    let gateway = node("gateway", &url, false).await;
    gateway
        .actors()
        .ready("counter", 1)
        .await
        .expect("victim ready");
    for i in 0..3 {
        let created = gateway
            .actors()
            .create(&format!("c{i}"), "counter")
            .await
            .unwrap();
        assert_eq!(created.rid, "victim");
    }
    child.start_kill().expect("SIGKILL the victim");
    let _ = child.wait().await;

    let nodes = json(&admin(&url, &["nodes", "--mesh", MESH, "--json"]).await);
    let victim = nodes
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["rid"] == "victim")
        .expect("the victim is listed");
    assert_eq!(victim["lease_live"], true, "killed a moment ago: {victim}");
    assert_eq!(victim["draining"], false, "{victim}");
    assert!(
        victim["generation"].as_u64().is_some_and(|g| g > 0),
        "{victim}"
    );
    assert!(
        victim["endpoint"]
            .as_str()
            .is_some_and(|e| e.starts_with("tcp://127.0.0.1:")),
        "{victim}"
    );
    assert_eq!(
        victim["actor_types"],
        serde_json::json!(["counter"]),
        "{victim}"
    );
    let listed = text(&admin(&url, &["nodes", "--mesh", MESH]).await);
    assert!(
        listed.contains("victim") && listed.contains("live"),
        "the text form names the node and its lease: {listed}"
    );
    let located = json(&admin(&url, &["where", "c0", "--json"]).await);
    assert_eq!(located[0]["rid"], "victim");
    assert_eq!(located[0]["state"], "ready");
    let owned = json(&admin(&url, &["objects", "--node", "victim", "--all", "--json"]).await);
    let ids: Vec<&str> = owned["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["is_spot"] == false)
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "{owned}");
    // Page by page, following each page's cursor, lists the same objects as --all.
    let (mut paged, mut cursor) = (Vec::new(), None::<String>);
    for _ in 0..100 {
        let mut args = vec!["objects", "--node", "victim", "--json"];
        if let Some(cursor) = &cursor {
            args.extend(["--cursor", cursor.as_str()]);
        }
        let page = json(&admin(&url, &args).await);
        paged.extend(page["objects"].as_array().unwrap().iter().cloned());
        match page["next"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    let ids_of = |objects: &[Value]| {
        let mut ids: Vec<String> = objects.iter().map(|o| o["id"].to_string()).collect();
        ids.sort();
        ids
    };
    assert_eq!(
        ids_of(&paged),
        ids_of(owned["objects"].as_array().unwrap()),
        "pages add up to --all"
    );

    let early = admin(&url, &["reclaim", "--node", "victim"]).await;
    assert_eq!(early.status.code(), Some(3), "{}", text(&early));
    assert!(text(&early).contains("lease is live"), "{}", text(&early));
    assert!(
        gateway.actors().find("c0").await.unwrap().is_some(),
        "nothing released"
    );

    wait_until(WAIT, "the victim's lease expired", || async {
        let nodes = json(&admin(&url, &["nodes", "--mesh", MESH, "--json"]).await);
        nodes.as_array().is_some_and(|all| {
            all.iter()
                .all(|n| n["rid"] != "victim" || n["lease_live"] == false)
        })
    })
    .await;
    let one = admin(&url, &["reclaim", "c2", "--json"]).await;
    assert_eq!(one.status.code(), Some(0), "{}", text(&one));
    let report = json(&one);
    assert_eq!(report["released"][0]["id"], "c2", "{report}");
    assert!(report["refused"].as_array().unwrap().is_empty(), "{report}");
    let reclaimed = admin(&url, &["reclaim", "--node", "victim", "--json"]).await;
    assert_eq!(reclaimed.status.code(), Some(0), "{}", text(&reclaimed));
    let report = json(&reclaimed);
    assert_eq!(
        report["released"].as_array().unwrap().len(),
        3,
        "2 Actors and the Entry Spot: {report}"
    );
    let again = admin(&url, &["reclaim", "c2"]).await;
    assert_eq!(
        again.status.code(),
        Some(0),
        "Missing already is nothing to do"
    );
    assert!(text(&again).contains("already Missing"), "{}", text(&again));
    let gone = admin(&url, &["where", "c0"]).await;
    assert!(text(&gone).contains("Missing"), "{}", text(&gone));

    let heir = node("heir", &url, true).await;
    gateway.actors().ready("counter", 1).await.unwrap();
    let again = gateway
        .actors()
        .get_or_create("c0", "counter")
        .await
        .unwrap();
    let ActorCreation::Created(actor) = again else {
        panic!("c0 created anew, got {again:?}")
    };
    assert_eq!(actor.rid, "heir");
    heir.shutdown().await;
    gateway.shutdown().await;
}

#[tokio::test]
async fn zlink_admin_help_names_every_command_and_the_store_settings() {
    let help = Command::new(env!("CARGO_BIN_EXE_zlink-admin"))
        .arg("--help")
        .output()
        .await
        .expect("zlink-admin runs");
    assert!(help.status.success());
    let help = text(&help);
    for word in [
        "nodes",
        "where",
        "objects",
        "reclaim",
        "--redis",
        "--cluster",
        "--prefix",
        "--json",
    ] {
        assert!(help.contains(word), "--help names {word}: {help}");
    }
    let reclaim = Command::new(env!("CARGO_BIN_EXE_zlink-admin"))
        .args(["reclaim", "--help"])
        .output()
        .await
        .expect("zlink-admin runs");
    assert!(
        text(&reclaim).contains("lease is still live") || text(&reclaim).contains("owner lease"),
        "{}",
        text(&reclaim)
    );
    // A command without its store settings is refused with a clear error, not a panic.
    let bare = Command::new(env!("CARGO_BIN_EXE_zlink-admin"))
        .args(["nodes"])
        .env_remove("ZLINK_REDIS")
        .env_remove("ZLINK_REDIS_CLUSTER")
        .output()
        .await
        .expect("zlink-admin runs");
    assert!(!bare.status.success());
    assert!(
        String::from_utf8_lossy(&bare.stderr).contains("--redis"),
        "{}",
        String::from_utf8_lossy(&bare.stderr)
    );
}
