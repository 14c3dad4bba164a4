//! One handler's turn, wherever it is driven (the object's turn loop, or a caller's task
//! on the owner's node), and the delivery of its result.

use std::future::Future;
use std::task::Poll;

use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use super::context::TurnName;
use super::instance::{Instance, TurnInfo};
use super::object_job::ReplyTo;
use super::turn_gate::{self, TurnGate};
use crate::address::{ObjectKey, ObjectKind};
use crate::mesh::traced::InboundTrace;
use crate::wire::Payload;
use crate::{Error, ErrorKind, Result};

/// Runs a hook or handler with panics contained: a panic is an `InternalFailure` for this
/// one call, and the object goes on.
pub(super) async fn caught<T>(work: impl std::future::Future<Output = T>) -> Result<T> {
    std::panic::AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .map_err(|_| {
            tracing::error!("a handler or hook panicked; the object continues");
            Error::new(ErrorKind::InternalFailure, "the handler panicked")
        })
}

/// One handler's turn on `instance`, wherever it is driven (the loop, or a caller's task):
/// behind the gate's task-local, panics contained, ended by `cancel`, the turn's context
/// dropped at its end.
pub(super) async fn handler_turn(
    instance: &mut dyn Instance,
    gate: TurnGate,
    cancel: &CancellationToken,
    (kind, ctx): (ObjectKind, TurnInfo),
    handler: usize,
    payload: Payload,
) -> Result<Payload> {
    let node = ctx.handle.node();
    // Boxed: the turn's future stays small when no recorder is installed.
    let timing = node.instruments().turns.clone().map(|meter| {
        // The packet is kept only to name a long turn in its log line.
        Box::new((meter, std::time::Instant::now(), ctx.packet.clone()))
    });
    let trace = {
        let surface = match kind {
            ObjectKind::Spot => "spot",
            ObjectKind::Actor => "actor",
        };
        let packet = ctx.packet.as_ref().map_or("", TurnName::as_str);
        let propagation = node.settings().trace_propagation.as_deref();
        InboundTrace::of(node.identity(), propagation, surface, packet, &ctx.metadata)
    };
    // The handler goes first: one that finishes at once never polls the stop token; one
    // that hangs past shutdown is dropped when the token fires. (Not `select!`, which
    // gives up at once when the task's budget is spent: a turn on a caller's task would
    // then go to the loop for nothing.)
    let result = {
        let handled = turn_gate::scope(
            gate,
            caught(trace.run(instance.handle(ctx, handler, payload))),
        );
        let stopped = cancel.cancelled();
        let (mut handled, mut stopped) = (std::pin::pin!(handled), std::pin::pin!(stopped));
        std::future::poll_fn(|cx| {
            if let Poll::Ready(result) = handled.as_mut().poll(cx) {
                // A refusal the handler heard on its own calls is not this call's.
                return Poll::Ready(result.and_then(|r| r).map_err(Error::handler_error));
            }
            match stopped.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(Error::new(
                    ErrorKind::ShuttingDown,
                    "the object was stopped during the handler",
                ))),
                Poll::Pending => Poll::Pending,
            }
        })
        .await
    };
    instance.end_turn();
    if let Some(timing) = timing {
        let (meter, started, packet) = *timing;
        if meter.turn_ended(kind.into(), started) {
            tracing::warn!(
                ?kind,
                packet = packet.as_ref().map_or("", TurnName::as_str),
                millis = started.elapsed().as_millis() as u64,
                "a long turn: the handler ran for 1 s or more, and its object took nothing else meanwhile"
            );
        }
    }
    result
}

/// Delivers a handler's result: the reply of a request, or a one-way's error logged.
pub(super) fn answer(key: &ObjectKey, reply: Option<ReplyTo>, result: Result<Payload>) {
    match reply {
        Some(reply) => reply.send(result),
        None => {
            if let Err(e) = result {
                tracing::warn!(object = %key, error = %e, "send handler failed");
            }
        }
    }
}
