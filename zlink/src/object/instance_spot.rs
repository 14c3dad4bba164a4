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

use super::authority::{AuthorityState, ObjectShape};
use super::authority_store::Fenced;
use super::creation::{settle_creating, try_create, FirstMessage};
use super::direct::{resolved_call, ObjectCall};
use super::object_job::{ObjectJob, ReplyTo};
use super::owner_link::node_stopping;
use super::route_cache::ReadyRoute;
use super::server::{store_error, ObjectServer};
use crate::address::{ObjectKey, ObjectKind, Outcome, StableType};
use crate::call::BoxFuture;
use crate::handler::PacketKind;
use crate::store::PayloadRef;
use crate::wire::{cbor_encode, Metadata, Payload};
use crate::{Error, ErrorKind, Result};

/// How long a recovery root outlives its call's deadline, at most.
const ROOT_RETENTION_MARGIN: Duration = Duration::from_secs(300);

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

/// A call with Instance intent that found a Spot: it must be an Instance Spot of the
/// intended type.
pub(super) fn check_intent(route: &ReadyRoute, intent: &StableType) -> Result<()> {
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

/// One activating message, kept whole until a reservation takes it.
struct Activating {
    key: ObjectKey,
    stable_type: StableType,
    handler: usize,
    packet: &'static str,
    kind: PacketKind,
    payload: Bytes,
    metadata: Metadata,
    timeout: Duration,
    send_timeout: Duration,
    deadline: Instant,
}

/// `call` found no Spot, and carries Instance intent: activates one with `call` as its
/// first message. A request completes with that handler's reply, under the call's one
/// deadline; a one-way completes once the activation is under way. (A boxed `Send`
/// future, not an `async fn`: the activation calls back into the direct call path.)
pub(super) fn activate<'a>(
    server: &'a ObjectServer,
    call: ObjectCall<'a>,
    deadline: Instant,
) -> BoxFuture<'a, Result<Payload>> {
    Box::pin(activate_now(server, call, deadline))
}

async fn activate_now(
    server: &ObjectServer,
    call: ObjectCall<'_>,
    deadline: Instant,
) -> Result<Payload> {
    let server = server.arc().ok_or_else(node_stopping)?;
    let Some(intent) = call.intent.clone() else {
        return Err(Error::new(
            ErrorKind::InternalFailure,
            "an activation without Instance intent",
        ));
    };
    let object_type = server
        .registry
        .object_type(ObjectKind::Spot, intent.as_str())
        .map_err(|_| {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "there is no {}, and this node does not serve Instance Spot type {intent} to activate it (an intent call activates on its own node)",
                    call.key
                ),
            )
        })?;
    if !object_type.instance {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{intent} is not an Instance Spot type"),
        ));
    }
    let handler = object_type.handler(call.packet, call.kind).ok_or_else(|| {
        Error::new(
            ErrorKind::NotFound,
            format!(
                "Spot type {intent} has no {:?} handler for {:?}",
                call.kind, call.packet
            ),
        )
    })?;
    server
        .relocations
        .required_store("keep an Instance Spot's activating message")?;
    let activating = Activating {
        key: call.key.clone(),
        stable_type: intent,
        handler,
        packet: object_type.packet_name(handler).unwrap_or_default(),
        kind: call.kind,
        payload: call.payload.into_bytes()?,
        metadata: call.metadata,
        timeout: call.timeout,
        send_timeout: call.send_timeout,
        deadline,
    };
    if call.kind == PacketKind::Request {
        return run(&server, activating).await;
    }
    // A one-way is done once its activation is under way; how it ends is only logged.
    let task = server.clone();
    server.env.tracker().spawn(async move {
        let key = activating.key.clone();
        if let Err(e) = run(&task, activating).await {
            tracing::warn!(object = %key, error = %e, "a one-way that activates an Instance Spot was lost");
        }
    });
    Ok(Payload::default())
}

/// Activates `activating.key`, or delivers to the Spot another activation made.
async fn run(server: &Arc<ObjectServer>, activating: Activating) -> Result<Payload> {
    let key = &activating.key;
    let mut backoff = SETTLE_BACKOFF;
    loop {
        if Instant::now() >= activating.deadline {
            return Err(Error::new(
                ErrorKind::DeadlineExceeded,
                format!("{key} was not activated within the call's deadline"),
            ));
        }
        let current = server
            .env
            .authority()
            .read(key)
            .await
            .map_err(store_error)?;
        match current {
            Some(current) if current.record.state == AuthorityState::Ready => {
                // Another activation won: the message goes to its Spot once, as any call.
                return resolved_call(
                    server,
                    call_of(&activating),
                    Instant::now(),
                    activating.deadline,
                    None,
                )
                .await;
            }
            Some(current) => {
                if current.record.state == AuthorityState::Creating {
                    settle_creating(server, key, &current).await?;
                }
                let pause = backoff.min(
                    activating
                        .deadline
                        .saturating_duration_since(Instant::now()),
                );
                tokio::time::sleep(pause).await;
                backoff = (backoff * 2).min(Duration::from_millis(200));
            }
            None => {
                if let Some(result) = reserve_and_run(server, &activating).await? {
                    return result;
                }
            }
        }
    }
}

/// One activation attempt here: the root, then the reservation with the message queued
/// first. `None` when another reservation won (the caller reads the authority again).
async fn reserve_and_run(
    server: &Arc<ObjectServer>,
    activating: &Activating,
) -> Result<Option<Result<Payload>>> {
    let key = &activating.key;
    let store = server
        .relocations
        .required_store("keep an Instance Spot's activating message")?
        .clone();
    let root = format!("zlink:activation:{}", super::id_uuid_v4());
    let reference = PayloadRef::new(root.clone()).map_err(store_error)?;
    let record = ActivationRoot {
        version: 1,
        stable_type: activating.stable_type.as_str().to_string(),
        packet: activating.packet.to_string(),
        request: activating.kind == PacketKind::Request,
        metadata: activating
            .metadata
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        payload: activating.payload.to_vec(),
    };
    let retention = activating
        .deadline
        .saturating_duration_since(Instant::now())
        + ROOT_RETENTION_MARGIN;
    store
        .put(&reference, &cbor_encode(&record)?, retention)
        .await
        .map_err(store_error)?;
    let (answered, answer) = oneshot::channel();
    let bytes = activating.payload.len()
        + activating
            .metadata
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>();
    let first = FirstMessage {
        job: ObjectJob::Message {
            handler: activating.handler,
            packet: activating.packet,
            payload: Payload::encoded(activating.payload.clone()),
            metadata: activating.metadata.clone(),
            deadline: Some(activating.deadline),
            reply: Some(ReplyTo::Local(answered)),
        },
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
    match created {
        Ok(Some(Outcome::Created(..))) => {}
        Ok(Some(Outcome::Existing(_) | Outcome::Rejected(_))) | Ok(None) => {
            forget_root(server, store, reference);
            return Ok(None);
        }
        Err(e) => {
            forget_root(server, store, reference);
            return Err(e);
        }
    }
    let result = match tokio::time::timeout_at(activating.deadline, answer).await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err(Error::new(
            ErrorKind::Unavailable,
            format!("{key} closed before its first message ran"),
        )),
        Err(_) => Err(Error::new(
            ErrorKind::DeadlineExceeded,
            format!("{key}'s first message did not finish within the call's deadline"),
        )),
    };
    // The handler ran (or the caller stopped waiting): the pointer and its root go once
    // the handler's result is in, never before.
    let server = server.clone();
    let key = key.clone();
    server.clone().env.tracker().spawn(async move {
        clear_pointer(&server, &key, &root).await;
        let _ = store.delete(&reference).await;
    });
    Ok(Some(result))
}

/// Removes `key`'s recovery pointer `root` once its first handler has run.
async fn clear_pointer(server: &ObjectServer, key: &ObjectKey, root: &str) {
    let Some(live) = server.registry.get(key) else {
        return;
    };
    // The first handler's turn is over once the queue took the next job or went idle;
    // its result went to the caller already.
    let current = live.authority();
    if current.record.activation.as_deref() != Some(root) {
        return;
    }
    match server.env.authority().clear_activation(key, &current).await {
        Ok(Fenced::Done(cleared)) => live.set_authority(cleared),
        Ok(Fenced::Moved) => {
            tracing::debug!(object = %key, "the recovery pointer's record changed meanwhile")
        }
        Err(e) => {
            tracing::warn!(object = %key, error = %e, "an Instance Spot's recovery pointer stays (the store failed)")
        }
    }
}

/// A root no reservation took is removed in the background.
fn forget_root(
    server: &ObjectServer,
    store: Arc<dyn crate::store::RelocationStore>,
    reference: PayloadRef,
) {
    server.env.tracker().spawn(async move {
        let _ = store.delete(&reference).await;
    });
}

/// The message again, as a plain call to the Spot another activation made.
fn call_of(activating: &Activating) -> ObjectCall<'_> {
    ObjectCall {
        key: &activating.key,
        packet: activating.packet,
        payload: Payload::encoded(activating.payload.clone()),
        metadata: activating.metadata.clone(),
        kind: activating.kind,
        timeout: activating.timeout,
        send_timeout: activating.send_timeout,
        intent: Some(activating.stable_type.clone()),
    }
}
