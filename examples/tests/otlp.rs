//! `--otlp`: the examples' OpenTelemetry propagation makes one request across two nodes
//! one OpenTelemetry trace, and the exporter reaches a collector over plain HTTP.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer;
use zlink::{PeerSpec, Runtime};
use zlink_examples::greeter::Greeter;
use zlink_examples::nodes::{greet, wait_for_servers, ANY_LOCAL_PORT, MESH};
use zlink_examples::otlp::OtelPropagation;

/// A request made inside an application span, from a client node to a server node, both
/// with the examples' propagation: the server's `zlink.handle` span is in the
/// application's trace, as a child of the remote caller.
#[tokio::test]
async fn a_request_across_two_nodes_is_one_opentelemetry_trace() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("test"))
        .with_filter(tracing_subscriber::EnvFilter::new("info,zlink=debug"));
    // The test's tasks all run on its one thread.
    let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));

    let server = Runtime::builder()
        .mesh_name(MESH)
        .rid("otel-server")
        .listen(ANY_LOCAL_PORT)
        .serve_weighted(Greeter::new("otel-server"), 100)
        .trace_propagation(OtelPropagation)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let client = Runtime::builder()
        .mesh_name(MESH)
        .rid("otel-client")
        .listen(ANY_LOCAL_PORT)
        .peer(PeerSpec::new(server.status().endpoint))
        .trace_propagation(OtelPropagation)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    wait_for_servers(&client, 1, Duration::from_secs(10))
        .await
        .unwrap();
    greet(&client, "traced")
        .instrument(tracing::info_span!("app.request"))
        .await
        .unwrap();
    client.shutdown().await;
    server.shutdown().await;
    provider.force_flush().unwrap();

    let spans = exporter.get_finished_spans().unwrap();
    let root = spans
        .iter()
        .find(|s| s.name == "app.request")
        .expect("the application's span");
    let trace = root.span_context.trace_id();
    let handled = spans
        .iter()
        .find(|s| {
            s.name == "zlink.handle"
                && s.attributes
                    .iter()
                    .any(|kv| kv.key.as_str() == "rid" && kv.value.as_str() == "otel-server")
        })
        .unwrap_or_else(|| panic!("the server's span: {spans:#?}"));
    assert_eq!(handled.span_context.trace_id(), trace);
    assert!(handled.parent_span_is_remote, "{handled:#?}");
}

/// `--otlp URL`: a served example posts its spans, as protobuf over HTTP, to the
/// collector at URL, under its own service name.
#[test]
fn a_served_example_exports_its_spans_to_the_collector_it_is_given() {
    let collector = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/traces", collector.local_addr().unwrap());
    let mut server = Command::new(env!("CARGO_BIN_EXE_gateway-chat"))
        .args(["--serve", "--port", "0", "--otlp", &url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut conn, _) = collector.accept().expect("the exporter connects");
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.starts_with("POST /v1/traces "), "{line}");
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
        if lower.starts_with("content-type:") {
            assert!(lower.contains("application/x-protobuf"), "{line}");
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
        .unwrap();
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("gateway-chat"), "the service name");
    assert!(text.contains("zlink."), "zlink's spans");
    drop(server.stdin.take());
    let _ = server.kill();
    let _ = server.wait();
    let _ = server.stdout.take().map(|mut out| {
        let mut rest = String::new();
        out.read_to_string(&mut rest)
    });
}
