//! A message's way into an object this node owns: the route fence, the owner lease and
//! the handler checked, the job built, and a message for an object that is leaving handed
//! to its departure instead.

use std::sync::Arc;

use tokio::time::Instant;

use super::core::ObjectCore;
use super::follow::{Departures, Held, Offer};
use super::live_object::{LiveObject, TurnView};
use super::lost_sends::LostSends;
use super::object_job::{CallerWait, HandlerMessage, ObjectJob, ReplyTo};
use super::owner_link::STALE_ROUTE;
use super::registry::ObjectRegistry;
use super::route_cache::LocalBinding;
use super::route_cache::FOLLOW_BARRIER;
use crate::address::ObjectKey;
use crate::call::PacketKind;
use crate::store::OwnerLease;
use crate::wire::{Metadata, Payload, RouteFence};
use crate::{Error, ErrorKind, Result};

/// How a message fared at admission.
#[allow(clippy::large_enum_variant)] // returned at once to the caller, which takes the job apart
pub(super) enum Admitted {
    /// Ready to run or queue.
    Job(Prepared),
    /// Held or relayed for an object leaving this node, or a follow barrier answered at
    /// once: a caller on this node waits on `waiting` (`None`: answered already).
    Taken { waiting: Option<CallerWait> },
}

/// A message ready to queue on an object this node owns.
pub(super) struct Prepared {
    pub(super) live: Arc<LiveObject>,
    /// What its turn starts from, read with the admission check.
    pub(super) view: TurnView,
    pub(super) job: ObjectJob,
    pub(super) bytes: usize,
    /// What a caller on this node waits on, if its reply had to be made a channel already.
    pub(super) waiting: Option<CallerWait>,
}

/// Why a message was not admitted, with its reply capability so the caller answers.
pub(super) struct NotAdmitted {
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
    /// Its sender's operation identity (0: a call made on this node).
    pub(super) operation: u64,
    /// The route's binding to the object, for a call made on this node.
    pub(super) bound: Option<&'a LocalBinding>,
    /// A session's relay: the binding it was sent under, which must be the Actor's
    /// current one, on the incarnation the fence names.
    pub(super) session: Option<crate::wire::SessionTail>,
}

/// A job a sealed (or just closed) mailbox refused, offered to the object's departure: a
/// move sealed it, or even handed it over, between the admission check and the queue.
/// `None`: the departure took it.
pub(super) fn to_departure(
    departures: &Departures,
    lost_sends: &LostSends,
    live: &LiveObject,
    fence: RouteFence,
    (job, bytes): (ObjectJob, usize),
    sender: Option<String>,
    hops: u8,
) -> Option<ObjectJob> {
    if departures.get(&live.key, &fence).is_none() {
        // Gone already: a cancelled move reopened the queue.
        return live.try_deliver(job, bytes).err().map(|(_, job)| job);
    }
    let mut held = super::follow::job_to_held(&live.object_type, job)?;
    held.sender = sender;
    held.hops = hops;
    match departures.offer(&live.key, &fence, held) {
        Offer::Taken => None,
        // The move was cancelled: the queue admits again (after what it held).
        Offer::NotDeparting(held) => {
            let (job, bytes) =
                super::follow::held_to_job(&live.key, &live.object_type, held, lost_sends)?;
            live.try_deliver(job, bytes).err().map(|(_, job)| job)
        }
    }
}

/// A message for an object that may be leaving this node, as its departure would hold it.
struct Leaving<'a> {
    departures: &'a Departures,
    registry: &'a ObjectRegistry,
    key: &'a ObjectKey,
    fence: RouteFence,
    packet: &'a str,
    kind: PacketKind,
    deadline: Option<Instant>,
    hops: u8,
    operation: u64,
    session: Option<crate::wire::SessionTail>,
}

/// A message's payload, metadata and reply, as they go on or come back.
type Carried = (Payload, Metadata, Option<ReplyTo>);

impl<'a> Leaving<'a> {
    /// `admission`'s message, for `core`'s departures.
    fn of(core: &'a ObjectCore, admission: &Admission<'a>) -> Self {
        Leaving {
            departures: &core.departures,
            registry: &core.registry,
            key: admission.key,
            fence: admission.fence,
            packet: admission.packet,
            kind: admission.kind,
            deadline: admission.deadline,
            hops: admission.hops,
            operation: admission.operation,
            session: admission.session,
        }
    }

    /// An object leaving this node: its hold (or, past relay-ready, its relay) takes the
    /// message, on the old route only. `None`: it did (a caller on this node then waits on
    /// the move's answer, in `waiting`); otherwise the message comes back. (Only a message
    /// for a departing object pays for the move's copy of its names.)
    fn offer(
        &self,
        waiting: &mut Option<CallerWait>,
        (payload, metadata, mut reply): Carried,
        sender: Option<String>,
    ) -> Option<Carried> {
        if waiting.is_none() {
            *waiting = ReplyTo::wait_for_caller(&mut reply);
        }
        let held = Held {
            packet: Arc::from(self.packet),
            kind: self.kind,
            payload,
            metadata,
            deadline: self.deadline,
            reply,
            sender,
            hops: self.hops,
            operation: self.operation,
        };
        match self.departures.offer(self.key, &self.fence, held) {
            Offer::Taken => None,
            Offer::NotDeparting(held) => Some((held.payload, held.metadata, held.reply)),
        }
    }

    /// A session's relay for an Actor that is leaving: its binding is checked here, on the
    /// node that still runs the Actor; past the hand-over it travels on as the move's.
    fn retired_relay(&self) -> bool {
        self.session.is_some_and(|tail| {
            self.registry.get(self.key).is_some_and(|live| {
                live.generation() != self.fence.object_generation || !live.bindings().admits(&tail)
            })
        })
    }
}

/// Checks the fence and the handler, and builds the job for an object this node owns.
/// On refusal the reply capability comes back with the error, so the caller answers
/// with the real reason.
#[allow(clippy::result_large_err)]
pub(super) fn prepare(
    core: &ObjectCore,
    admission: Admission<'_>,
) -> std::result::Result<Admitted, NotAdmitted> {
    let leaving = Leaving::of(core, &admission);
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
        operation,
        bound,
        session,
        ..
    } = admission;
    let mut waiting = None;
    let (payload, metadata, reply) = if core.departures.get(key, &fence).is_some() {
        if leaving.retired_relay() {
            let error = super::actor_binding::retired(key);
            return Err(NotAdmitted { error, reply });
        }
        let carried = (payload, metadata, reply);
        match leaving.offer(&mut waiting, carried, sender.clone()) {
            None => return Ok(Admitted::Taken { waiting }),
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
        return Ok(Admitted::Taken { waiting });
    }
    let (live, handler, view) = match check_admission(
        core.env.lease(),
        &core.registry,
        key,
        (packet, kind),
        fence,
        now,
        bound,
    ) {
        Ok(checked) => checked,
        // The object may have begun to leave between the two checks: its departure is
        // made before it stops taking messages, so it is there now and takes this one.
        Err(error) if core.departures.get(key, &fence).is_some() => {
            if leaving.retired_relay() {
                let error = super::actor_binding::retired(key);
                return Err(NotAdmitted { error, reply });
            }
            return match leaving.offer(&mut waiting, (payload, metadata, reply), sender) {
                None => Ok(Admitted::Taken { waiting }),
                Some((_, _, reply)) => Err(NotAdmitted { error, reply }),
            };
        }
        Err(error) => return Err(NotAdmitted { error, reply }),
    };
    if let Some(tail) = session {
        if view.generation != fence.object_generation || !live.bindings().admits(&tail) {
            let error = super::actor_binding::retired(key);
            return Err(NotAdmitted { error, reply });
        }
    }
    let mut message = HandlerMessage {
        handler,
        packet: live.object_type.packet_name(handler).unwrap_or_default(),
        payload,
        metadata,
        deadline,
        reply,
        operation,
        queued_at: core.env.turns().map(|_| std::time::Instant::now()),
    };
    // Payload plus metadata: both stay in memory until the handler ran.
    let bytes = match message.bytes() {
        Ok(bytes) => bytes,
        Err(error) => {
            let reply = message.reply;
            return Err(NotAdmitted { error, reply });
        }
    };
    let job = ObjectJob::Message(message);
    Ok(Admitted::Job(Prepared {
        live,
        view,
        job,
        bytes,
        waiting,
    }))
}

/// The owned object `key` and the handler position of `packet`, when the fence holds.
fn check_admission(
    lease: &OwnerLease,
    registry: &ObjectRegistry,
    key: &ObjectKey,
    (packet, kind): (&str, PacketKind),
    fence: RouteFence,
    now: Instant,
    bound: Option<&LocalBinding>,
) -> Result<(Arc<LiveObject>, usize, TurnView)> {
    let id = key;
    let stale = || {
        Error::refused(
            ErrorKind::Unavailable,
            crate::Refusal::StaleRoute,
            format!("this node does not own {id} {STALE_ROUTE}"),
        )
    };
    let mut leased = false;
    let mut admitted = |live: &LiveObject| {
        let mut view = None;
        lease.admits_at(now, |owner, generation| {
            leased = true;
            view = live.admits_viewing(&fence, owner, generation);
            view.is_some()
        });
        view
    };
    // The object the route found before, else the registry's (then bound to the route).
    let from_binding = bound
        .and_then(LocalBinding::get)
        .and_then(|live| admitted(&live).map(|view| (live, view)));
    let (live, view) = match from_binding {
        Some(found) => found,
        None => {
            let live = registry.get(id).ok_or_else(stale)?;
            match admitted(&live) {
                Some(view) => {
                    if let Some(bound) = bound {
                        bound.bind(&live);
                    }
                    (live, view)
                }
                None if leased => return Err(stale()),
                None => {
                    return Err(Error::new(
                        ErrorKind::Unavailable,
                        "the owner's lease admits no new work",
                    ))
                }
            }
        }
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
