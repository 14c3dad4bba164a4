//! The code shown in the book's "Operating zlink" chapter: logs through a `tracing`
//! subscriber, zlink's metrics through the Prometheus recorder, read back as a scrape
//! would read them, health probes served over HTTP, a trace started by the
//! application, the status stream, and the dashboard with its controls.

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
    use metrics_exporter_prometheus::Matcher;
    let depth = Matcher::Full(zlink::telemetry::names::MAILBOX_DEPTH.to_string());
    PrometheusBuilder::new()
        .set_buckets(zlink::telemetry::DURATION_BUCKETS_SECONDS)
        .and_then(|b| b.set_buckets_for_metric(depth, zlink::telemetry::DEPTH_BUCKETS))
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

// ANCHOR: trace
/// Runs `work` (your calls) inside a new trace; returns the flow its calls carried.
async fn in_a_new_trace(
    work: impl std::future::Future<Output = zlink::Result<()>>,
) -> zlink::Result<String> {
    zlink::trace::traced(async {
        work.await?;
        let context = zlink::trace::current().expect("inside the trace");
        Ok(context.flow_id)
    })
    .await
}
// ANCHOR_END: trace

#[tokio::test]
async fn the_chapter_s_trace_carries_a_flow() {
    let server = server("book-ops-trace-s", 1).await;
    let client = client("book-ops-trace-c", &[&server]).await;
    let echo = echo_client(&client);
    let flow = in_a_new_trace(async {
        echo.echo(&Echo {
            text: "traced".into(),
        })
        .await
        .map(|_| ())
    })
    .await
    .unwrap();
    assert_eq!(flow.len(), 36, "a UUID: {flow}");
    assert!(zlink::trace::current().is_none(), "outside the trace");
    stop([client, server]).await;
}

// ANCHOR: observe
/// Reads the node's status stream until a move ends; returns what it saw, one line per
/// event.
async fn watch_until_a_move_ends(events: &mut zlink::telemetry::Observer) -> Vec<String> {
    use zlink::telemetry::Happened;
    let mut seen = Vec::new();
    while let Some(observed) = events.next().await {
        if observed.lost > 0 {
            seen.push(format!("({} events lost so far)", observed.lost));
        }
        let event = observed.event;
        seen.push(format!("#{} {:?}", event.sequence, event.what));
        if matches!(event.what, Happened::RelocationEnded { .. }) {
            break;
        }
    }
    seen
}
// ANCHOR_END: observe

#[tokio::test]
async fn the_chapter_s_status_stream_tells_a_move() {
    let m = zlink_tests::relocating::mesh(&["book-ops-a", "book-ops-b"], None).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    let mut events = a.observe();
    client
        .actors()
        .create("book-ops-1", "counter")
        .await
        .unwrap();
    a.actors()
        .relocate("book-ops-1", Some("book-ops-b"))
        .await
        .unwrap();
    let seen = watch_until_a_move_ends(&mut events).await;
    assert!(seen[0].contains("ObjectCreated"), "{seen:?}");
    assert!(seen.last().unwrap().contains("moved"), "{seen:?}");
    stop(m.nodes).await;
}

// ANCHOR: dashboard
/// Serves the dashboard of `rt` on `addr`, with its controls for requests that carry
/// `token` (keep the returned value: dropping it stops serving).
async fn serve_dashboard(
    rt: &zlink::Runtime,
    addr: std::net::SocketAddr,
    token: &str,
) -> zlink::Result<zlink_dashboard::ServedDashboard> {
    let dashboard = zlink_dashboard::Dashboard::new(rt.operator())
        .metrics(metrics().clone())
        .controls(rt.controls(), token)?;
    dashboard.serve(addr).await.map_err(|e| {
        zlink::Error::new(
            zlink::ErrorKind::Unavailable,
            format!("cannot bind {addr}: {e}"),
        )
    })
}
// ANCHOR_END: dashboard

/// `request` sent to `addr`; the whole answer.
async fn http(addr: std::net::SocketAddr, request: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer
}

#[tokio::test]
async fn the_chapter_s_dashboard_serves_its_page_and_guards_its_controls() {
    let server = server("book-ops-dashboard", 1).await;
    let token = "a-long-random-token-from-your-secret-store";
    let served = serve_dashboard(&server, "127.0.0.1:0".parse().unwrap(), token)
        .await
        .unwrap();
    let addr = served.local_addr();
    let head = format!("Host: {addr}\r\nConnection: close\r\nContent-Length: 0");
    let page = http(addr, &format!("GET / HTTP/1.1\r\n{head}\r\n\r\n")).await;
    assert!(page.starts_with("HTTP/1.1 200") && page.contains("EventSource"));
    let control = "POST /api/control/undrain HTTP/1.1";
    let refused = http(addr, &format!("{control}\r\n{head}\r\n\r\n")).await;
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let bearer = format!("Authorization: Bearer {token}");
    let done = http(addr, &format!("{control}\r\n{head}\r\n{bearer}\r\n\r\n")).await;
    assert!(done.starts_with("HTTP/1.1 200"), "{done}");
    stop([server]).await;
}
