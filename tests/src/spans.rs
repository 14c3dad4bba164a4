//! An in-memory span collector for trace tests: one global subscriber per test binary
//! (a scoped one per test would race other tests' threads over tracing's per-callsite
//! interest cache); each test reads only the spans of the traces and flows it made.

use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// One span as the collector saw it: its name and its fields.
#[derive(Debug, Clone, Default)]
pub struct Collected {
    pub name: &'static str,
    pub fields: std::collections::BTreeMap<&'static str, String>,
}

/// An in-memory span collector: every span's name and fields, as a tracing backend
/// would receive them.
#[derive(Clone, Default)]
pub struct Collector {
    pub spans: Arc<Mutex<std::collections::HashMap<u64, Collected>>>,
}

struct Fields<'a>(&'a mut std::collections::BTreeMap<&'static str, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name(), value.to_string());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name(), format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Collector {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        let mut span = Collected {
            name: attrs.metadata().name(),
            ..Collected::default()
        };
        attrs.record(&mut Fields(&mut span.fields));
        self.spans.lock().unwrap().insert(id.into_u64(), span);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some(span) = self.spans.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }
}

impl Collector {
    /// The spans of trace `trace_id`.
    pub fn trace(&self, trace_id: &str) -> Vec<Collected> {
        self.spans
            .lock()
            .unwrap()
            .values()
            .filter(|s| s.fields.get("trace_id").map(String::as_str) == Some(trace_id))
            .cloned()
            .collect()
    }
}

/// The process's collector: installed as this test binary's global subscriber (at debug,
/// where zlink's spans are) the first time a test asks for it.
pub fn collector() -> &'static Collector {
    static COLLECTOR: std::sync::OnceLock<Collector> = std::sync::OnceLock::new();
    COLLECTOR.get_or_init(|| {
        let collector = Collector::default();
        let subscriber = tracing_subscriber::registry().with(
            collector
                .clone()
                .with_filter(tracing_subscriber::filter::LevelFilter::DEBUG),
        );
        tracing::subscriber::set_global_default(subscriber)
            .expect("the only global subscriber of this test binary");
        collector
    })
}
