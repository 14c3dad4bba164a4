//! The session owner's route to a bound Actor, and the relay over it: straight to the
//! owner the bind validated, under its fence and the binding's generation. Nothing here
//! reads the Location Store or the route cache; a route the owner no longer honours
//! fails `Unavailable` and is not re-resolved (seed 000 §3.2).

use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::Bindings;
use crate::address::{ActorRef, ObjectKey};
use crate::call::PacketKind;
use crate::handle::ObjectMessage;
use crate::mesh::calls::SubmittedRequest;
use crate::object::actor_binding::retired;
use crate::object::authority::OwnerRoute;
use crate::object::direct::call_local;
use crate::object::owner_link::{Awaiting, Delivered, Destination, FarEnd, ObjectCommand};
use crate::object::route_cache::LocalBinding;
use crate::wire::{Metadata, Payload, RouteFence, SessionTail};
use crate::{Error, ErrorKind, Result};

/// One bound Actor, as its session holds it.
#[derive(Debug, Clone)]
pub(crate) struct BindingRoute {
    /// The Actor's location snapshot when the bind succeeded.
    pub(crate) actor: ActorRef,
    pub(crate) key: ObjectKey,
    pub(crate) owner: OwnerRoute,
    pub(crate) fence: RouteFence,
    pub(crate) binding_generation: u64,
    /// The generation of this node's own owner lease the bind was made under: the route
    /// is usable only under that claim, before its admission deadline.
    pub(crate) session_lease: u64,
}

impl BindingRoute {
    /// The Actor's owner this route names, in the lifecycle it names.
    pub(crate) fn owner(&self) -> Destination<'_> {
        Destination::new(
            &self.owner.rid,
            self.owner.node_generation,
            FarEnd::Owner(&self.key),
        )
    }
}

/// One message a session relays.
pub(crate) struct BoundRelay<'a> {
    pub(crate) packet: &'a str,
    pub(crate) kind: PacketKind,
    pub(crate) payload: Bytes,
    pub(crate) metadata: Metadata,
    pub(crate) session_seq: u64,
    pub(crate) timeout: Duration,
}

/// A relay on its way.
pub(crate) enum Relayed {
    /// A one-way the owner's link (or the Actor's queue) took, or a request answered here.
    Done(Bytes),
    /// A request the owner's link took: its reply, awaited apart from the session's lane
    /// so the next packets go on in order.
    Submitted(SubmittedRequest),
}

/// Relays `relay` over `route`, in the order of the calls: returns once the owner's
/// link (or, on this node, the Actor) took it.
pub(crate) async fn bound_call(
    bindings: &Bindings,
    route: &BindingRoute,
    relay: BoundRelay<'_>,
) -> Result<Relayed> {
    check_binding_route(bindings, route)?;
    let deadline = Instant::now() + relay.timeout;
    let send_timeout = bindings
        .core
        .env
        .owner_link()
        .node()?
        .settings()
        .send_timeout;
    let tail = SessionTail {
        binding_generation: route.binding_generation,
        session_seq: relay.session_seq,
    };
    if route.owner.rid == bindings.core.env.route().rid {
        // (An Actor here answers within the lane: its queue is this node's.)
        return bound_call_here(bindings, route, relay, tail, deadline, send_timeout)
            .await
            .map(Relayed::Done);
    }
    let out = bindings.core.env.owner_link();
    let admit_by = deadline.min(Instant::now() + send_timeout);
    let message = ObjectCommand::message(
        &route.key,
        relay.kind,
        relay.packet,
        route.fence,
        &relay.metadata,
        relay.payload,
    )
    .bound(tail);
    let awaiting = match relay.kind {
        PacketKind::Request => Awaiting::Submitted(deadline),
        PacketKind::Send => Awaiting::Nothing,
    };
    match out
        .deliver(route.owner(), &message, awaiting, admit_by)
        .await?
    {
        Delivered::Submitted(submitted) => Ok(Relayed::Submitted(submitted)),
        Delivered::Reply(bytes) => Ok(Relayed::Done(bytes)),
        Delivered::Sent => Ok(Relayed::Done(Bytes::new())),
    }
}

/// Whether `route` may carry a message now: only under the owner lease this node held
/// when it bound, and before that lease's local admission deadline (seed 000 §3.2). A
/// Location Store outage stops the renewals, so it ends the route's use instead of
/// extending it; a lease claimed anew after a lapse never revives an older route.
pub(crate) fn check_binding_route(bindings: &Bindings, route: &BindingRoute) -> Result<()> {
    let admitted = bindings
        .core
        .env
        .lease()
        .admits_at(Instant::now(), |_, generation| {
            generation == route.session_lease
        });
    if admitted {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::Unavailable,
        format!(
            "the session's route to {} is past this node's owner lease admission deadline \
             (the lease lapsed or was claimed anew since the bind): nothing was sent",
            route.key
        ),
    ))
}

/// The same, to an Actor this node owns: the binding and incarnation are checked here,
/// then the call goes the local way under the bind's fence.
async fn bound_call_here(
    bindings: &Bindings,
    route: &BindingRoute,
    relay: BoundRelay<'_>,
    tail: SessionTail,
    deadline: Instant,
    send_timeout: Duration,
) -> Result<Bytes> {
    let current = bindings.core.registry.get(&route.key).filter(|live| {
        live.generation() == route.fence.object_generation && live.bindings().admits(&tail)
    });
    if current.is_none() {
        return Err(retired(&route.key));
    }
    let call = ObjectMessage {
        key: std::borrow::Cow::Borrowed(&route.key),
        packet: relay.packet,
        payload: Payload::encoded(relay.payload),
        metadata: relay.metadata,
        kind: relay.kind,
        timeout: relay.timeout,
        send_timeout,
        intent: None,
    };
    let now = Instant::now();
    call_local(
        &bindings.core,
        call,
        &LocalBinding::default(),
        route.fence,
        now,
        deadline,
    )
    .await?
    .into_bytes()
}
