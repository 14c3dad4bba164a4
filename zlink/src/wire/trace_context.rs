//! Trace context across nodes: a W3C `traceparent` and a zlink `flow_id` that travel in
//! message metadata (keys [`TRACEPARENT`] and [`FLOW_ID`]) from a call to the handler that
//! runs it, on whatever node, through Message Follow relays, and on into the calls that
//! handler makes.
//!
//! zlink holds both as opaque strings and depends on no tracing backend. Two ways in:
//! - **Your tracing backend's context** (OpenTelemetry, for example), through a
//!   [`TracePropagation`] given to the runtime builder: zlink asks it for the caller's
//!   current `traceparent` on every call, and hands it each inbound message's span to
//!   make a child of the sender's.
//! - **zlink's own context**, without a backend: [`traced`] starts a trace (a fresh
//!   trace ID and flow), and every call made within it, and every handler it reaches,
//!   carries it on. The spans zlink makes record `trace_id` and `flow_id`, so a log
//!   collector can join them.
//!
//! **Sampling:** zlink samples nothing by itself. A message carries a context only when its
//! caller has one (from the backend, which applies its own sampler, or from a handler that
//! received one), and the `traceparent`'s flags pass on unchanged. A call made outside any
//! trace carries no context and costs nothing for it.

use std::future::Future;

use super::Metadata;

/// The metadata key of the W3C trace context (`00-<trace-id>-<parent-id>-<flags>`).
pub const TRACEPARENT: &str = "traceparent";
/// The metadata key of the flow ID: a lowercase UUIDv7 that names one flow of work from
/// its first message on, across every node, relay, timer and session it reaches.
pub const FLOW_ID: &str = "zlink.flow";

/// One message's trace context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// The W3C `traceparent`: the trace and the span the message was sent from.
    pub traceparent: String,
    /// The flow the message belongs to.
    pub flow_id: String,
}

impl TraceContext {
    /// A new trace: a random trace ID and span ID, sampled, and a new flow.
    pub fn new_trace() -> Self {
        let trace: [u8; 16] = rand::random();
        let span: [u8; 8] = rand::random();
        TraceContext {
            traceparent: format!("00-{}-{}-01", hex(&trace), hex(&span)),
            flow_id: uuid_v7(),
        }
    }

    /// The trace ID (32 hex digits), when the `traceparent` is well-formed.
    pub fn trace_id(&self) -> Option<&str> {
        parse(&self.traceparent).map(|(trace, _, _)| trace)
    }

    /// The context of a message sent from within this one: the same trace and flow, and
    /// a new span ID as the parent (the flags unchanged). A malformed `traceparent` is
    /// passed on as it is.
    fn child(&self) -> TraceContext {
        let traceparent = match parse(&self.traceparent) {
            Some((trace, _, flags)) => {
                let span: [u8; 8] = rand::random();
                format!("00-{trace}-{}-{flags}", hex(&span))
            }
            None => self.traceparent.clone(),
        };
        TraceContext {
            traceparent,
            flow_id: self.flow_id.clone(),
        }
    }

    /// Metadata that carries this context on, as a child: what a timer's tick runs with.
    pub(crate) fn carried(&self) -> Metadata {
        let child = self.child();
        let mut metadata = Metadata::new();
        let _ = metadata.insert(TRACEPARENT, child.traceparent);
        let _ = metadata.insert(FLOW_ID, child.flow_id);
        metadata
    }

    /// The context `metadata` carries, if it carries a `traceparent`; a missing flow ID
    /// starts a new flow.
    pub(crate) fn of(metadata: &Metadata) -> Option<TraceContext> {
        if metadata.is_empty() {
            return None;
        }
        let traceparent = metadata.get(TRACEPARENT)?;
        Some(TraceContext {
            traceparent: traceparent.to_string(),
            flow_id: metadata.get(FLOW_ID).map_or_else(uuid_v7, str::to_string),
        })
    }
}

/// How a tracing backend's context crosses nodes with zlink's messages: give one to
/// [`RuntimeBuilder::trace_propagation`](crate::RuntimeBuilder::trace_propagation).
pub trait TracePropagation: Send + Sync + 'static {
    /// The `traceparent` of the caller's current context (its current span), if it is in
    /// one: what an outgoing message carries.
    fn current(&self) -> Option<String>;

    /// Makes `span`, zlink's span of an inbound message, a child of the sender's
    /// `traceparent`.
    fn adopt(&self, span: &tracing::Span, traceparent: &str);
}

tokio::task_local! {
    static CURRENT: TraceContext;
}

/// The trace context of the message being handled now (in a handler, or in a task it
/// runs within [`traced`]), if it carries one.
pub fn current() -> Option<TraceContext> {
    CURRENT.try_with(TraceContext::clone).ok()
}

/// Runs `work` in a new trace: every call it makes carries a fresh trace context, and
/// the handlers those calls reach carry it on.
pub async fn traced<F: Future>(work: F) -> F::Output {
    CURRENT.scope(TraceContext::new_trace(), work).await
}

/// Runs `work` within `context`.
pub(crate) async fn within<F: Future>(context: TraceContext, work: F) -> F::Output {
    CURRENT.scope(context, work).await
}

/// Writes the trace context of an outgoing message into `metadata`: the backend's
/// current context (through `propagation`) or the one of the message being handled,
/// as a child; nothing when there is neither, or when the caller set a `traceparent`
/// itself.
pub(crate) fn stamp(metadata: &mut Metadata, propagation: Option<&dyn TracePropagation>) {
    if metadata.get(TRACEPARENT).is_some() {
        return;
    }
    let handled = current();
    let context = match propagation.and_then(TracePropagation::current) {
        Some(traceparent) => TraceContext {
            traceparent,
            flow_id: handled.map_or_else(uuid_v7, |h| h.flow_id),
        },
        None => match handled {
            Some(handled) => handled.child(),
            None => return,
        },
    };
    // Both fit: the keys and values are short, and a caller's metadata that leaves no room
    // for them keeps what the caller put there.
    let _ = metadata.insert(TRACEPARENT, context.traceparent);
    let _ = metadata.insert(FLOW_ID, context.flow_id);
}

/// `(trace-id, parent-id, flags)` of a version-00 `traceparent`.
fn parse(traceparent: &str) -> Option<(&str, &str, &str)> {
    let mut parts = traceparent.split('-');
    let (version, trace, parent, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex_of = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
    (parts.next().is_none()
        && version == "00"
        && hex_of(trace, 32)
        && hex_of(parent, 16)
        && hex_of(flags, 2))
    .then_some((trace, parent, flags))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A lowercase UUIDv7: 48 bits of Unix milliseconds, then random bits.
fn uuid_v7() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut b: [u8; 16] = rand::random();
    b[..6].copy_from_slice(&millis.to_be_bytes()[2..]);
    b[6] = (b[6] & 0x0f) | 0x70;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_keeps_the_trace_flags_and_flow_and_takes_a_new_parent() {
        let root = TraceContext::new_trace();
        let child = root.child();
        assert_eq!(child.trace_id(), root.trace_id());
        assert_eq!(child.flow_id, root.flow_id);
        assert_ne!(child.traceparent, root.traceparent);
        assert!(child.traceparent.ends_with("-01"));
        assert_eq!(root.flow_id.len(), 36);
        assert_eq!(&root.flow_id[14..15], "7", "a UUIDv7");
    }

    #[test]
    fn malformed_traceparents_are_carried_as_they_are_and_name_no_trace() {
        for bad in [
            "",
            "00-xyz-abc-01",
            "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
        ] {
            let context = TraceContext {
                traceparent: bad.to_string(),
                flow_id: "f".into(),
            };
            assert_eq!(context.trace_id(), None, "{bad}");
            assert_eq!(context.child().traceparent, bad);
        }
    }

    #[tokio::test]
    async fn a_call_carries_the_handled_context_as_a_child_and_none_outside_a_trace() {
        let mut outside = Metadata::new();
        stamp(&mut outside, None);
        assert!(outside.is_empty(), "no context, nothing carried");
        let (root, stamped) = traced(async {
            let mut metadata = Metadata::new();
            stamp(&mut metadata, None);
            (current().expect("in a trace"), metadata)
        })
        .await;
        let carried = TraceContext::of(&stamped).expect("carried");
        assert_eq!(carried.trace_id(), root.trace_id());
        assert_eq!(carried.flow_id, root.flow_id);
        let mut own = Metadata::new();
        own.insert(TRACEPARENT, "mine").unwrap();
        within(root, async { stamp(&mut own, None) }).await;
        assert_eq!(
            own.get(TRACEPARENT),
            Some("mine"),
            "the caller's own is kept"
        );
    }

    struct Backend;
    impl TracePropagation for Backend {
        fn current(&self) -> Option<String> {
            Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into())
        }
        fn adopt(&self, _: &tracing::Span, _: &str) {}
    }

    #[test]
    fn a_backends_current_context_wins() {
        let mut metadata = Metadata::new();
        stamp(&mut metadata, Some(&Backend));
        assert_eq!(
            metadata.get(TRACEPARENT),
            Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        );
        assert!(metadata.get(FLOW_ID).is_some());
    }
}
