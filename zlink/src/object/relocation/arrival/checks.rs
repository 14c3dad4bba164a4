//! What an arriving object must pass before anything is built for it: the checks of the
//! restore, its type and authority here, and a Join's admission by its Spot.

use std::sync::Arc;

use bytes::Bytes;

use super::{ready_of, Joining};
use crate::address::{ActorId, ObjectKey, ObjectKind, SpotId};
use crate::address::{ActorRef, Location};
use crate::object::authority::{Authority, AuthorityState, ObjectShape, OwnerFence};
use crate::object::env::ObjectEnv;
use crate::object::lifecycle::Relocation;
use crate::object::membership::JoinDecision;
use crate::object::object_type::TypeDef;
use crate::object::registry::ObjectRegistry;
use crate::object::relocation::record::{JoinIntent, MovedObject, RestoreRecord, RestoreReply};
use crate::object::relocation::Moving;
use crate::{Error, ErrorKind, Result};

pub(super) enum JoinAdmission {
    Yes(Joining),
    Declined(Bytes),
}

/// Runs the Join's admission on its Spot here: the Spot must run here and take Actors of
/// this type; `on_actor_join` decides (an Entry Spot admits every Actor).
pub(super) async fn admit_join(
    server: &Moving,
    key: &ObjectKey,
    record: &RestoreRecord,
    intent: &JoinIntent,
    object_type: &TypeDef,
) -> Result<JoinAdmission> {
    let spot = SpotId::new(&intent.spot).map_err(|e| {
        Error::new(
            ErrorKind::ProtocolError,
            format!("a Join to a bad Spot ID: {e}"),
        )
    })?;
    let target = server
        .registry
        .get(&ObjectKey::from(&spot))
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Unavailable,
                format!("Spot {spot} is not running here"),
            )
        })?;
    let actor_id =
        ActorId::new(&key.id).map_err(|e| Error::new(ErrorKind::ProtocolError, e.to_string()))?;
    let actor = ActorRef::at(
        actor_id,
        Location {
            generation: record.object.source_fence.object_generation,
            mesh_name: server.env.route().mesh_name.clone(),
            rid: server.env.route().rid.clone(),
        },
    );
    let reply = if target.is_entry() {
        Bytes::new()
    } else {
        if target.object_type.members.as_ref() != Some(&object_type.stable_type) {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "Spot {spot} (type {}) takes no Actors of type {}",
                    target.object_type.stable_type, object_type.stable_type
                ),
            ));
        }
        match crate::object::joining::admit(
            &target,
            actor.clone(),
            Bytes::from(intent.request.clone()),
        )
        .await
        {
            Some(JoinDecision::Accept(reply)) => reply,
            Some(JoinDecision::Reject(reply)) => return Ok(JoinAdmission::Declined(reply)),
            None => {
                return Err(Error::new(
                    ErrorKind::Unavailable,
                    format!("Spot {spot} did not admit the Join (closing, full or too slow)"),
                ))
            }
        }
    };
    if !target.add_member(&key.id) {
        return Err(Error::new(
            ErrorKind::Unavailable,
            format!("Spot {spot} is closing"),
        ));
    }
    Ok(JoinAdmission::Yes(Joining {
        spot,
        target,
        reply,
        actor,
    }))
}

/// The object of `record` may arrive at all: not here already, nor arriving by another
/// move, and this node takes objects in. `Some` answers a repeated restore again.
pub(crate) fn check_arriving(
    server: &Moving,
    key: &ObjectKey,
    relocation_id: &str,
) -> Result<Option<RestoreReply>> {
    if let Some(arrival) = server.relocations.arrivals().get(key) {
        // A repeated restore of the same move is answered again; another one is refused.
        return if arrival.relocation_id == relocation_id {
            Ok(Some(RestoreReply::Ready(ready_of(&arrival))))
        } else {
            Err(Error::new(
                ErrorKind::Unavailable,
                format!("{key} is arriving here by another move"),
            ))
        };
    }
    if server.registry.contains(key) {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{key} already runs on this node"),
        ));
    }
    if server.hosting.is_draining() {
        return Err(Error::new(
            ErrorKind::Unavailable,
            "this node is relocating its objects away and takes none in",
        ));
    }
    Ok(None)
}

/// The type of `object` (of `kind`) as this node serves it, with the same policy the
/// source moves it under (a state comes exactly with `preserve`).
pub(crate) fn arriving_type(
    registry: &ObjectRegistry,
    kind: ObjectKind,
    object: &MovedObject,
) -> Result<Arc<TypeDef>> {
    let stable_type = object.stable_type.as_str();
    let object_type = registry.object_type(kind, stable_type)?;
    match (object_type.relocation, object.state.is_some()) {
        (Relocation::Disable, _) => Err(Error::new(
            ErrorKind::Rejected,
            format!("type {stable_type} is declared relocation = disable here"),
        )),
        (Relocation::Preserve, false) | (Relocation::Recreate, true) => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("type {stable_type} is declared with another relocation policy on this node"),
        )),
        _ => Ok(object_type),
    }
}

/// What an arriving object of `object_type` is: an Actor, or a User or Instance Spot
/// (a move never changes it).
pub(crate) fn arriving_shape(object_type: &TypeDef) -> ObjectShape {
    match (object_type.kind(), object_type.instance) {
        (ObjectKind::Actor, _) => ObjectShape::Actor,
        (ObjectKind::Spot, true) => ObjectShape::InstanceSpot,
        (ObjectKind::Spot, false) => ObjectShape::UserSpot,
    }
}

/// The authority an arriving object will run under here: its source's with AOG + 1 and
/// this node as the owner.
pub(crate) fn expected_authority(
    env: &ObjectEnv,
    object_type: &TypeDef,
    object: &MovedObject,
    token: &crate::store::LeaseToken,
    home: Option<&SpotId>,
) -> Authority {
    let source = &object.source_fence;
    Authority {
        state: AuthorityState::Ready,
        shape: arriving_shape(object_type),
        stable_type: object.stable_type.clone(),
        fence: OwnerFence {
            object_generation: source.object_generation,
            owner_generation: source.owner_generation + 1,
            owner: token.owner.0.clone(),
            lease_generation: token.generation,
        },
        route: env.route().clone(),
        membership: home.map(ToString::to_string),
        creation_request: None,
        activation: None,
        reclaim_on_owner_lost: object_type.reclaim_on_owner_lost,
    }
}
