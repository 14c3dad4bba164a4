//! Direct messages to a Spot or Actor by ID: resolve the owner, then queue on an object
//! this node owns or send over the mesh with the resolved route fence.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::inline_turn::Inline;
use super::live_object::{LiveObject, ObjectJob, ReplyTo, TurnView};
use super::mailbox::Refused;
use super::owner_link::ObjectCommand;
use super::owner_link::{node_stopping, route_fence};
use super::relocation::{Held, Offer};
use super::resolver::Resolution;
use super::route_cache::{ReadyRoute, Routed};
use super::route_switch::FOLLOW_BARRIER;
use super::server::ObjectServer;
use crate::address::ObjectKey;
use crate::call::BoxFuture;
use crate::handler::PacketKind;
use crate::object::env::ObjectEnv;
use crate::wire::{Metadata, Payload, RouteFence};
use crate::{Error, ErrorKind, Result};

/// Marks the refusals that mean "this route is unusable" (the owner no longer owns the
/// object, or cannot be reached), in the error detail both sides of the wire read.
pub(super) const STALE_ROUTE: &str = "(stale route)";

fn is_stale_route(e: &Error) -> bool {
    (e.is(ErrorKind::Unavailable) || e.is(ErrorKind::InvalidOperation))
        && e.to_string().contains(STALE_ROUTE)
}

/// One direct call to a Spot or Actor, as the caller made it.
pub(crate) struct ObjectCall<'a> {
    pub(crate) key: &'a ObjectKey,
    pub(crate) packet: &'a str,
    pub(crate) payload: Payload,
    pub(crate) metadata: &'a Metadata,
    pub(crate) kind: PacketKind,
    /// The whole call's budget: resolve, queue, handler and reply.
    pub(crate) timeout: Duration,
    /// How long the send path may wait for room.
    pub(crate) send_timeout: Duration,
}

/// A message ready to queue on an object this node owns.
pub(super) struct Prepared {
    pub(super) live: Arc<LiveObject>,
    /// What its turn starts from, read with the admission check.
    pub(super) view: TurnView,
    pub(super) job: ObjectJob,
    pub(super) bytes: usize,
}

/// Why a message was not admitted, with its reply capability so the caller answers.
pub(super) struct Refusal {
    pub(super) error: Error,
    pub(super) reply: Option<ReplyTo>,
}

/// A message on its way into an object this node owns.
pub(super) struct Admission<'a> {
    pub(super) key: &'a ObjectKey,
    pub(super) packet: &'a str,
    pub(super) payload: Payload,
    pub(super) metadata: Metadata,
    pub(super) kind: PacketKind,
    pub(super) fence: RouteFence,
    /// When it was made (the lease must admit work then).
    pub(super) now: Instant,
    pub(super) deadline: Option<Instant>,
    pub(super) reply: Option<ReplyTo>,
    /// The node it came from (`None`: this node).
    pub(super) sender: Option<String>,
    /// Message Follow relays before it arrived.
    pub(super) hops: u8,
}

/// Sends or requests a packet to a Spot or Actor by its ID only.
pub(super) async fn call(server: &ObjectServer, call: ObjectCall<'_>) -> Result<Payload> {
    let now = Instant::now();
    let deadline = now + call.timeout;
    let Routed { route, sending } = resolve(server, call.key, now, deadline).await?;
    let request = call.kind == PacketKind::Request;
    let fence = route_fence(&route.fence);
    let result = if route.owner.rid == server.env.route().rid {
        call_local(server, call, fence, now, deadline).await
    } else {
        // Boxed: a remote call's state stays out of every local call's future.
        Box::pin(call_remote(&server.env, &route, call, fence, deadline))
            .await
            .map(Payload::encoded)
    };
    match (request, &result) {
        (true, Ok(_)) => sending.replied(),
        // A refused one-way is not on its way anywhere.
        (false, Err(_)) => sending.not_sent(),
        // An admitted one-way, or a request without its reply: not known to have arrived.
        _ => drop(sending),
    }
    // Only a route the owner refused (or could not be reached on) is dropped; a full
    // queue or a handler's own error says nothing about the route.
    if result.as_ref().is_err_and(is_stale_route) {
        server.resolver.stale(&route);
    }
    result
}

/// The route calls to `id` use now. When it changes to a later owner, this waits until
/// the follow barrier down the old one was answered (see [`route_switch`](super::route_switch)).
async fn resolve(
    server: &ObjectServer,
    id: &ObjectKey,
    mut now: Instant,
    deadline: Instant,
) -> Result<Routed> {
    loop {
        // A cache hit needs no future; an authority read's is boxed, off the local path.
        let resolution = match server.resolver.cached(id, now) {
            Some(known) => known,
            None => Box::pin(server.resolver.resolve(id, now)).await,
        };
        let switch = match resolution {
            Resolution::Ready(route) => return Ok(route),
            Resolution::Switch(start) => {
                let server = server.arc().ok_or_else(node_stopping)?;
                super::route_switch::begin(&server, start)
            }
            Resolution::Wait(switch) => switch,
            Resolution::Missing => {
                return Err(Error::new(ErrorKind::NotFound, format!("there is no {id}")))
            }
            Resolution::Unavailable(why) => return Err(Error::new(ErrorKind::Unavailable, why)),
            Resolution::StoreFailure(e) => {
                return Err(Error::new(
                    ErrorKind::Unavailable,
                    format!("the Location Store could not say where {id} is: {e}"),
                ))
            }
        };
        if Box::pin(tokio::time::timeout_at(deadline, switch.finished()))
            .await
            .is_err()
        {
            return Err(Error::new(
                ErrorKind::DeadlineExceeded,
                format!("{id} moved, and this node's earlier messages to it were still on their way to its new owner"),
            ));
        }
        now = Instant::now();
    }
}

/// What a local caller's metadata looks like to the handler: as a remote caller's, the
/// framework's own relay key never reaches it.
fn local_metadata(metadata: &Metadata) -> Metadata {
    let mut metadata = metadata.clone();
    metadata.remove(super::relocation::RELAY_ID_KEY);
    metadata
}

pub(super) async fn call_local(
    server: &ObjectServer,
    call: ObjectCall<'_>,
    fence: RouteFence,
    now: Instant,
    deadline: Instant,
) -> Result<Payload> {
    // A caller that only ever meets idle objects (their turns run on its task) never
    // waits on anything: its task's budget makes it step aside now and then, as any use
    // of a tokio resource would. Spent first, while only the arguments are alive.
    tokio::task::coop::consume_budget().await;
    match admit_local(server, call, fence, now, deadline) {
        Local::Done(result) => result,
        Local::Waits(waiting) => waiting.await,
    }
}

/// How a local call went on its way.
enum Local<'a> {
    /// Answered here (refused, or its turn ran on this task).
    Done(Result<Payload>),
    /// It waits: for room in the queue, or for its turn's result. (Boxed: the call that
    /// runs on this task never carries this state.)
    Waits(BoxFuture<'a, Result<Payload>>),
}

/// Admits a local call, without waiting: an idle object runs it on this task, a busy one
/// queues it.
fn admit_local<'a>(
    server: &'a ObjectServer,
    call: ObjectCall<'_>,
    fence: RouteFence,
    now: Instant,
    deadline: Instant,
) -> Local<'a> {
    let request = call.kind == PacketKind::Request;
    // A request's result comes back through the object's turn, straight to this caller:
    // no table entry, and the one deadline is this call's own.
    let (tx, rx) = if request {
        if server.env.is_stopping() {
            return Local::Done(Err(node_stopping()));
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let wait = LocalWait {
            reply: rx,
            deadline,
            timeout: call.timeout,
        };
        (Some(ReplyTo::Local(tx)), Some(wait))
    } else {
        (None, None)
    };
    // Only a call that waits needs its own copy of the ID.
    let key = call.key;
    let waits = |rx| Local::Waits(Box::pin(wait_local(&server.env, rx, key.clone())));
    let prepared = prepare(
        server,
        Admission {
            key: call.key,
            packet: call.packet,
            payload: call.payload,
            metadata: local_metadata(call.metadata),
            kind: call.kind,
            fence,
            now,
            deadline: Some(deadline),
            reply: tx,
            sender: None,
            hops: 0,
        },
    );
    let prepared = match prepared {
        Ok(prepared) => prepared,
        Err(refusal) => return Local::Done(Err(refusal.error)),
    };
    let Some(Prepared {
        live,
        view,
        job,
        bytes,
    }) = prepared
    else {
        // The object is leaving this node: its hold or relay took the message.
        left_here(server, call.key, fence);
        return waits(rx);
    };
    // A request to an object behind the gate this very turn holds would wait for itself.
    if request && live.gate_held_by_caller() {
        return Local::Done(Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{} shares this handler's execution gate (a SpotWide Spot and its members): a request to it would wait for itself; send it one way instead", call.key),
        )));
    }
    let job = match super::inline_turn::run(&live, view, job, bytes) {
        Inline::Ran(result) => return Local::Done(result),
        Inline::HandedOver => return waits(rx),
        Inline::Declined(job) => job,
    };
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
    // A local send waits for room up to its deadline (a send's whole budget is its send
    // timeout, counted from the call).
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
    server: &ObjectServer,
    live: &LiveObject,
    fence: RouteFence,
    job: ObjectJob,
    bytes: usize,
    refused: Refused,
    waited_for_room: bool,
) -> Option<Error> {
    let id = &live.key;
    if matches!(refused, Refused::Sealed | Refused::Closed) {
        match to_departure(server, live, fence, job, bytes, None, 0) {
            Some(job) => drop(job),
            None => {
                left_here(server, id, fence);
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
fn left_here(server: &ObjectServer, key: &ObjectKey, fence: RouteFence) {
    if let Some(departure) = server.relocations.departures().get(key, &fence) {
        if let Some((fence, route)) = departure.relaying_from() {
            server.resolver.moved(key, &fence, &route);
        }
    }
}

/// A local request waiting for its result.
struct LocalWait {
    reply: tokio::sync::oneshot::Receiver<Result<Payload>>,
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

/// A job a sealed (or just closed) mailbox refused, offered to the object's departure: a
/// move sealed it, or even handed it over, between the admission check and the queue.
/// `None`: the departure took it.
pub(super) fn to_departure(
    server: &ObjectServer,
    live: &LiveObject,
    fence: RouteFence,
    job: ObjectJob,
    bytes: usize,
    sender: Option<String>,
    hops: u8,
) -> Option<ObjectJob> {
    if server
        .relocations
        .departures()
        .get(&live.key, &fence)
        .is_none()
    {
        // Gone already: a cancelled move reopened the queue.
        return live.try_deliver(job, bytes).err().map(|(_, job)| job);
    }
    let mut held = super::relocation::job_to_held(&live.object_type, job)?;
    held.sender = sender;
    held.hops = hops;
    match server
        .relocations
        .departures()
        .offer(&live.key, &fence, held)
    {
        Offer::Taken => None,
        // The move was cancelled: the queue admits again (after what it held).
        Offer::NotDeparting(held) => {
            let (job, bytes) = super::relocation::held_to_job(
                &live.key,
                &live.object_type,
                held,
                server.env.lost_sends(),
            )?;
            live.try_deliver(job, bytes).err().map(|(_, job)| job)
        }
    }
}

/// Checks the fence and the handler, and builds the job for an object this node owns.
/// On refusal the reply capability comes back with the error, so the caller answers
/// with the real reason.
#[allow(clippy::result_large_err)]
pub(super) fn prepare(
    server: &ObjectServer,
    admission: Admission<'_>,
) -> std::result::Result<Option<Prepared>, Refusal> {
    let Admission {
        key,
        packet,
        payload,
        metadata,
        kind,
        fence,
        now,
        deadline,
        reply,
        sender,
        hops,
    } = admission;
    // An object leaving this node: its hold (or, past relay-ready, its relay) takes the
    // message, on the old route only. `None`: it did; otherwise the message comes back.
    // (Only a message for a departing object pays for the move's copy of its names.)
    let to_departure = |payload, metadata, reply, sender| {
        let held = Held {
            packet: Arc::from(packet),
            kind,
            payload,
            metadata,
            deadline,
            reply,
            sender,
            hops,
        };
        match server.relocations.departures().offer(key, &fence, held) {
            Offer::Taken => None,
            Offer::NotDeparting(held) => Some((held.payload, held.metadata, held.reply)),
        }
    };
    let (payload, metadata, reply) = if server.relocations.departures().get(key, &fence).is_some() {
        match to_departure(payload, metadata, reply, sender.clone()) {
            None => return Ok(None),
            Some(back) => back,
        }
    } else {
        (payload, metadata, reply)
    };
    if packet == FOLLOW_BARRIER {
        // No move of the object holds or relays it here: whatever this node took for the
        // object before it is in the object's queue (or ran) already.
        if let Some(reply) = reply {
            reply.send(Ok(Payload::default()));
        }
        return Ok(None);
    }
    let (live, handler, view) = match check_admission(server, key, packet, kind, fence, now) {
        Ok(checked) => checked,
        // The object may have begun to leave between the two checks: its departure is
        // made before it stops taking messages, so it is there now and takes this one.
        Err(error) if server.relocations.departures().get(key, &fence).is_some() => {
            return match to_departure(payload, metadata, reply, sender) {
                None => Ok(None),
                Some((_, _, reply)) => Err(Refusal { error, reply }),
            };
        }
        Err(error) => return Err(Refusal { error, reply }),
    };
    // Payload plus metadata: both stay in memory until the handler ran.
    let mut payload = payload;
    let payload_bytes = match payload.encoded_len() {
        Ok(bytes) => bytes,
        Err(error) => return Err(Refusal { error, reply }),
    };
    let bytes = payload_bytes
        + metadata
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>();
    let job = ObjectJob::Message {
        handler,
        packet: live
            .object_type
            .packet_name(handler)
            .unwrap_or_else(|| Arc::from(packet)),
        payload,
        metadata,
        deadline,
        reply,
    };
    Ok(Some(Prepared {
        live,
        view,
        job,
        bytes,
    }))
}

/// The owned object `key` and the handler position of `packet`, when the fence holds.
fn check_admission(
    server: &ObjectServer,
    key: &ObjectKey,
    packet: &str,
    kind: PacketKind,
    fence: RouteFence,
    now: Instant,
) -> Result<(Arc<LiveObject>, usize, TurnView)> {
    let id = key;
    let stale = || {
        Error::new(
            ErrorKind::Unavailable,
            format!("this node does not own {id} {STALE_ROUTE}"),
        )
    };
    let live = server.registry.get(id).ok_or_else(stale)?;
    let mut leased = false;
    let mut view = None;
    server.env.lease().admits_at(now, |token| {
        leased = true;
        view = live.admits_viewing(&fence, token);
        view.is_some()
    });
    let Some(view) = view else {
        return Err(if leased {
            stale()
        } else {
            Error::new(
                ErrorKind::Unavailable,
                "the owner's lease admits no new work",
            )
        });
    };
    let handler = live.object_type.handler(packet, kind).ok_or_else(|| {
        Error::new(
            ErrorKind::NotFound,
            format!(
                "{:?} type {} has no {kind:?} handler for {packet:?}",
                key.kind, live.object_type.stable_type
            ),
        )
    })?;
    Ok((live, handler, view))
}

pub(super) async fn call_remote(
    env: &ObjectEnv,
    route: &ReadyRoute,
    call: ObjectCall<'_>,
    fence: RouteFence,
    deadline: Instant,
) -> Result<Bytes> {
    let out = &env.owner_link();
    let node = out.node()?;
    let admit_by = deadline.min(Instant::now() + call.send_timeout);
    let link = out.peer(&route.owner.rid, admit_by).await.map_err(|e| {
        Error::new(
            ErrorKind::Unavailable,
            format!(
                "the owner of {} is not reachable {STALE_ROUTE}: {e}",
                route.key
            ),
        )
    })?;
    if node
        .peers()
        .identity(&route.owner.rid)
        .is_some_and(|(_, generation)| generation != route.owner.node_generation)
    {
        return Err(Error::new(
            ErrorKind::Unavailable,
            format!("the owner of {} restarted {STALE_ROUTE}", route.key),
        ));
    }
    let message = ObjectCommand::message(
        &route.key,
        call.kind,
        call.packet,
        fence,
        call.metadata,
        call.payload.into_bytes()?,
    );
    match call.kind {
        PacketKind::Request => out.request(&link, &message, deadline, admit_by).await,
        PacketKind::Send => out
            .send(&link, &message, admit_by)
            .await
            .map(|()| Bytes::new()),
    }
}
