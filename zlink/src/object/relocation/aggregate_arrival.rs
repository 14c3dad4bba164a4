//! The target side of a SpotWide Spot arriving with its members (see [`super::aggregate`]):
//! every participant is checked, given capacity and built before any is registered, so
//! a failure leaves nothing behind; registered, none dispatches before all of them
//! settled their owner change.

use std::sync::Arc;

use tokio::time::Instant;

use super::arrival::{
    arriving_type, build, check_arriving, expected_authority, ready_of, ArrivalGroup, Arriving,
    Carried, Staged,
};
use super::record::{MovedState, RestoreRecord, RestoreReply};
use super::RELOCATION_DEADLINE;
use crate::address::{ActorId, ObjectKey, ObjectKind, SpotId};
use crate::object::instance::Instance;
use crate::object::membership::Execution;
use crate::object::object_type::TypeDef;
use crate::object::relocation::Moving;
use crate::{Error, ErrorKind, Result};

/// The members a unit's restore carries, each with the type it runs as here: none may be
/// arriving already, and each must be of the type the Spot takes.
fn arriving_members(
    server: &Moving,
    spot_type: &TypeDef,
    record: &RestoreRecord,
) -> Result<Vec<(ObjectKey, Arc<TypeDef>)>> {
    let mut members = Vec::with_capacity(record.members.len());
    for member in &record.members {
        let id = ActorId::new(&member.id)
            .map_err(|e| Error::new(ErrorKind::ProtocolError, e.to_string()))?;
        let member_key = ObjectKey::from(&id);
        if check_arriving(server, &member_key, &record.relocation_id)?.is_some() {
            return Err(Error::new(
                ErrorKind::Unavailable,
                format!("{member_key} is arriving here already"),
            ));
        }
        let member_type = arriving_type(&server.registry, ObjectKind::Actor, &member.object)?;
        if spot_type.members.as_ref() != Some(&member_type.stable_type) {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "Spot type {} takes no Actors of type {} on this node",
                    record.object.stable_type, member.object.stable_type
                ),
            ));
        }
        members.push((member_key, member_type));
    }
    Ok(members)
}

/// The hidden instances of the Spot `spot` and of its `members` (each restored from the
/// state it carries), built before anything of the unit is registered.
async fn build_unit(
    server: &Moving,
    spot: (&ObjectKey, &TypeDef),
    spot_id: &SpotId,
    members: &[(ObjectKey, Arc<TypeDef>)],
    record: &RestoreRecord,
    deadline: Instant,
) -> Result<(Box<dyn Instance>, Vec<Box<dyn Instance>>)> {
    let handle = server.env.handle()?;
    let spot_staged = Staged {
        object: &record.object,
        membership: None,
        deadline,
    };
    let spot_instance = build(&server.hosting, spot.1, spot.0, &handle, spot_staged).await?;
    let mut instances = Vec::with_capacity(members.len());
    for (member, (member_key, member_type)) in record.members.iter().zip(members) {
        let staged = Staged {
            object: &member.object,
            membership: Some(spot_id.clone()),
            deadline,
        };
        instances.push(build(&server.hosting, member_type, member_key, &handle, staged).await?);
    }
    Ok((spot_instance, instances))
}

/// A restore of the SpotWide Spot `key` carrying its members: relay-ready for all of
/// them (the members' fences in the record's order), or why none arrives.
pub(super) async fn arrive_with_members(
    server: &Moving,
    key: ObjectKey,
    record: RestoreRecord,
) -> Result<RestoreReply> {
    let spot_id = SpotId::new(&key.id)
        .map_err(|e| Error::new(ErrorKind::ProtocolError, format!("a bad Spot ID: {e}")))?;
    let spot_type = arriving_type(&server.registry, ObjectKind::Spot, &record.object)?;
    if spot_type.execution != Execution::SpotWide {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "type {} does not run its members SpotWide on this node",
                record.object.stable_type
            ),
        ));
    }
    let members = arriving_members(server, &spot_type, &record)?;
    let token = server.env.admitting_token()?;
    let bytes = std::iter::once(&record.object.state)
        .chain(record.members.iter().map(|m| &m.object.state))
        .flatten()
        .map(MovedState::len)
        .fold(0usize, usize::saturating_add);
    let permit = server.relocations.permits().inbound(bytes)?;
    // Capacity for the whole unit at once, before anything is built.
    let mut slots = Vec::with_capacity(1 + members.len());
    slots.push(server.registry.begin_creating(&key, &spot_type)?);
    for (member_key, member_type) in &members {
        slots.push(server.registry.begin_creating(member_key, member_type)?);
    }
    let deadline = Instant::now() + RELOCATION_DEADLINE;
    let built = build_unit(
        server,
        (&key, &spot_type),
        &spot_id,
        &members,
        &record,
        deadline,
    );
    let (spot_instance, instances) = built.await?;

    // Everything is built: register the unit.
    let group = ArrivalGroup::new(1 + members.len());
    let expected: Vec<_> = record
        .members
        .iter()
        .zip(&members)
        .map(|(member, (_, member_type))| {
            let home = Some(&spot_id);
            expected_authority(&server.env, member_type, &member.object, &token, home)
        })
        .collect();
    let fences = expected.iter().map(|a| a.fence.clone()).collect();
    let spot_arriving = Arriving {
        relocation_id: &record.relocation_id,
        object: &record.object,
        expected: expected_authority(&server.env, &spot_type, &record.object, &token, None),
        joined: None,
        deadline,
        permit: Some(permit),
    };
    let carried = Carried {
        group: Some(group.clone()),
        members: fences,
        ..Carried::default()
    };
    let spot = spot_arriving.start(server, key, spot_type, spot_instance, carried);
    let unit = record
        .members
        .iter()
        .zip(members)
        .zip(instances)
        .zip(expected);
    for (((member, (member_key, member_type)), instance), expected) in unit {
        let arriving = Arriving {
            relocation_id: &record.relocation_id,
            object: &member.object,
            expected,
            joined: None,
            deadline,
            permit: None,
        };
        let carried = Carried {
            group: Some(group.clone()),
            shell: Some(spot.live.clone()),
            ..Carried::default()
        };
        let arrived = arriving.start(server, member_key, member_type, instance, carried);
        arrived.live.use_gate_of(Some(&spot.live));
    }
    drop(slots);
    Ok(RestoreReply::Ready(ready_of(&spot)))
}
