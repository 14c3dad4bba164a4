//! The code shown in the book's "Operating zlink" chapter: logs through a `tracing`
//! subscriber, zlink's metrics through the Prometheus recorder, read back as a scrape
//! would read them, health probes served over HTTP, a trace started by the
//! application, the status stream, and the dashboard with its controls.

use std::sync::OnceLock;

use metrics_exporter_prometheus::PrometheusHandle;
use zlink_tests::{client, echo_client, server, stop, Echo};

zlink_book_snippets::snippet!("operating.md", "logs");

zlink_book_snippets::snippet!("operating.md", "metrics");

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

zlink_book_snippets::snippet!("operating.md", "probes");

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

zlink_book_snippets::snippet!("operating.md", "trace");

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

zlink_book_snippets::snippet!("operating.md", "observe");

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

zlink_book_snippets::snippet!("operating.md", "dashboard");

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
