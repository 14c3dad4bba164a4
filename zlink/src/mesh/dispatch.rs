//! The Dispatcher: which subsystem receives each application command.
//!
//! Subsystems (channels, node-direct, and later objects and sessions) register one
//! [`InboundRoute`] per command they own. Before a route sees a message, the node has
//! decoded it, checked that the sender is admitted, that the node is serving and that the
//! sender's connection is below its cap of handler calls in flight; the route only picks a
//! handler and hands its work to [`InboundCall::run`], which also sends the reply.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use tokio::time::Instant;

use super::count_permit::CountPermit;
use super::identity::NodeIdentity;
use super::peer_table::PeerLink;
use super::traced::InboundTrace;
use super::work::HandlerWork;
use crate::call::BoxFuture;
use crate::link::Connection;
use crate::telemetry::Dropped;
use crate::wire::trace_context::TracePropagation;
use crate::wire::{CallMessage, Command, ReplyOutcome};
use crate::{Error, ErrorKind, Result};

/// Receives the admitted application commands of one family.
///
/// `deliver` runs on the connection's read path: it must not block. Work that waits goes
/// through [`InboundCall::run`].
pub(crate) trait InboundRoute: Send + Sync + 'static {
    /// Takes one message.
    fn deliver(&self, call: InboundCall);
}

/// Where handlers' replies go out, as the dispatcher sees the node's links: replies are
/// queued without waiting, and handlers run as the node's handler work.
pub(crate) trait ReplyOut: Send + Sync + 'static {
    /// Queues the reply to `route` (never waits on the peer).
    fn reply(&self, route: &ReplyRoute, result: Result<Bytes>);
    /// The node's handler work: what stops handlers and waits for them at shutdown.
    fn work(&self) -> &Arc<HandlerWork>;
    /// The node, as its handlers' spans name it.
    fn identity(&self) -> &NodeIdentity;
    /// The application's tracing backend, if it gave one.
    fn trace_propagation(&self) -> Option<&dyn TracePropagation>;
    /// Counts an inbound message dropped for `reason`.
    fn dropped(&self, reason: Dropped);
}

/// Where the reply to one request goes: the connection it came on and its correlation,
/// with the operation the reply echoes. A reply never looks a location up.
#[derive(Clone)]
pub(crate) struct ReplyRoute {
    pub(crate) conn: Arc<dyn Connection>,
    pub(crate) correlation: u64,
    pub(crate) operation: u64,
}

/// One admitted application message on its way to a handler.
pub(crate) struct InboundCall {
    links: Arc<dyn ReplyOut>,
    from: PeerLink,
    message: CallMessage,
    deadline: Option<Instant>,
    reply: Option<ReplyRoute>,
    permit: CountPermit,
}

/// Wire codes a route can be registered for.
const ROUTE_SLOTS: usize = 64;

/// Command → route, set once per command while the node starts.
pub(crate) struct Dispatcher {
    routes: [OnceLock<Arc<dyn InboundRoute>>; ROUTE_SLOTS],
}

impl Default for Dispatcher {
    fn default() -> Self {
        Dispatcher {
            routes: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

impl Dispatcher {
    /// Registers `route` for `command`. A command has at most one route.
    pub(crate) fn register(&self, command: Command, route: Arc<dyn InboundRoute>) -> Result<()> {
        let taken = || {
            Error::new(
                ErrorKind::InternalFailure,
                format!("a route for {command:?} is already registered"),
            )
        };
        if !command.is_application() {
            return Err(Error::new(
                ErrorKind::InternalFailure,
                format!("{command:?} is not an application command"),
            ));
        }
        let slot = self.routes.get(command as usize).ok_or_else(taken)?;
        slot.set(route).map_err(|_| taken())
    }

    /// The route of `command`, if one is registered.
    pub(crate) fn route(&self, command: Command) -> Option<&Arc<dyn InboundRoute>> {
        self.routes.get(command as usize)?.get()
    }
}

impl InboundCall {
    pub(crate) fn new(
        links: Arc<dyn ReplyOut>,
        from: PeerLink,
        message: CallMessage,
        permit: CountPermit,
    ) -> Self {
        let head = &message.head;
        let is_request = message.command.is_request();
        let reply = is_request.then(|| ReplyRoute {
            conn: from.conn().clone(),
            correlation: head.correlation,
            operation: head.operation,
        });
        let deadline = (is_request && head.deadline_ms > 0).then(|| {
            Instant::now() + std::time::Duration::from_millis(u64::from(head.deadline_ms))
        });
        InboundCall {
            links,
            from,
            message,
            deadline,
            reply,
            permit,
        }
    }

    /// The admitted peer that sent it.
    pub(crate) fn from(&self) -> &PeerLink {
        &self.from
    }

    /// The message.
    pub(crate) fn message(&self) -> &CallMessage {
        &self.message
    }

    /// Whether the sender waits for a reply.
    pub(crate) fn is_request(&self) -> bool {
        self.reply.is_some()
    }

    /// When the sender stops waiting (requests only).
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Ends the call without running anything: a request gets `result` as its reply, a
    /// send's failure is logged.
    pub(crate) fn answer(self, result: Result<Bytes>) {
        finish(&*self.links, self.reply.as_ref(), result);
    }

    /// Ends a call no handler serves (its packet on `target`, a channel or node-direct):
    /// logged, counted as dropped, and a request answered `NotFound`.
    pub(crate) fn answer_no_handler(self, target: &str) {
        let packet = self.message.head.packet.as_str();
        tracing::warn!(
            rid = %self.links.identity().rid(),
            peer = %self.from.rid(),
            target,
            packet,
            request = self.is_request(),
            "no_handler"
        );
        self.links.dropped(Dropped::NoHandler);
        let err = Error::new(
            ErrorKind::NotFound,
            format!("no handler for {packet} on {target}"),
        );
        self.answer(Err(err));
    }

    /// Hands the call's answer to whoever runs its work elsewhere (a Spot's own task): the
    /// returned capability replies exactly once, and holds the connection's in-flight
    /// permit until then. Dropping it unanswered ends a request `Unavailable`.
    pub(crate) fn into_pending(self) -> PendingReply {
        PendingReply {
            links: self.links,
            reply: self.reply,
            permit: Some(self.permit),
        }
    }

    /// Runs the handler work `make` builds and replies with its result.
    ///
    /// A handler that completes without waiting is answered right here, so a burst of
    /// requests read together leaves as a burst of replies (one socket write instead of one
    /// per reply). Anything that waits continues on its own task, stopped by shutdown or
    /// once the caller's deadline has passed. A handler that computes for long before its
    /// first await delays this connection's reads by that long, as any blocking code on a
    /// tokio worker would.
    pub(crate) fn run(self, make: impl FnOnce(CallMessage) -> BoxFuture<'static, Result<Bytes>>) {
        let InboundCall {
            links,
            message,
            deadline,
            reply,
            permit,
            ..
        } = self;
        let surface = match message.command {
            Command::NodeSend | Command::NodeRequest => "node",
            _ => "channel",
        };
        let trace = InboundTrace::of(
            links.identity(),
            links.trace_propagation(),
            surface,
            message.head.packet.as_str(),
            &message.metadata,
        );
        let mut work = trace.wrap(make(message));
        if let Some(result) = poll_once(&mut work) {
            drop(permit);
            return finish(&*links, reply.as_ref(), result);
        }
        let cancel = links.work().cancel().clone();
        let tracker = links.work().tracker().clone();
        tracker.spawn(async move {
            let result = tokio::select! {
                r = work => Some(r),
                _ = cancel.cancelled() => Some(Err(Error::new(ErrorKind::ShuttingDown, "handler stopped by shutdown"))),
                // The caller has given up by now: stop the handler, drop its reply.
                _ = sleep_until_opt(deadline) => None,
            };
            drop(permit);
            match result {
                Some(result) => finish(&*links, reply.as_ref(), result),
                None => tracing::debug!(correlation = reply.as_ref().map(|r| r.correlation), "handler cancelled: the caller's deadline passed"),
            }
        });
    }
}

/// The answer of one inbound call, carried to the task that runs its work.
pub(crate) struct PendingReply {
    links: Arc<dyn ReplyOut>,
    reply: Option<ReplyRoute>,
    permit: Option<CountPermit>,
}

impl PendingReply {
    /// The correlation the reply goes back under (`None` for a send).
    pub(crate) fn correlation(&self) -> Option<u64> {
        self.reply.as_ref().map(|route| route.correlation)
    }

    /// Replies (a request) or logs a failure (a send), once.
    pub(crate) fn finish(mut self, result: Result<Bytes>) {
        self.permit.take();
        finish(&*self.links, self.reply.take().as_ref(), result);
    }
}

impl Drop for PendingReply {
    fn drop(&mut self) {
        if let Some(reply) = self.reply.take() {
            finish(
                &*self.links,
                Some(&reply),
                Err(Error::new(
                    ErrorKind::Unavailable,
                    "the work was dropped before it ran",
                )),
            );
        }
    }
}

/// Replies to a request (or logs a send handler's failure).
fn finish(links: &dyn ReplyOut, reply: Option<&ReplyRoute>, result: Result<Bytes>) {
    match reply {
        Some(route) => links.reply(route, result),
        None => {
            if let Err(e) = result {
                tracing::warn!(error = %e, "send handler failed");
            }
        }
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// How a handler's result travels back. A reply never carries the request's metadata.
pub(crate) fn reply_outcome(result: Result<Bytes>) -> ReplyOutcome {
    match result {
        Ok(bytes) => ReplyOutcome::Ok(bytes),
        Err(e) => {
            let kind = e.kind().unwrap_or(ErrorKind::InternalFailure);
            let detail = match &e {
                Error::Failed { detail, .. } => detail.clone(),
                other => other.to_string(),
            };
            ReplyOutcome::Failed {
                kind: kind.code(),
                detail,
                refusal: e.refusal().map(crate::Refusal::code),
            }
        }
    }
}

/// A result as a caller hears it through a reply: an error without an [`ErrorKind`] (an
/// argument error raised inside a handler) arrives as `InternalFailure` carrying its text.
/// A caller on the owner's own node gets its result through this too, so a local and a
/// remote caller see the same thing.
pub(crate) fn as_replied<T>(result: Result<T>) -> Result<T> {
    result.map_err(|e| match e.kind() {
        Some(_) => e,
        None => Error::new(ErrorKind::InternalFailure, e.to_string()),
    })
}

/// Polls a future once without a task; `None` when it has to wait. A future that returns
/// pending re-registers its real waker when its task polls it again.
pub(crate) fn poll_once<F: std::future::Future + Unpin>(future: &mut F) -> Option<F::Output> {
    let mut cx = std::task::Context::from_waker(futures::task::noop_waker_ref());
    match std::pin::Pin::new(future).poll(&mut cx) {
        std::task::Poll::Ready(output) => Some(output),
        std::task::Poll::Pending => None,
    }
}
