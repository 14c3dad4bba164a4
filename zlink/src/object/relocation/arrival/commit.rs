//! The cutover on the target: the one owner change an arrival commits (or the fallback that
//! commits it without a cutover), and what follows it.

use std::sync::Arc;

use tokio::time::Instant;

use super::Arrival;
use crate::address::ActorRef;
use crate::address::{ActorId, ObjectKey, ObjectKind};
use crate::object::authority_store::{Fenced, Versioned};
use crate::object::bound_routes::SwitchOnOpen;
use crate::object::relocation::Moving;
use crate::object::relocation::CUTOVER_FALLBACK;
use crate::sync::LockUnpoisoned;
use crate::telemetry::Happened;
use crate::{Error, ErrorKind, Result};

/// No cutover within the fallback: the target commits by itself.
pub(super) fn commit_by_fallback(server: &Moving, key: ObjectKey, relocation_id: String) {
    let weak = server.downgrade();
    let cancel = server.env.cancel().clone();
    server.env.tracker().spawn(async move {
        tokio::select! {
            _ = tokio::time::sleep(CUTOVER_FALLBACK) => {}
            _ = cancel.cancelled() => return,
        }
        if let Some(server) = weak.upgrade() {
            if server
                .relocations
                .arrivals()
                .get(&key)
                .is_some_and(|a| a.relocation_id == relocation_id)
            {
                let _ = commit(&server, &key, &relocation_id).await;
            }
        }
    });
}

/// The cutover (or the fallback): commits the owner change once; a second call gets the
/// first one's outcome.
pub(crate) async fn commit(server: &Moving, key: &ObjectKey, relocation_id: &str) -> Result<()> {
    let Some(arrival) = server
        .relocations
        .arrivals()
        .get(key)
        .filter(|a| a.relocation_id == relocation_id)
    else {
        // Committed already and cleaned up: the store knows.
        return match server.env.authority().read(key).await {
            Ok(Some(current)) if current.record.route.rid == server.env.route().rid => Ok(()),
            _ => Err(Error::new(
                ErrorKind::Unavailable,
                format!("no move of {key} is arriving here"),
            )),
        };
    };
    arrival
        .outcome
        .get_or_init(|| commit_once(server, key, &arrival))
        .await
        .clone()
}

async fn commit_once(server: &Moving, key: &ObjectKey, arrival: &Arc<Arrival>) -> Result<()> {
    let outcome = owner_change(server, key, arrival).await;
    server.relocations.arrivals().remove(key, arrival);
    arrival.permit.lock_unpoisoned().take();
    let go = arrival.go.lock_unpoisoned().take();
    match outcome {
        Ok(version) => {
            committed(server, key, arrival, version).await;
            arrival.release(go, true, switch_on_open(server, key, arrival));
            server.env.events().emit(|| Happened::ObjectArrived {
                kind: key.kind.into(),
                id: key.id.to_string(),
                generation: arrival.expected.fence.object_generation,
            });
            tracing::info!(object = %key, relocation = %arrival.relocation_id, "arrived: owner change committed");
            Ok(())
        }
        Err(e) => {
            tracing::warn!(object = %key, relocation = %arrival.relocation_id, error = %e, "the arrival did not commit");
            server.registry.remove(&arrival.live);
            if let Some(joining) = &arrival.joining {
                joining.target.remove_member(&key.id);
            }
            arrival.release(go, false, None);
            Err(e)
        }
    }
}

/// The owner change of `arrival`, one CAS at the source's exact version, under this
/// node's lease read again right before it; an answer that was lost is read back (and
/// the store asked again) until the arrival's deadline. The new version when it landed.
async fn owner_change(
    server: &Moving,
    key: &ObjectKey,
    arrival: &Arrival,
) -> Result<crate::store::StoreVersion> {
    let mut pause = std::time::Duration::from_millis(20);
    loop {
        // The target's lease is read again right before the owner change.
        let leased = server
            .env
            .lease()
            .admitting_token()
            .is_some_and(|token| arrival.expected.fence.held_by(&token));
        if !leased {
            break Err(Error::new(
                ErrorKind::Unavailable,
                "the target's lease lapsed before the owner change",
            ));
        }
        match server
            .env
            .authority()
            .move_owner(key, &arrival.source_version, &arrival.expected)
            .await
        {
            Ok(Fenced::Done(version)) => break Ok(version),
            // The source version is gone: either an earlier try (its answer lost) wrote
            // this very change, or someone else changed the authority. Only a read tells;
            // until one succeeds, dispatch stays closed.
            Ok(Fenced::Moved) => match server.env.authority().read(key).await {
                Ok(Some(current)) if current.record == arrival.expected => {
                    break Ok(current.version)
                }
                Ok(_) => {
                    break Err(Error::new(
                        ErrorKind::Unavailable,
                        format!("{key}'s authority changed before the owner change"),
                    ))
                }
                Err(e) => {
                    if !ask_again(&mut pause, arrival.deadline).await {
                        break Err(Error::new(
                            ErrorKind::Unavailable,
                            format!("{key}'s owner change could not be read back: {e}"),
                        ));
                    }
                    tracing::warn!(object = %key, error = %e, "owner change not read back; asked the store again");
                }
            },
            // Unknown or unavailable: dispatch stays closed while the store is asked again.
            Err(e) => {
                if !ask_again(&mut pause, arrival.deadline).await {
                    break Err(Error::new(
                        ErrorKind::Unavailable,
                        format!("the store did not take {key}'s owner change: {e}"),
                    ));
                }
                tracing::warn!(object = %key, error = %e, "owner change not confirmed; asked the store again");
            }
        }
    }
}

/// The owner change of `arrival` committed at `version`: the object runs under it, this
/// node's cached route to the old owner is dropped, and the Spot it lands in takes it.
async fn committed(
    server: &Moving,
    key: &ObjectKey,
    arrival: &Arrival,
    version: crate::store::StoreVersion,
) {
    let ready = Versioned {
        record: arrival.expected.clone(),
        version,
    };
    arrival.live.set_authority(ready);
    // This node's own cached route (to the old owner) is stale now; its next call
    // switches here behind a barrier down that route.
    server.resolver.saw_authority(key, &arrival.expected.fence);
    match &arrival.joining {
        // The Spot joined hears it before the Actor's first turn here.
        Some(joining) => {
            arrival.live.set_membership(Some(joining.spot.clone()));
            arrival.live.use_gate_of(Some(&joining.target));
            let mut actor = joining.actor.clone();
            actor.rid = server.env.route().rid.clone();
            crate::object::joining::joined(&joining.target, actor).await;
        }
        None => match &arrival.shell {
            Some(shell) => {
                shell.add_member(&key.id);
            }
            None if key.kind == ObjectKind::Actor => join_entry(server, key),
            None => {}
        },
    }
}

/// The sessions bound to an arrived Actor, switched to it as it opens.
fn switch_on_open(server: &Moving, key: &ObjectKey, arrival: &Arrival) -> Option<SwitchOnOpen> {
    match ActorId::new(&key.id) {
        Ok(id) if key.kind == ObjectKind::Actor => {
            let at = ActorRef::at(id, arrival.live.authority().location());
            let hooks = server.relocations.bound_routes();
            SwitchOnOpen::of(hooks, at, &arrival.relocation_id, &arrival.bound)
        }
        _ => None,
    }
}

/// Waits `pause` (doubling it, up to 500 ms) before the store is asked again; `false` when
/// that would pass `deadline`.
async fn ask_again(pause: &mut std::time::Duration, deadline: Instant) -> bool {
    if Instant::now() + *pause >= deadline {
        return false;
    }
    tokio::time::sleep(*pause).await;
    *pause = (*pause * 2).min(std::time::Duration::from_millis(500));
    true
}

/// The arrived Actor is a member of this node's Entry Spot (no callback: a move is not a
/// creation or a join).
fn join_entry(server: &Moving, key: &ObjectKey) {
    if let Some(entry) = server.entry.as_ref() {
        if let Some(spot) = server.registry.get(&ObjectKey::from(&entry.id)) {
            spot.add_member(&key.id);
        }
    }
}
