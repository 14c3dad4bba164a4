//! Direct messages to a Spot or Actor by ID: resolve the owner, then queue on an object
//! this node owns or send over the mesh with the resolved route fence.

use std::sync::Arc;

use bytes::Bytes;
use tokio::time::Instant;

use super::authority::ObjectShape;
use super::authority_store::AuthorityStore;
use super::core::ObjectCore;
use super::owner_link::{node_stopping, route_fence};
use super::owner_link::{Awaiting, Delivered, Destination, FarEnd, ObjectCommand};
use super::resolver::{Resolution, Resolver};
use super::route_cache::{ReadyRoute, Routed};
use super::route_traffic::Sending;
use crate::address::{ObjectKey, StableType};
use crate::call::BoxFuture;
use crate::call::PacketKind;
use crate::handle::{ObjectMessage, Started};
use crate::object::env::ObjectEnv;
use crate::wire::{Payload, RouteFence};
use crate::{Error, ErrorKind, Result};

mod local;
mod switch;

pub(super) use local::call_local;

pub(super) fn is_stale_route(e: &Error) -> bool {
    e.is_refusal(crate::Refusal::StaleRoute)
}

/// What activates the Instance Spot a call with Instance intent found Missing (or
/// refused as stale behind a cached route): the layer above the direct path, which
/// places and creates it, then delivers the call through [`resolved_call`] again.
pub(crate) trait Activation: Sync {
    /// Activates `call`'s Spot and delivers `call` to it by `deadline`. `missing`: the
    /// caller has just read the ID as Missing (the activation need not read it again
    /// before it reserves).
    fn activate<'a>(
        &'a self,
        call: ObjectMessage<'a>,
        deadline: Instant,
        missing: bool,
    ) -> BoxFuture<'a, Result<Payload>>;
}

/// Starts a packet to a Spot or Actor by its ID only. A call whose route is cached and
/// leads to this node is admitted right here, without a future of its own: its turn runs
/// on this task when the object is idle (`Done`). Anything else goes on in a future.
pub(super) fn start<'a>(
    server: &'a ObjectCore,
    activation: &'a dyn Activation,
    mut message: ObjectMessage<'a>,
) -> Started<'a> {
    let now = Instant::now();
    let deadline = now + message.timeout;
    let known = match server.resolver.cached(&message.key, now) {
        // (A route that found its object here leads here: no need to compare node IDs.
        // A call with Instance intent checks the route's type first.)
        Some(Resolution::Ready(routed))
            if message.intent.is_none()
                && (routed.route.local.is_bound()
                    || routed.route.owner.rid == server.env.route().rid) =>
        {
            let Routed { route, sending } = routed;
            let call = message.lend();
            let request = call.kind == PacketKind::Request;
            let fence = route_fence(&route.fence);
            return match local::admit_local(server, call, &route.local, fence, now, deadline) {
                local::Local::Done(result) => {
                    settle(&server.resolver, &route, sending, request, &result);
                    match result {
                        // The object closed here after the route was cached: what is
                        // there now, read off the store.
                        Err(e) if is_gone_here(&e) => Started::Running(Box::pin(async move {
                            Err(missing_or(server.env.authority(), &message.key, e).await)
                        })),
                        result => Started::Done(result),
                    }
                }
                local::Local::Waits(waiting) => Started::Running(Box::pin(async move {
                    let result = waiting.await;
                    settle(&server.resolver, &route, sending, request, &result);
                    match result {
                        Err(e) if is_stale_route(&e) => {
                            Err(missing_or(server.env.authority(), &message.key, e).await)
                        }
                        result => result,
                    }
                })),
            };
        }
        known => known,
    };
    Started::Running(Box::pin(async move {
        let call = message.lend();
        // An intent one-way reads the authority, never a cached route: nothing would tell
        // it that the Spot behind a cached route was evicted, and it would be lost.
        let known = match (&call.intent, call.kind) {
            (Some(_), PacketKind::Send) => Some(Some(
                Box::pin(server.resolver.resolve_fresh(&call.key, now)).await,
            )),
            _ => Some(known),
        };
        resolved_call(server, call, now, deadline, known, Some(activation)).await
    }))
}

/// A call by ID, from where its route stands (`known`: what the cache said at `now`,
/// if it was asked already). With an `activation`, an intent call whose Spot is Missing,
/// or whose route's owner refused it, goes through activation once (the activation's own
/// delivery passes none).
pub(super) async fn resolved_call(
    server: &ObjectCore,
    call: ObjectMessage<'_>,
    now: Instant,
    deadline: Instant,
    known: Option<Option<Resolution>>,
    activation: Option<&dyn Activation>,
) -> Result<Payload> {
    let Routed { route, sending } = match resolve(server, &call.key, now, deadline, known).await {
        // With Instance intent, a Missing ID is activated, and one being activated is
        // waited for; anything else (a dead owner above all) stays the error it is.
        Err(e) if call.intent.is_some() && activates(&e) => match activation {
            Some(activation) => {
                let missing = e.is(ErrorKind::NotFound);
                return activation.activate(call, deadline, missing).await;
            }
            None => return Err(e),
        },
        routed => routed?,
    };
    let mut call = call;
    // An Instance Spot evicted (or moved) behind a cached route refuses as stale; with
    // intent the call is not lost but activated (or delivered) afresh, so it keeps a copy.
    let retry = match (&call.intent, activation) {
        (Some(intent), None) => {
            check_intent(&route, intent)?;
            None
        }
        (Some(intent), Some(activation)) => {
            check_intent(&route, intent)?;
            let bytes = std::mem::take(&mut call.payload).into_bytes()?;
            call.payload = Payload::encoded(bytes.clone());
            Some((bytes, call.metadata.clone(), intent.clone(), activation))
        }
        (None, _) => None,
    };
    let request = call.kind == PacketKind::Request;
    let (key, packet, kind) = (call.key.clone(), call.packet, call.kind);
    let (timeout, send_timeout) = (call.timeout, call.send_timeout);
    let fence = route_fence(&route.fence);
    let result = if route.owner.rid == server.env.route().rid {
        call_local(server, call, &route.local, fence, now, deadline).await
    } else {
        // Boxed: a remote call's state stays out of every local call's future.
        Box::pin(call_remote(&server.env, &route, call, fence, deadline))
            .await
            .map(Payload::encoded)
    };
    settle(&server.resolver, &route, sending, request, &result);
    match (result, retry) {
        (Err(e), Some((bytes, metadata, intent, activation))) if is_stale_route(&e) => {
            let again = ObjectMessage {
                key,
                packet,
                payload: Payload::encoded(bytes),
                metadata,
                kind,
                timeout,
                send_timeout,
                intent: Some(intent),
            };
            activation.activate(again, deadline, false).await
        }
        // The owner refused it (nothing ran): when the object is gone, the call says so.
        (Err(e), None) if is_gone_here(&e) => {
            Err(missing_or(server.env.authority(), &key, e).await)
        }
        (result, _) => result,
    }
}

/// A call with Instance intent that found a Spot: it must be an Instance Spot of the
/// intended type.
fn check_intent(route: &ReadyRoute, intent: &StableType) -> Result<()> {
    if route.shape == ObjectShape::InstanceSpot && route.stable_type == intent.as_str() {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::TypeMismatch,
        format!(
            "{} is a {:?} of type {:?}; Instance intent for {intent} reaches only an Instance Spot of that type",
            route.key, route.shape, route.stable_type
        ),
    ))
}

/// Whether a call with Instance intent that failed to resolve with `error` goes to the
/// activation path, which reads the authority again and acts on what it finds: nothing
/// (activate), an activation under way (wait for it, or cancel it when its owner is
/// gone), a Ready Spot (deliver; a dead owner stays `Unavailable`, seed 002 §10 items 10
/// and 11, whether or not its first message ran).
/// Any other error is the call's.
fn activates(error: &Error) -> bool {
    error.is(ErrorKind::NotFound) || error.is(ErrorKind::Unavailable)
}

/// Whether the owner a route named refused a call because the object is no longer there
/// (not because the call named an earlier incarnation).
fn is_gone_here(e: &Error) -> bool {
    e.is(ErrorKind::Unavailable) && is_stale_route(e)
}

/// `NotFound` when `key` has no authority any more (its owner closed or evicted it after
/// this node cached the route), else `refused` as it is.
async fn missing_or(authority: &AuthorityStore, key: &ObjectKey, refused: Error) -> Error {
    match authority.read(key).await {
        Ok(None) => Error::new(
            ErrorKind::NotFound,
            format!("there is no {key} (it was closed after this node last found it)"),
        ),
        _ => refused,
    }
}

/// What a call's end says about its route: what arrived on it, and whether it is stale.
fn settle(
    resolver: &Resolver,
    route: &ReadyRoute,
    sending: Sending,
    request: bool,
    result: &Result<Payload>,
) {
    match (request, result) {
        (true, Ok(_)) => sending.replied(),
        // A refused one-way is not on its way anywhere.
        (false, Err(_)) => sending.not_sent(),
        // An admitted one-way, or a request without its reply: not known to have arrived.
        _ => drop(sending),
    }
    // Only a route the owner refused (or could not be reached on) is dropped; a full
    // queue or a handler's own error says nothing about the route.
    if result.as_ref().is_err_and(is_stale_route) {
        resolver.stale(route);
    }
}

/// Where messages for `key` go now, for a framework notice that is not a call: the cache,
/// or one authority read, waiting out a route switch until `deadline`.
pub(crate) async fn route_of(
    server: &ObjectCore,
    key: &ObjectKey,
    deadline: Instant,
) -> Result<Arc<ReadyRoute>> {
    resolve(server, key, Instant::now(), deadline, None)
        .await
        .map(|routed| routed.route)
}

/// The route calls to `id` use now. When it changes to a later owner, this waits until
/// the follow barrier down the old one was answered (see [`switch`]).
async fn resolve(
    server: &ObjectCore,
    id: &ObjectKey,
    mut now: Instant,
    deadline: Instant,
    mut known: Option<Option<Resolution>>,
) -> Result<Routed> {
    loop {
        // A cache hit needs no future; an authority read's is boxed, off the local path.
        let cached = match known.take() {
            Some(known) => known,
            None => server.resolver.cached(id, now),
        };
        let resolution = match cached {
            Some(known) => known,
            None => Box::pin(server.resolver.resolve(id, now)).await,
        };
        let switch = match resolution {
            Resolution::Ready(route) => return Ok(route),
            Resolution::Switch(start) => {
                let server = server.arc().ok_or_else(node_stopping)?;
                switch::begin(&server, start)
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

pub(super) async fn call_remote(
    env: &ObjectEnv,
    route: &ReadyRoute,
    call: ObjectMessage<'_>,
    fence: RouteFence,
    deadline: Instant,
) -> Result<Bytes> {
    let admit_by = deadline.min(Instant::now() + call.send_timeout);
    // An owner the route names that cannot be reached, or restarted, is a stale route; a
    // node that is stopping is not.
    let owner = &route.owner;
    let to = Destination::new(&owner.rid, owner.node_generation, FarEnd::Owner(&route.key))
        .refused_as(crate::Refusal::StaleRoute);
    let message = ObjectCommand::message(
        &route.key,
        call.kind,
        call.packet,
        fence,
        &call.metadata,
        call.payload.into_bytes()?,
    );
    let awaiting = match call.kind {
        PacketKind::Request => Awaiting::Reply(deadline),
        PacketKind::Send => Awaiting::Nothing,
    };
    match env
        .owner_link()
        .deliver(to, &message, awaiting, admit_by)
        .await?
    {
        Delivered::Reply(bytes) => Ok(bytes),
        Delivered::Sent | Delivered::Submitted(_) => Ok(Bytes::new()),
    }
}
