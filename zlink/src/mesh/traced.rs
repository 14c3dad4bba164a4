//! The span and trace context of one inbound message's work: a `zlink.handle` span named
//! for the node, the surface and the packet, recording the message's trace and flow, and
//! the work run within the message's [`TraceContext`] so the calls it makes carry it on.

use std::future::Future;

use futures::future::{BoxFuture, Either};
use futures::FutureExt;
use tracing::Instrument;

use super::identity::NodeIdentity;
use crate::wire::trace_context::{within, TraceContext, TracePropagation};
use crate::wire::Metadata;

/// The span and context of one inbound message, made before its work is built.
pub(crate) struct InboundTrace {
    context: Option<TraceContext>,
    span: tracing::Span,
}

impl InboundTrace {
    /// The trace of a message with `metadata` for `packet` on the `surface` (`channel`,
    /// `node`, `spot`, `actor`, `session`) of node `identity`; the sender's context is
    /// adopted through `propagation` when the application gave one.
    pub(crate) fn of(
        identity: &NodeIdentity,
        propagation: Option<&dyn TracePropagation>,
        surface: &'static str,
        packet: &str,
        metadata: &Metadata,
    ) -> InboundTrace {
        let context = TraceContext::of(metadata);
        if context.is_none() && !spans_wanted() {
            // The common path: no context to carry, no subscriber that takes debug spans.
            return InboundTrace {
                context,
                span: tracing::Span::none(),
            };
        }
        let span = tracing::debug_span!(
            "zlink.handle",
            mesh = identity.mesh_name(),
            rid = identity.rid(),
            surface,
            packet,
            trace_id = tracing::field::Empty,
            flow_id = tracing::field::Empty,
        );
        if let Some(context) = &context {
            span.record("trace_id", context.trace_id().unwrap_or("malformed"));
            span.record("flow_id", context.flow_id.as_str());
            if let Some(propagation) = propagation {
                propagation.adopt(&span, &context.traceparent);
            }
        }
        InboundTrace { context, span }
    }

    /// Boxed `work` inside the span and the context; `work` itself when there is
    /// neither (no subscriber wants the span, the message carries no context): nothing is
    /// added on the common path.
    pub(crate) fn wrap<T: Send + 'static>(
        self,
        work: BoxFuture<'static, T>,
    ) -> BoxFuture<'static, T> {
        match (self.context, self.span.is_disabled()) {
            (None, true) => work,
            (None, false) => work.instrument(self.span).boxed(),
            (Some(context), _) => within(context, work).instrument(self.span).boxed(),
        }
    }

    /// `work` inside the span and the context (work that may borrow): itself on the
    /// common path, so the future it runs in grows by one word; boxed when traced.
    pub(crate) fn run<'a, F: Future + Send + 'a>(
        self,
        work: F,
    ) -> Either<F, crate::call::BoxFuture<'a, F::Output>> {
        match (self.context, self.span.is_disabled()) {
            (None, true) => Either::Left(work),
            (None, false) => Either::Right(Box::pin(work.instrument(self.span))),
            (Some(context), _) => {
                Either::Right(Box::pin(within(context, work).instrument(self.span)))
            }
        }
    }
}

/// Whether any subscriber may take zlink's `debug` spans now: two atomic reads, so the
/// message path builds no span at all when none does. Without any subscriber set,
/// tracing's level filter allows everything (and a span would still be built, for the
/// `log` bridge): that case is ruled out first.
pub(crate) fn spans_wanted() -> bool {
    tracing::dispatcher::has_been_set()
        && tracing::level_filters::LevelFilter::current() >= tracing::Level::DEBUG
}
