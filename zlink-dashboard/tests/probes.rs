//! The dashboard's probes and endpoints, over real HTTP on 127.0.0.1, for a node on a real
//! `redis-server`: what a Kubernetes probe, Prometheus and an operator's `curl` read.

use metrics_exporter_prometheus::PrometheusBuilder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zlink_dashboard::Dashboard;
use zlink_testkit::{wait_until, RedisServer};

mod common;
use common::{get, node, WAIT};

/// `/alive` and `/ready` answer as probes do (200, or 503 with the failed check named),
/// `/api/status` is the node's status, and `/metrics` is the Prometheus text with the
/// node's series; after the shutdown the node is no longer alive.
#[tokio::test]
async fn the_probes_status_and_metrics_answer_over_http() {
    // Installed before the node starts, as an application does.
    let recorder = PrometheusBuilder::new()
        .set_buckets(zlink::telemetry::DURATION_BUCKETS_SECONDS)
        .expect("buckets")
        .install_recorder()
        .expect("this process's recorder");
    let redis = RedisServer::start().expect("redis-server");
    let rt = node(&redis.url()).await;
    let dashboard = Dashboard::new(rt.operator())
        .metrics(recorder)
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .expect("bound");
    let addr = dashboard.local_addr();

    assert_eq!(get(addr, "/alive").await.0, 200);
    wait_until(WAIT, "/ready says 200", || async {
        get(addr, "/ready").await.0 == 200
    })
    .await;
    let (_, ready) = get(addr, "/ready").await;
    let ready: serde_json::Value = serde_json::from_str(&ready).expect("JSON health");
    assert_eq!(ready["ready"], true);
    assert_eq!(ready["checks"].as_array().map(Vec::len), Some(5), "{ready}");

    let (code, status) = get(addr, "/api/status").await;
    assert_eq!(code, 200);
    let status: serde_json::Value = serde_json::from_str(&status).expect("JSON status");
    assert_eq!(status["rid"], "a");
    assert_eq!(status["mesh_name"], "dashboard-mesh");

    let (code, metrics) = get(addr, "/metrics").await;
    assert_eq!(code, 200);
    assert!(
        metrics.contains("zlink_mesh_peers{") && metrics.contains("rid=\"a\""),
        "{metrics}"
    );

    // A maintenance drain: alive, not ready, and the check says why.
    rt.relocate_all().await.unwrap();
    let (code, body) = get(addr, "/ready").await;
    assert_eq!(code, 503);
    assert!(body.contains("draining"), "{body}");
    assert_eq!(get(addr, "/alive").await.0, 200);

    rt.shutdown().await;
    assert_eq!(get(addr, "/alive").await.0, 503);
    assert_eq!(get(addr, "/ready").await.0, 503);
    dashboard.stop();
}

/// Without a recorder, `/metrics` says so; an unknown path is 404; `/api/objects` on a
/// node that runs no object lists none; garbage is refused without disturbing the next
/// probe.
#[tokio::test]
async fn metrics_without_a_recorder_unknown_paths_and_garbage_are_refused_cleanly() {
    let redis = RedisServer::start().expect("redis-server");
    let rt = node(&redis.url()).await;
    let dashboard = Dashboard::new(rt.operator())
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .expect("bound");
    let addr = dashboard.local_addr();
    let (code, body) = get(addr, "/metrics").await;
    assert_eq!(code, 404);
    assert!(body.contains("no Prometheus recorder"), "{body}");
    assert_eq!(get(addr, "/nowhere").await.0, 404);
    let (code, body) = get(addr, "/api/objects").await;
    assert_eq!(code, 200);
    assert!(body.contains("\"objects\":[]"), "it runs none: {body}");
    let mut garbage = tokio::net::TcpStream::connect(addr).await.unwrap();
    garbage
        .write_all(b"\x00\x01\x02 not http at all\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(WAIT, garbage.read_to_end(&mut answer)).await;
    assert_eq!(
        get(addr, "/alive").await.0,
        200,
        "the dashboard still serves"
    );
    rt.shutdown().await;
}
