//! A call whose owner is this node: admitted without waiting, its turn run on the
//! caller's task when the object is idle, queued otherwise; its result heard as a remote
//! caller would hear it.

use std::sync::Arc;

use std::time::Duration;

use tokio::time::Instant;

use crate::address::ObjectKey;
use crate::call::BoxFuture;
use crate::call::PacketKind;
use crate::handle::ObjectMessage;
use crate::object::admission::{prepare, to_departure, Admission, Admitted, Prepared};
use crate::object::core::ObjectCore;
use crate::object::env::ObjectEnv;
use crate::object::follow::Departures;
use crate::object::inline_turn::{self, Inline};
use crate::object::live_object::LiveObject;
use crate::object::mailbox::Refused;
use crate::object::object_job::{CallerWait, ObjectJob, ReplyTo};
use crate::object::owner_link::node_stopping;
use crate::object::resolver::Resolver;
use crate::object::route_cache::LocalBinding;
use crate::wire::{Metadata, Payload, RouteFence};
use crate::{Error, ErrorKind, Result};

/// What a local caller's metadata looks like to the handler: as a remote caller's, the
/// framework's own relay key never reaches it.
fn local_metadata(mut metadata: Metadata) -> Metadata {
    metadata.remove(crate::object::follow::RELAY_ID_KEY);
    metadata
}

/// A call to an object on this node made from a future: after a store read, a route
/// switch, or as a switch's barrier (a call that finds its route cached goes through
/// [`admit_local`] straight from [`start`](super::start)).
pub(in crate::object) async fn call_local(
    server: &ObjectCore,
    call: ObjectMessage<'_>,
    bound: &LocalBinding,
    fence: RouteFence,
    now: Instant,
    deadline: Instant,
) -> Result<Payload> {
    // A caller that only ever meets idle objects (their turns run on its task) never
    // waits on anything: its task's budget makes it step aside now and then, as any use
    // of a tokio resource would. Spent first, while only the arguments are alive.
    tokio::task::coop::consume_budget().await;
    match admit_local(server, call, bound, fence, now, deadline) {
        Local::Done(result) => result,
        Local::Waits(waiting) => waiting.await,
    }
}

/// How a local call went on its way.
pub(super) enum Local<'a> {
    /// Answered here (refused, or its turn ran on this task).
    Done(Result<Payload>),
    /// It waits: for room in the queue, or for its turn's result. (Boxed: the call that
    /// runs on this task never carries this state.)
    Waits(BoxFuture<'a, Result<Payload>>),
}

/// Admits a local call, without waiting: an idle object runs it on this task, a busy one
/// queues it.
pub(super) fn admit_local<'a>(
    server: &'a ObjectCore,
    call: ObjectMessage<'_>,
    bound: &LocalBinding,
    fence: RouteFence,
    now: Instant,
    deadline: Instant,
) -> Local<'a> {
    let request = call.kind == PacketKind::Request;
    // A request's result comes back through the object's turn, straight to this caller:
    // no table entry, and the one deadline is this call's own. A turn run on this task
    // hands it over as a value; only a call that waits gets a channel to wait on.
    if request && server.env.is_stopping() {
        return Local::Done(Err(node_stopping()));
    }
    let wait = |reply: Option<CallerWait>| {
        reply.map(|reply| LocalWait {
            reply,
            deadline,
            timeout: call.timeout,
        })
    };
    // Only a call that waits needs its own copy of the ID.
    let key = &*call.key;
    let waits = |rx| Local::Waits(Box::pin(wait_local(&server.env, wait(rx), key.clone())));
    let prepared = prepare(
        server,
        Admission {
            key,
            packet: call.packet,
            payload: call.payload,
            metadata: local_metadata(call.metadata),
            kind: call.kind,
            fence,
            now,
            deadline: Some(deadline),
            reply: request.then_some(ReplyTo::Caller),
            sender: None,
            hops: 0,
            operation: 0,
            bound: Some(bound),
            session: None,
        },
    );
    let prepared = match prepared {
        Ok(Admitted::Job(prepared)) => prepared,
        Ok(Admitted::Taken { waiting }) => {
            // The object is leaving this node: its hold or relay took the message.
            left_here(&server.departures, &server.resolver, key, fence);
            return waits(waiting);
        }
        Err(refusal) => return Local::Done(Err(refusal.error)),
    };
    let Prepared {
        live,
        view,
        job,
        bytes,
        waiting,
    } = prepared;
    // A request to an object behind the gate this very turn holds would wait for itself.
    if request && view.gate.held_here() {
        return Local::Done(Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{} shares this handler's execution gate (a SpotWide Spot and its members): a request to it would wait for itself; send it one way instead", key),
        )));
    }
    let mut job = match inline_turn::run(&live, view, job, bytes) {
        Inline::Ran(result) => return Local::Done(result),
        Inline::HandedOver(handed) => return waits(handed.or(waiting)),
        Inline::Declined(job) => job,
    };
    let rx = waiting.or_else(|| job.wait_for_caller());
    // A request does not wait for room: it is queued now or refused.
    if request {
        return match live.try_deliver(job, bytes) {
            Ok(()) => waits(rx),
            Err((refused, job)) => {
                match not_queued(server, &live, fence, job, bytes, refused, false) {
                    Some(error) => Local::Done(Err(error)),
                    None => waits(rx),
                }
            }
        };
    }
    queue_send(server, live, job, bytes, fence, deadline)
}

/// A local send waits for room up to its deadline (a send's whole budget is its send
/// timeout, counted from the call).
fn queue_send(
    server: &ObjectCore,
    live: Arc<LiveObject>,
    job: ObjectJob,
    bytes: usize,
    fence: RouteFence,
    deadline: Instant,
) -> Local<'_> {
    match live.try_deliver(job, bytes) {
        Ok(()) => Local::Done(Ok(Payload::default())),
        Err((Refused::Full(_), job)) => Local::Waits(Box::pin(async move {
            match live.deliver_by(job, bytes, deadline).await {
                Ok(()) => Ok(Payload::default()),
                Err((refused, job)) => {
                    match not_queued(server, &live, fence, job, bytes, refused, true) {
                        Some(error) => Err(error),
                        None => Ok(Payload::default()),
                    }
                }
            }
        })),
        Err((refused, job)) => match not_queued(server, &live, fence, job, bytes, refused, false) {
            Some(error) => Local::Done(Err(error)),
            None => Local::Done(Ok(Payload::default())),
        },
    }
}

/// A job its object's queue refused: a sealed or closed one goes to the object's
/// departure if it has one (`None`: taken there, its caller waits as if it was queued);
/// otherwise the error its caller gets.
fn not_queued(
    server: &ObjectCore,
    live: &LiveObject,
    fence: RouteFence,
    job: ObjectJob,
    bytes: usize,
    refused: Refused,
    waited_for_room: bool,
) -> Option<Error> {
    let id = &live.key;
    if matches!(refused, Refused::Sealed | Refused::Closed) {
        match to_departure(
            &server.departures,
            server.env.lost_sends(),
            live,
            fence,
            (job, bytes),
            None,
            0,
        ) {
            Some(job) => drop(job),
            None => {
                left_here(&server.departures, &server.resolver, id, fence);
                return None;
            }
        }
    } else {
        drop(job);
    }
    Some(match refused {
        Refused::Full(_) if waited_for_room => Error::new(
            ErrorKind::DeadlineExceeded,
            format!("{id}'s queue stayed full for the send timeout"),
        ),
        Refused::Full(_) => {
            Error::new(ErrorKind::CapacityExceeded, format!("{id}'s queue is full"))
        }
        Refused::Sealed | Refused::Closed => {
            Error::new(ErrorKind::Unavailable, format!("{id} is closing"))
        }
    })
}

/// A local call's message was relayed by the object's departure: this node's own route
/// to it is old, as a follow notice tells a remote sender, so it is not used (or cached)
/// again and the next call reads the new owner.
fn left_here(departures: &Departures, resolver: &Resolver, key: &ObjectKey, fence: RouteFence) {
    if let Some(departure) = departures.get(key, &fence) {
        if let Some((fence, route)) = departure.relaying_from() {
            resolver.moved(key, &fence, &route);
        }
    }
}

/// A local request waiting for its result.
struct LocalWait {
    reply: CallerWait,
    deadline: Instant,
    timeout: Duration,
}

/// A local request's result, as a remote caller would hear it: the reply, or
/// `DeadlineExceeded` at the call's deadline, or `ShuttingDown` when the node stopped
/// with the request unanswered (a send is done once queued: `None`).
async fn wait_local(env: &ObjectEnv, wait: Option<LocalWait>, id: ObjectKey) -> Result<Payload> {
    let Some(LocalWait {
        reply,
        deadline,
        timeout,
    }) = wait
    else {
        return Ok(Payload::default());
    };
    use tokio::sync::oneshot::error::TryRecvError;
    // The owner's turn usually runs while this task steps aside once (the admission woke
    // it on this worker): a reply by then needs no timer at all.
    let mut reply = reply;
    StepAside::default().await;
    let waited = match reply.try_recv() {
        Ok(result) => Some(Some(result)),
        Err(TryRecvError::Closed) => Some(None),
        Err(TryRecvError::Empty) => tokio::time::timeout_at(deadline, reply)
            .await
            .ok()
            .map(Result::ok),
    };
    match waited {
        Some(Some(result)) => result,
        Some(None) if env.is_stopping() => Err(Error::new(
            ErrorKind::ShuttingDown,
            "the runtime is shutting down",
        )),
        Some(None) => Err(Error::new(ErrorKind::Unavailable, format!("{id} stopped"))),
        None => Err(Error::new(
            ErrorKind::DeadlineExceeded,
            format!("no reply within {timeout:?}"),
        )),
    }
}

/// Returns `Pending` once, having woken its own task: the task goes to the back of its
/// worker's queue, behind the turn its admission just woke (unlike `yield_now`, no wait
/// for the driver's next poll).
#[derive(Default)]
struct StepAside {
    stepped: bool,
}

impl std::future::Future for StepAside {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if std::mem::replace(&mut self.stepped, true) {
            return std::task::Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}
