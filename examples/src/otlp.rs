//! `--otlp URL`: every example exports its spans (zlink's and its own) to an
//! OpenTelemetry collector over OTLP/HTTP, and its nodes carry the trace context across
//! the mesh, so one request is one trace whatever nodes it crosses.
//!
//! Which spans go out is `ZLINK_OTLP_FILTER` (an `EnvFilter`; default
//! `info,zlink=debug`: zlink's spans are at debug). Spans are sent in batches every
//! [`EXPORT_EVERY`]; those of a run's last moments may be lost when it exits.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry_otlp::{SpanExporter, WithExportConfig};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;

use crate::cli::UsageError;

/// How often spans are sent to the collector.
pub const EXPORT_EVERY: Duration = Duration::from_millis(500);

/// The process's tracer provider, kept for its whole life.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// The layer that exports spans to the collector at `url` (for example
/// `http://127.0.0.1:4318/v1/traces`), as service `service`.
pub fn layer<S>(url: &str, service: &str) -> Result<impl Layer<S>, UsageError>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let exporter = SpanExporter::builder()
        .with_http()
        .with_endpoint(url)
        .with_timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| UsageError(format!("--otlp {url}: {e}")))?;
    let batches = BatchSpanProcessor::builder(exporter)
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_scheduled_delay(EXPORT_EVERY)
                .build(),
        )
        .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(batches)
        .with_resource(
            Resource::builder()
                .with_service_name(service.to_string())
                .build(),
        )
        .build();
    let tracer = provider.tracer("zlink-examples");
    let _ = PROVIDER.set(provider);
    let filter = tracing_subscriber::EnvFilter::try_from_env("ZLINK_OTLP_FILTER")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,zlink=debug"));
    Ok(tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(filter))
}

/// Whether `--otlp` was given (then every node carries the OpenTelemetry context).
pub fn exporting() -> bool {
    PROVIDER.get().is_some()
}

// ANCHOR: propagation
/// zlink's trace context, as OpenTelemetry's: what an example's nodes carry across the
/// mesh when `--otlp` is given.
pub struct OtelPropagation;

impl zlink::trace::TracePropagation for OtelPropagation {
    fn current(&self) -> Option<String> {
        let context = tracing::Span::current().context();
        let span = context.span();
        let span = span.span_context();
        span.is_valid().then(|| {
            format!(
                "00-{}-{}-{:02x}",
                span.trace_id(),
                span.span_id(),
                span.trace_flags().to_u8()
            )
        })
    }

    fn adopt(&self, span: &tracing::Span, traceparent: &str) {
        let mut parts = traceparent.split('-');
        let (Some("00"), Some(trace), Some(parent), Some(flags)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return;
        };
        let (Ok(trace), Ok(parent), Ok(flags)) = (
            TraceId::from_hex(trace),
            SpanId::from_hex(parent),
            u8::from_str_radix(flags, 16),
        ) else {
            return;
        };
        let remote = SpanContext::new(
            trace,
            parent,
            TraceFlags::new(flags),
            true,
            TraceState::default(),
        );
        let parent = opentelemetry::Context::new().with_remote_span_context(remote);
        // A span the exporter does not record has no parent to set: nothing to do.
        let _ = span.set_parent(parent);
    }
}
// ANCHOR_END: propagation
