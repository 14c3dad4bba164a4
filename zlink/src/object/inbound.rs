//! The object commands a node receives: creations placed on it (47, 49), closes of its
//! Spots and destroys of its Actors (48, 27), and messages for them (21, 22, 24, 25).

use std::sync::{Arc, Weak};

use bytes::Bytes;
use tokio_util::task::TaskTracker;

use super::admission::{Admission, Admitted, NotAdmitted, Prepared};
use super::core::ObjectCore;
use super::hosting::Hosting;
use super::live_object::LiveObject;
use super::lost_sends::LostReason;
use super::mailbox::Refused;
use super::object_job::{ObjectJob, Recorded, ReplyTo};
use super::remote::{decode_generation, CreateReply, CreateRequest};
use crate::address::Outcome;
use crate::address::{ActorId, ObjectKey, SpotId};
use crate::call::PacketKind;
use crate::mesh::{InboundCall, InboundRoute};
use crate::wire::{Command, RouteFence};
use crate::{Error, ErrorKind};

/// The inbound route of object commands, held weakly so the node's dispatcher does not
/// keep the object layer alive after shutdown.
pub(super) struct ObjectRoute(pub(super) Weak<ObjectCore>);

impl InboundRoute for ObjectRoute {
    fn deliver(&self, call: InboundCall) {
        match self.0.upgrade() {
            Some(server) => deliver_inbound(&server, call),
            None => call.answer(Err(Error::new(
                ErrorKind::ShuttingDown,
                "the node is stopping",
            ))),
        }
    }
}

/// An admitted object command from a peer.
fn deliver_inbound(server: &Arc<ObjectCore>, call: InboundCall) {
    match call.message().command {
        Command::SpotCreate | Command::ActorCreate => create_inbound(server, call),
        Command::SpotClose | Command::ActorDestroy => close_inbound(server, call),
        _ => message_inbound(server, call),
    }
}

/// A creation placed on this node: one attempt, whose outcome goes back.
fn create_inbound(server: &Arc<ObjectCore>, call: InboundCall) {
    let message = call.message();
    let target = message.head.target.as_str();
    // The creator's bad ID is a refused operation here, not this node's argument error.
    let key = match message.command {
        Command::ActorCreate => ActorId::new(target).map(|id| ObjectKey::from(&id)),
        _ => SpotId::chosen(target).map(|id| ObjectKey::from(&id)),
    };
    let parsed = key
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))
        .and_then(|key| Ok((key, CreateRequest::decode(&message.payload)?)));
    let (key, request) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return call.answer(Err(e)),
    };
    let stable_type = message.head.packet.as_str().to_string();
    let server = server.clone();
    // The creator stops waiting at its deadline; the attempt itself settles regardless.
    let wait_until = call
        .deadline()
        .unwrap_or_else(|| tokio::time::Instant::now() + std::time::Duration::from_secs(30));
    call.run(move |_message| {
        Box::pin(async move {
            let request = Bytes::from(request.request);
            let outcome = super::creation::try_create(
                &server,
                &key,
                &request,
                &stable_type,
                wait_until,
                None,
            )
            .await?;
            match outcome {
                Some(Outcome::Created(location, reply)) => CreateReply::Created {
                    generation: location.generation,
                    reply: reply.to_vec(),
                },
                Some(Outcome::Rejected(reply)) => CreateReply::Rejected {
                    reply: reply.to_vec(),
                },
                Some(Outcome::Existing(_)) | None => CreateReply::Lost,
            }
            .encode()
        })
    });
}

/// The object a fenced command names, and its route fence.
fn addressed(call: &InboundCall) -> Option<(ObjectKey, RouteFence)> {
    let message = call.message();
    let target = message.head.target.as_str();
    let key = match message.command {
        Command::ActorSend | Command::ActorRequest | Command::ActorDestroy => {
            ObjectKey::from(&ActorId::new(target).ok()?)
        }
        _ => ObjectKey::from(&SpotId::new(target).ok()?),
    };
    Some((key, message.head.fence?))
}

fn not_addressed() -> Error {
    Error::new(
        ErrorKind::ProtocolError,
        "an object command without a valid ID and route fence",
    )
}

/// A close of a Spot (or destroy of an Actor) this node owns, fenced like a message.
fn close_inbound(server: &Arc<ObjectCore>, call: InboundCall) {
    let Some((key, fence)) = addressed(&call) else {
        return call.answer(Err(not_addressed()));
    };
    let message = call.message();
    let generation = match decode_generation(&message.payload) {
        Ok(generation) => generation,
        Err(e) => return call.answer(Err(e)),
    };
    let owned = server.registry.get(&key);
    let token = server.env.lease().admitting_token();
    let admitted = match (owned, token) {
        (Some(live), Some(token)) => live.admits(&fence, &token),
        _ => false,
    };
    if !admitted {
        return call.answer(Err(Error::refused(
            ErrorKind::Unavailable,
            crate::Refusal::StaleRoute,
            format!(
                "this node does not own {key} {}",
                super::owner_link::STALE_ROUTE
            ),
        )));
    }
    let server = server.clone();
    call.run(move |_message| {
        Box::pin(async move {
            crate::wire::cbor_encode(
                &super::closing::close_as_asked(&server, &key, generation).await?,
            )
        })
    });
}

/// A message for a Spot or Actor this node owns.
fn message_inbound(server: &ObjectCore, call: InboundCall) {
    let Some((key, fence)) = addressed(&call) else {
        return call.answer(Err(not_addressed()));
    };
    let message = call.message();
    let kind = if call.is_request() {
        PacketKind::Request
    } else {
        PacketKind::Send
    };
    let (packet, payload, mut metadata, deadline, hops, operation) = (
        message.head.packet.clone(),
        message.payload.clone(),
        message.metadata.clone(),
        call.deadline(),
        message.head.hops,
        message.head.operation,
    );
    let sender = call.from().rid().to_string();
    let session = message.head.session;
    let reply = reply_of(&server.hosting, server.env.tracker(), call, &mut metadata);
    let prepared = super::admission::prepare(
        server,
        Admission {
            key: &key,
            packet: packet.as_str(),
            payload: payload.into(),
            metadata,
            kind,
            fence,
            now: tokio::time::Instant::now(),
            deadline,
            reply: Some(reply),
            sender: Some(sender.clone()),
            hops,
            operation,
            bound: None,
            session,
        },
    );
    let Prepared {
        live, job, bytes, ..
    } = match prepared {
        Ok(Admitted::Job(prepared)) => prepared,
        // Held or relayed for an object leaving this node.
        Ok(Admitted::Taken { .. }) => return,
        Err(NotAdmitted { error, reply }) => {
            if kind == PacketKind::Send {
                let reason = match error.kind() {
                    Some(ErrorKind::NotFound) => LostReason::NoHandler,
                    _ => LostReason::NotOwner,
                };
                server
                    .env
                    .lost_sends()
                    .record(&key, packet.as_str(), reason, &error);
            }
            if let Some(reply) = reply {
                reply.send(Err(error));
            }
            return;
        }
    };
    // Read path: never wait for room. A full remote queue is Unavailable to the caller
    // (digest §3.3), which is what a refused job answers.
    if let Err((refused, job)) = live.try_deliver(job, bytes) {
        let from = (sender, hops);
        let job = (job, bytes);
        refused_inbound(
            server,
            &live,
            (&key, fence),
            packet.as_str(),
            kind,
            from,
            job,
            refused,
        );
    }
}

/// Where the reply to `call` goes: straight back (the Spot's own task answers, so no
/// task waits here for the turn), or, for a request relayed from the object's old owner,
/// recorded as it leaves (its relay ID is taken out of `metadata`: the framework's key
/// never reaches the handler).
fn reply_of(
    hosting: &Hosting,
    tracker: &TaskTracker,
    call: InboundCall,
    metadata: &mut crate::wire::Metadata,
) -> ReplyTo {
    let relay_id = metadata.remove(super::follow::RELAY_ID_KEY);
    let relayed = call.message().head.hops > 0 && call.is_request();
    let recorder = match (relay_id, hosting.relocation_store()) {
        (Some(id), Some(store)) if relayed => {
            super::follow::Recorder::new(store.clone(), &id, call.deadline(), tracker.clone()).ok()
        }
        _ => None,
    };
    let pending = call.into_pending();
    match recorder {
        Some(recorder) => ReplyTo::Recorded(Box::new(Recorded {
            pending,
            recorder: Box::new(recorder),
        })),
        None => ReplyTo::Remote(pending),
    }
}

/// A message `live`'s queue `refused`: a sealed or closed object's departure takes it if
/// it can; otherwise it is refused `Unavailable` (a one-way counted lost).
#[allow(clippy::too_many_arguments)]
fn refused_inbound(
    server: &ObjectCore,
    live: &LiveObject,
    (key, fence): (&ObjectKey, RouteFence),
    packet: &str,
    kind: PacketKind,
    (sender, hops): (String, u8),
    (job, bytes): (ObjectJob, usize),
    refused: Refused,
) {
    let job = match refused {
        // Sealed for a move, or closed by one that just handed the object over: the
        // move's hold or relay takes it.
        Refused::Sealed | Refused::Closed => {
            match super::admission::to_departure(
                &server.departures,
                server.env.lost_sends(),
                live,
                fence,
                (job, bytes),
                Some(sender),
                hops,
            ) {
                Some(job) => job,
                None => return,
            }
        }
        _ => job,
    };
    let error = Error::new(
        ErrorKind::Unavailable,
        match refused {
            Refused::Full(_) => format!("{key}'s queue is full"),
            Refused::Sealed | Refused::Closed => format!("{key} is closing"),
        },
    );
    if kind == PacketKind::Send {
        let reason = match refused {
            Refused::Full(_) => LostReason::Full,
            Refused::Sealed | Refused::Closed => LostReason::Stopped,
        };
        server.env.lost_sends().record(key, packet, reason, &error);
    }
    job.refuse(error);
}
