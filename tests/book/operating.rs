//! The code shown in the book's "Operating zlink" chapter: logs through a `tracing`
//! subscriber, zlink's metrics through the Prometheus recorder, read back as a scrape
//! would read them, and health probes served over HTTP.

use std::sync::OnceLock;

use metrics_exporter_prometheus::PrometheusHandle;
use zlink_tests::{client, echo_client, server, stop, Echo};

// ANCHOR: logs
/// Prints zlink's log lines (and your own) as `RUST_LOG` asks, e.g.
/// `RUST_LOG=info,zlink=debug`; `info` when it is not set.
fn init_logs() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // `try_init`: a second call (another test, a library) leaves the first in place.
    let _ = tracing_subscriber::fmt().with_env_filter(filter).try_init();
}
// ANCHOR_END: logs

// ANCHOR: metrics
use metrics_exporter_prometheus::PrometheusBuilder;

/// Installs the Prometheus recorder for the whole process, with zlink's histogram
/// buckets, before the first node starts. Serve `handle.render()` as `/metrics`.
fn install_metrics() -> PrometheusHandle {
    PrometheusBuilder::new()
        .set_buckets(zlink::telemetry::DURATION_BUCKETS_SECONDS)
        .expect("zlink's buckets are valid")
        .install_recorder()
        .expect("no other recorder is installed")
}
// ANCHOR_END: metrics

fn metrics() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(install_metrics)
}

#[tokio::test]
async fn the_chapter_s_logs_and_metrics_set_up_as_shown() {
    init_logs();
    let scrape = metrics();
    let server = server("book-ops-s", 1).await;
    let client = client("book-ops-c", &[&server]).await;
    echo_client(&client)
        .echo(&Echo { text: "hi".into() })
        .await
        .unwrap();
    let text = scrape.render();
    let line = text
        .lines()
        .find(|l| {
            l.starts_with("zlink_calls_total{")
                && l.contains("rid=\"book-ops-c\"")
                && l.contains("outcome=\"ok\"")
        })
        .unwrap_or_else(|| panic!("no call counted in:\n{text}"));
    assert!(line.ends_with(" 1"), "{line}");
    assert!(text.contains("# HELP zlink_calls_total"), "described");
    stop([client, server]).await;
}

// ANCHOR: probes
/// Serves `/alive`, `/ready`, `/api/status` and `/metrics` for `rt` on `addr` (keep the
/// returned value: dropping it stops serving).
async fn serve_probes(
    rt: &zlink::Runtime,
    addr: std::net::SocketAddr,
) -> std::io::Result<zlink_dashboard::ServedDashboard> {
    zlink_dashboard::Dashboard::new(rt.operator())
        .metrics(metrics().clone())
        .serve(addr)
        .await
}
// ANCHOR_END: probes

#[tokio::test]
async fn the_chapter_s_health_probes_answer_as_shown() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = server("book-ops-probes", 1).await;
    let health = server.health();
    assert!(health.alive && health.ready, "{health:?}");
    let probes = serve_probes(&server, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("bound");
    let mut stream = tokio::net::TcpStream::connect(probes.local_addr())
        .await
        .unwrap();
    stream
        .write_all(b"GET /ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"ready\":true"), "{answer}");
    stop([server]).await;
}
