//! The code shown in the book's "Operating zlink" chapter: logs through a `tracing`
//! subscriber, and zlink's metrics through the Prometheus recorder, read back as a scrape
//! would read them.

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
