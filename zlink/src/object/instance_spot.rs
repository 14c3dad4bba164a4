//! Instance Spots (seed 002 §4.3–4.4, reference §2.6): a Spot-direct call with Instance
//! intent to an ID that has no Spot activates one, and its message is the new Spot's first
//! handler call. The message is kept in the Relocation Store from before the reservation
//! until its handler has run (the recovery root), and the reservation names it (the
//! recovery pointer). Exactly one reservation wins; a caller that lost the race delivers
//! its message to the winner once, as any call. An Instance Spot that exists, Ready or
//! not, is never activated again: its owner's death makes calls `Unavailable`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::authority::AuthorityState;
use super::authority_store::Fenced;
use super::core::ObjectCore;
use super::creation::{candidates, settle_creating, try_create, FirstMessage};
use super::direct::{resolved_call, Activation};
use super::env::ObjectEnv;
use super::hosting::Hosting;
use super::live_object::LiveObject;
use super::lost_sends::LostReason;
use super::object_job::{HandlerMessage, ObjectJob, ReplyTo};
use super::object_type::TypeDef;
use super::owner_link::{node_stopping, ObjectCommand, OwnerLink};
use super::placement;
use super::registry::ObjectRegistry;
use super::settled_notice::creation_settled_on_owner;
use crate::address::{ObjectKey, ObjectKind, Outcome, SpotId, StableType};
use crate::call::BoxFuture;
use crate::call::PacketKind;
use crate::handle::ObjectMessage;
use crate::mesh::{InboundCall, InboundRoute};
use crate::store::PayloadRef;
use crate::wire::{cbor_decode_bounded, cbor_encode, Metadata, Payload};
use crate::{Error, ErrorKind, Result};

/// How long a recovery root outlives its call's deadline, at most.
const ROOT_RETENTION_MARGIN: Duration = Duration::from_secs(300);

/// How many times the recovery pointer's removal is tried when the store fails.
const POINTER_ATTEMPTS: usize = 4;

/// The first pause while another activation of the same ID settles; doubles up to 200 ms.
const SETTLE_BACKOFF: Duration = Duration::from_millis(10);

/// An activating message as the Relocation Store keeps it (the recovery root).
#[derive(Serialize, Deserialize)]
struct ActivationRoot {
    version: u8,
    stable_type: String,
    packet: String,
    request: bool,
    metadata: Vec<(String, String)>,
    #[serde(with = "serde_bytes")]
    payload: Vec<u8>,
}

/// The Instance Spot type an intent call that names none is for: the one distinct Instance
/// Spot type this node and its connected members serve (reference rule 14). Two or more
/// are `InvalidOperation`, none is `NotFound`.
pub(crate) fn sole_instance_type(env: &ObjectEnv, registry: &ObjectRegistry) -> Result<StableType> {
    let mut types: Vec<StableType> = registry.instance_spot_types().cloned().collect();
    if let Some(node) = env.node() {
        let members = node.discovery().map(|d| d.status().members);
        for member in members.unwrap_or_default() {
            if node.peers().link(&member.rid).is_none() {
                continue;
            }
            types.extend(
                member
                    .instance_spot_types
                    .iter()
                    .filter_map(|name| StableType::new(name).ok()),
            );
        }
    }
    types.sort();
    types.dedup();
    match types.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(Error::new(
            ErrorKind::NotFound,
            "Instance intent without a type: no ready node of the mesh serves an Instance Spot type",
        )),
        several => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "Instance intent without a type is ambiguous: the mesh serves {} Instance Spot types ({}); name one with `instance(type)`",
                several.len(),
                several.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

/// One activating message, kept whole until a reservation takes it.
struct Activating {
    key: ObjectKey,
    stable_type: StableType,
    packet: String,
    kind: PacketKind,
    payload: Bytes,
    metadata: Metadata,
    timeout: Duration,
    send_timeout: Duration,
    deadline: Instant,
}

/// `call` found no Spot, and carries Instance intent: activates one with `call` as its
/// first message, on a node serving the type (this one, or another through command 39).
/// A request completes with that handler's reply, under the call's one deadline; a
/// one-way completes once the activation is under way. (A boxed `Send` future, not an
/// `async fn`: the activation calls back into the direct call path.)
impl Activation for ObjectCore {
    fn activate<'a>(
        &'a self,
        call: ObjectMessage<'a>,
        deadline: Instant,
        missing: bool,
    ) -> BoxFuture<'a, Result<Payload>> {
        Box::pin(activate_now(self, call, deadline, missing))
    }
}

async fn activate_now(
    server: &ObjectCore,
    call: ObjectMessage<'_>,
    deadline: Instant,
    missing: bool,
) -> Result<Payload> {
    let server = server.arc().ok_or_else(node_stopping)?;
    let Some(intent) = call.intent.clone() else {
        return Err(Error::new(
            ErrorKind::InternalFailure,
            "an activation without Instance intent",
        ));
    };
    // A type this node serves is checked here, before anything goes out.
    if let Ok(object_type) = server
        .registry
        .object_type(ObjectKind::Spot, intent.as_str())
    {
        instance_handler(&object_type, call.packet, call.kind)?;
    }
    let activating = Activating {
        key: call.key.clone().into_owned(),
        stable_type: intent,
        packet: call.packet.to_string(),
        kind: call.kind,
        payload: call.payload.into_bytes()?,
        metadata: call.metadata,
        timeout: call.timeout,
        send_timeout: call.send_timeout,
        deadline,
    };
    place(&server, activating, call_shape(call.kind), missing).await
}

/// How a call waits on its activation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Waits {
    /// A request: until its handler's reply.
    ForReply,
    /// A one-way: until it is delivered to a Ready Spot, or its activation is under way
    /// (then how the activation ends is only logged, and counted if the message is lost).
    UntilUnderWay,
}

fn call_shape(kind: PacketKind) -> Waits {
    match kind {
        PacketKind::Request => Waits::ForReply,
        PacketKind::Send => Waits::UntilUnderWay,
    }
}

/// The handler of `packet` on the Instance Spot type `object_type`.
fn instance_handler(object_type: &TypeDef, packet: &str, kind: PacketKind) -> Result<usize> {
    if !object_type.instance {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{} is not an Instance Spot type", object_type.stable_type),
        ));
    }
    object_type.handler(packet, kind).ok_or_else(|| {
        Error::new(
            ErrorKind::NotFound,
            format!(
                "Spot type {} has no {kind:?} handler for {packet:?}",
                object_type.stable_type
            ),
        )
    })
}

/// On the caller's node: the message goes to the Spot once one is Ready, and while there
/// is none, to this node if it serves the type and has room, else to the node placement
/// picks among those serving it, which activates it. (`missing`: the caller has just read
/// the ID as Missing, so the first look is skipped.)
async fn place(
    server: &Arc<ObjectCore>,
    activating: Activating,
    waits: Waits,
    missing: bool,
) -> Result<Payload> {
    let key = &activating.key;
    let mut excluded: Vec<String> = Vec::new();
    let mut refusals: Vec<String> = Vec::new();
    let mut full = false;
    let mut backoff = SETTLE_BACKOFF;
    let mut known_missing = missing;
    loop {
        if Instant::now() >= activating.deadline {
            return Err(Error::new(
                ErrorKind::DeadlineExceeded,
                format!("{key} was not activated within the call's deadline"),
            ));
        }
        let current = match std::mem::take(&mut known_missing) {
            true => None,
            false => server
                .env
                .authority()
                .read(key)
                .await
                .map_err(Error::from)?,
        };
        if let Some(current) = &current {
            if super::creation::owner_lost_and_reclaimed(&server.env, key, current).await? {
                continue;
            }
        }
        match current {
            Some(current) if current.record.state == AuthorityState::Ready => {
                return deliver(server, &activating).await;
            }
            // An activation is under way: a one-way joins it without its caller.
            Some(_) if waits == Waits::UntilUnderWay => return under_way(server, activating),
            Some(current) => {
                settle(server, &current, &activating, &mut backoff).await?;
                continue;
            }
            None => {}
        }
        let candidates = candidates(server, ObjectKind::Spot, activating.stable_type.as_str());
        let Some(target) = placement::prefer_local(&candidates, &excluded).cloned() else {
            return Err(if full {
                Error::new(
                    ErrorKind::CapacityExceeded,
                    format!(
                        "every node serving Instance Spot type {} is at its limit",
                        activating.stable_type
                    ),
                )
            } else {
                Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "there is no {key}, and no ready node serves Instance Spot type {} to activate it{}",
                        activating.stable_type,
                        if refusals.is_empty() { String::new() } else { format!(" ({})", refusals.join("; ")) }
                    ),
                )
            });
        };
        if waits == Waits::UntilUnderWay {
            return under_way(server, activating);
        }
        let attempt = if target.local {
            activate_here(server, &activating).await
        } else {
            send_activation(server.env.owner_link(), &activating, &target.rid).await
        };
        match attempt {
            Err(e) if e.is(ErrorKind::CapacityExceeded) => {
                full = true;
                excluded.push(target.rid);
            }
            Err(e) if !target.local && e.is(ErrorKind::NotFound) => {
                refusals.push(format!("{}: {e}", target.rid));
                excluded.push(target.rid);
            }
            result => return result,
        }
    }
}

/// A one-way whose activation is under way completes: the rest (the activation, or the
/// delivery to the Spot another caller's activation makes) goes on without its caller,
/// under the node's request timeout rather than the one-way's send timeout. A failure
/// from here on is logged and counted (`lost_one_ways.activation_failed`).
fn under_way(server: &Arc<ObjectCore>, mut activating: Activating) -> Result<Payload> {
    let request_timeout = server.env.owner_link().node()?.settings().request_timeout;
    activating.timeout = activating.timeout.max(request_timeout);
    activating.deadline = activating.deadline.max(Instant::now() + request_timeout);
    let task = server.clone();
    server.env.tracker().spawn(async move {
        let (key, packet) = (activating.key.clone(), activating.packet.clone());
        if let Err(e) = place_in_background(task.clone(), activating).await {
            task.env
                .lost_sends()
                .record(&key, &packet, LostReason::ActivationFailed, &e);
        }
    });
    Ok(Payload::default())
}

/// A one-way's placement after its caller was answered (boxed: `place` starts it).
fn place_in_background(
    server: Arc<ObjectCore>,
    activating: Activating,
) -> BoxFuture<'static, Result<Payload>> {
    Box::pin(async move { place(&server, activating, Waits::ForReply, false).await })
}

/// The message as a plain call to the Spot that is Ready now.
async fn deliver(server: &Arc<ObjectCore>, activating: &Activating) -> Result<Payload> {
    resolved_call(
        server,
        call_of(activating),
        Instant::now(),
        activating.deadline,
        None,
        None,
    )
    .await
}

/// Another activation is under way (or the Spot closes): one its crashed owner left is
/// cancelled (and the caller reads again at once); otherwise the caller waits for it, on
/// this node's notification when the activation runs here, on its owner's answer (command
/// 53) when it runs on another node, else a little (a bounded, doubling pause), before it
/// reads the authority again.
async fn settle(
    server: &Arc<ObjectCore>,
    current: &super::authority_store::Versioned,
    activating: &Activating,
    backoff: &mut Duration,
) -> Result<()> {
    if settle_creating(
        &server.env,
        &server.registry,
        &server.hosting,
        &activating.key,
        current,
    )
    .await?
    {
        return Ok(());
    }
    let pause_until = Instant::now()
        + (*backoff).min(
            activating
                .deadline
                .saturating_duration_since(Instant::now()),
        );
    if current.record.state == AuthorityState::Creating {
        if current.record.route == *server.env.route() {
            // Woken when the activation here ends.
            server
                .registry
                .creation_settled(&activating.key, pause_until)
                .await;
        } else if creation_settled_on_owner(server, &activating.key, current, activating.deadline)
            .await
        {
            // The owner's creation ended: read again now.
            return Ok(());
        } else {
            tokio::time::sleep_until(pause_until).await;
        }
    } else {
        tokio::time::sleep_until(pause_until).await;
    }
    *backoff = (*backoff * 2).min(Duration::from_millis(200));
    Ok(())
}

/// On the node that activates: the Spot is reserved and made here, or the message goes to
/// the one another activation made. The caller found the ID Missing just before, so the
/// first attempt reserves without reading it again (the reservation is conditioned on its
/// absence: a Spot made meanwhile makes it lose, and then the authority is read).
async fn activate_here(server: &Arc<ObjectCore>, activating: &Activating) -> Result<Payload> {
    let mut backoff = SETTLE_BACKOFF;
    if let Some(result) = reserve_and_run(server, activating).await? {
        return result;
    }
    loop {
        if Instant::now() >= activating.deadline {
            return Err(Error::new(
                ErrorKind::DeadlineExceeded,
                format!(
                    "{} was not activated within the call's deadline",
                    activating.key
                ),
            ));
        }
        let current = server
            .env
            .authority()
            .read(&activating.key)
            .await
            .map_err(Error::from)?;
        match current {
            Some(current) if current.record.state == AuthorityState::Ready => {
                return deliver(server, activating).await;
            }
            Some(current) => settle(server, &current, activating, &mut backoff).await?,
            None => {
                if let Some(result) = reserve_and_run(server, activating).await? {
                    return result;
                }
            }
        }
    }
}

/// Command 39 to `rid`, which activates the Spot there (or delivers to the one that is).
async fn send_activation(out: &OwnerLink, activating: &Activating, rid: &str) -> Result<Payload> {
    let admit_by = activating
        .deadline
        .min(Instant::now() + activating.send_timeout);
    let link = out.peer(rid, admit_by).await.map_err(|e| {
        Error::new(
            ErrorKind::Unavailable,
            format!(
                "node {rid}, picked to activate {}, is not reachable: {e}",
                activating.key
            ),
        )
    })?;
    let envelope = cbor_encode(&envelope_of(activating))?;
    let command =
        ObjectCommand::activation(&activating.key, activating.stable_type.as_str(), envelope);
    out.request(&link, &command, activating.deadline, admit_by)
        .await
        .map(Payload::encoded)
}

/// The record a root and an envelope hold.
fn envelope_of(activating: &Activating) -> ActivationRoot {
    ActivationRoot {
        version: 1,
        stable_type: activating.stable_type.as_str().to_string(),
        packet: activating.packet.clone(),
        request: activating.kind == PacketKind::Request,
        metadata: activating
            .metadata
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        payload: activating.payload.to_vec(),
    }
}

/// The inbound route of command 39: this node activates the Spot the envelope names (or
/// delivers to the one that is), and answers with the first message's result.
pub(crate) struct ActivationRoute(pub(crate) std::sync::Weak<ObjectCore>);

impl InboundRoute for ActivationRoute {
    fn deliver(&self, call: InboundCall) {
        let Some(server) = self.0.upgrade() else {
            return call.answer(Err(node_stopping()));
        };
        let message = call.message();
        let deadline = call
            .deadline()
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(30));
        let activating = (|| {
            let id = SpotId::chosen(message.head.target.as_str())
                .map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
            let envelope: ActivationRoot = cbor_decode_bounded(&message.payload).map_err(|e| {
                Error::new(
                    ErrorKind::ProtocolError,
                    format!("activation envelope: {e}"),
                )
            })?;
            if envelope.version != 1 || envelope.stable_type != message.head.packet.as_str() {
                return Err(Error::new(
                    ErrorKind::ProtocolError,
                    "an activation envelope of another version or type than its head",
                ));
            }
            let stable_type = StableType::new(&envelope.stable_type)
                .map_err(|e| Error::new(ErrorKind::ProtocolError, e.to_string()))?;
            let mut metadata = Metadata::new();
            for (k, v) in envelope.metadata {
                metadata.insert(k, v)?;
            }
            let settings = server.env.owner_link().node()?.settings().clone();
            Ok(Activating {
                key: ObjectKey::from(&id),
                stable_type,
                packet: envelope.packet,
                kind: if envelope.request {
                    PacketKind::Request
                } else {
                    PacketKind::Send
                },
                payload: Bytes::from(envelope.payload),
                metadata,
                timeout: deadline.saturating_duration_since(Instant::now()),
                send_timeout: settings.send_timeout,
                deadline,
            })
        })();
        let activating = match activating {
            Ok(activating) => activating,
            Err(e) => return call.answer(Err(e)),
        };
        call.run(move |_message| {
            Box::pin(async move {
                let object_type = server
                    .registry
                    .object_type(ObjectKind::Spot, activating.stable_type.as_str())?;
                instance_handler(&object_type, &activating.packet, activating.kind)?;
                activate_here(&server, &activating).await?.into_bytes()
            })
        });
    }
}

/// One activation attempt here: the root, then the reservation with the message queued
/// first. `None` when another reservation won, or when another caller on this node was
/// activating the same Spot (woken once that ended): the caller reads the authority again.
async fn reserve_and_run(
    server: &Arc<ObjectCore>,
    activating: &Activating,
) -> Result<Option<Result<Payload>>> {
    let key = &activating.key;
    let Some(leading) = server.registry.lead_activation(key) else {
        server
            .registry
            .creation_settled(key, activating.deadline)
            .await;
        return Ok(None);
    };
    let object_type = server
        .registry
        .object_type(ObjectKind::Spot, activating.stable_type.as_str())?;
    let handler = instance_handler(&object_type, &activating.packet, activating.kind)?;
    let store = server
        .hosting
        .required_relocation_store("keep an Instance Spot's activating message")?
        .clone();
    let root = format!("zlink:activation:{}", super::id_uuid_v4());
    let reference = PayloadRef::new(root.clone()).map_err(Error::from)?;
    let record = envelope_of(activating);
    let retention = activating
        .deadline
        .saturating_duration_since(Instant::now())
        + ROOT_RETENTION_MARGIN;
    store
        .put(&reference, &cbor_encode(&record)?, retention)
        .await
        .map_err(Error::from)?;
    if server.faults.holds_activation_after_root() {
        tracing::debug!(object = %key, "an activation held after its root (test fault)");
        server.env.cancel().cancelled().await;
        return Err(node_stopping());
    }
    let (answered, answer) = oneshot::channel();
    let bytes = activating.payload.len()
        + activating
            .metadata
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>();
    let first = FirstMessage {
        job: ObjectJob::Message(HandlerMessage {
            handler,
            packet: object_type.packet_name(handler).unwrap_or_default(),
            payload: Payload::encoded(activating.payload.clone()),
            metadata: activating.metadata.clone(),
            deadline: Some(activating.deadline),
            reply: Some(ReplyTo::Local(answered)),
            operation: 0,
            queued_at: None,
        }),
        bytes,
        root: root.clone(),
    };
    let created = try_create(
        server,
        key,
        &Bytes::new(),
        activating.stable_type.as_str(),
        activating.deadline,
        Some(first),
    )
    .await;
    drop(leading);
    match created {
        Ok(Some(Outcome::Created(..))) => {}
        Ok(Some(Outcome::Existing(_) | Outcome::Rejected(_))) | Ok(None) => {
            forget_root(&server.env, store, reference);
            return Ok(None);
        }
        Err(e) => {
            forget_root(&server.env, store, reference);
            return Err(e);
        }
    }
    // The recovery pointer and its root go right after the first handler ran, in the
    // Spot's own turn (see `first_message_ran`).
    let result = match tokio::time::timeout_at(activating.deadline, answer).await {
        Ok(Ok(result)) => result,
        // Closed (or its node stopped) before the first handler ran: the activation is
        // incomplete, so its pointer stays for the next intent call to settle.
        Ok(Err(_)) => Err(Error::new(
            ErrorKind::Unavailable,
            format!("{key} closed before its first message ran"),
        )),
        Err(_) => Err(Error::new(
            ErrorKind::DeadlineExceeded,
            format!("{key}'s first message did not finish within the call's deadline"),
        )),
    };
    Ok(Some(result))
}

/// The activating message of `live` has run (its handler returned): its recovery pointer
/// is cleared, then its root removed. Called by the Spot's turn loop between that turn
/// and the next job, so no move can seal the Spot in between: a move is fenced on the
/// authority it seals, and that is the one without the pointer. A move that sealed the
/// Spot before its first message ran carries the message along, and the owner change
/// drops the pointer (activation recovery never applies to a moved Spot). A store that
/// fails leaves the pointer; it is harmless: a pointer in a Ready record never selects
/// another node, so a dead owner's Spot stays `Unavailable` (seed 002 §10 item 11).
pub(super) async fn first_message_ran(env: &ObjectEnv, hosting: &Hosting, live: &LiveObject) {
    if env.is_stopping() {
        return;
    }
    let key = &live.key;
    let mut pause = Duration::from_millis(20);
    for _ in 0..POINTER_ATTEMPTS {
        let current = live.authority();
        let Some(root) = current.record.activation.clone() else {
            return;
        };
        match env.authority().clear_activation(key, &current).await {
            Ok(Fenced::Done(cleared)) => {
                live.set_authority(cleared);
                if let (Some(store), Ok(reference)) =
                    (hosting.relocation_store().cloned(), PayloadRef::new(root))
                {
                    forget_root(env, store, reference);
                }
                return;
            }
            Ok(Fenced::Moved) => {
                tracing::debug!(object = %key, "the recovery pointer's record changed meanwhile");
                return;
            }
            Err(e) => {
                tracing::warn!(object = %key, error = %e, "an Instance Spot's recovery pointer was not cleared; trying again");
            }
        }
        tokio::time::sleep(pause).await;
        pause *= 2;
    }
    tracing::warn!(object = %key, "an Instance Spot's recovery pointer stays (the store failed)");
}

/// A root no reservation took is removed in the background.
fn forget_root(
    env: &ObjectEnv,
    store: Arc<dyn crate::store::RelocationStore>,
    reference: PayloadRef,
) {
    env.tracker().spawn(async move {
        let _ = store.delete(&reference).await;
    });
}

/// The message again, as a plain call to the Spot another activation made.
fn call_of(activating: &Activating) -> ObjectMessage<'_> {
    ObjectMessage {
        key: std::borrow::Cow::Borrowed(&activating.key),
        packet: &activating.packet,
        payload: Payload::encoded(activating.payload.clone()),
        metadata: activating.metadata.clone(),
        kind: activating.kind,
        timeout: activating.timeout,
        send_timeout: activating.send_timeout,
        intent: Some(activating.stable_type.clone()),
    }
}
