//! The source side of one move: choose the target, seal, capture, restore on the target,
//! then relay and cut over (see the [module](super) for the whole flow).

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::departure::{Departure, RelayItem};
use super::record::{CutoverRecord, RelayReady, RestoreRecord};
use super::{job_to_held, CUTOVER_FALLBACK, MAX_CAPTURED_STATE_BYTES, RELOCATION_DEADLINE};
use crate::mesh::calls::OutboundCall;
use crate::object::authority::AuthorityState;
use crate::object::authority_store::Versioned;
use crate::object::id::{ObjectKey, ObjectKind};
use crate::object::live_object::{Captured, LiveObject, ObjectJob, Resume};
use crate::object::object_ref::Location;
use crate::object::server::ObjectServer;
use crate::object::spot::Relocation;
use crate::wire::{Command, Metadata};
use crate::{Error, ErrorKind, Result};

/// Moves the object `key`, which this node owns, to `to` (a node's RID) or to the node
/// placement picks among those serving its type. Returns where it runs now.
pub(crate) async fn relocate(
    server: &Arc<ObjectServer>,
    key: &ObjectKey,
    to: Option<&str>,
) -> Result<Location> {
    let deadline = Instant::now() + RELOCATION_DEADLINE;
    let live = server.live().get(key).cloned().ok_or_else(|| {
        Error::new(
            ErrorKind::NotFound,
            format!("{key} does not run on this node: relocate it on its owner"),
        )
    })?;
    check_movable(&live)?;
    let target = choose_target(server, &live, to)?;
    let reserve = match live.object_type.relocation {
        Relocation::Preserve => MAX_CAPTURED_STATE_BYTES,
        _ => 0,
    };
    let mut permit = server.permits.outbound_by(reserve, deadline).await?;
    let node = server
        .node
        .upgrade()
        .ok_or_else(|| Error::new(ErrorKind::ShuttingDown, "the node is stopping"))?;
    let settings = node.settings();
    let link = node
        .calls()
        .peer(&target, Instant::now() + settings.send_timeout)
        .await
        .map_err(|e| Error::new(ErrorKind::Unavailable, format!("node {target}: {e}")))?;

    // Seal at the next turn boundary.
    let (captured_tx, captured_rx) = oneshot::channel();
    let (resume_tx, resume_rx) = oneshot::channel();
    if !live.deliver_notice(ObjectJob::Relocate {
        captured: captured_tx,
        resume: resume_rx,
    }) {
        return Err(Error::new(
            ErrorKind::Unavailable,
            format!("{key} is closing"),
        ));
    }
    let sealed = tokio::time::timeout_at(deadline, captured_rx)
        .await
        .map_err(|_| {
            Error::new(
                ErrorKind::DeadlineExceeded,
                format!("{key}'s handler did not reach a boundary in time"),
            )
        })?
        .map_err(|_| Error::new(ErrorKind::Unavailable, format!("{key} stopped")))?;
    let Captured {
        authority,
        backlog,
        timers,
        state,
        departure,
    } = sealed;
    let cancel = |backlog, error: Error, resume: oneshot::Sender<Resume>| {
        cancel_move(server, &live, &departure, backlog, resume);
        Err(error)
    };
    if authority.record.state != AuthorityState::Ready {
        return cancel(
            backlog,
            Error::new(ErrorKind::Unavailable, format!("{key} is closing")),
            resume_tx,
        );
    }
    let state = match state.transpose() {
        Ok(state) => state,
        Err(e) => {
            return cancel(
                backlog,
                Error::new(
                    ErrorKind::InternalFailure,
                    format!("capturing {key}'s state failed: {e}"),
                ),
                resume_tx,
            )
        }
    };
    if state
        .as_ref()
        .is_some_and(|s| s.len() > MAX_CAPTURED_STATE_BYTES)
    {
        return cancel(
            backlog,
            Error::new(
                ErrorKind::CapacityExceeded,
                format!("{key}'s captured state exceeds {MAX_CAPTURED_STATE_BYTES} bytes"),
            ),
            resume_tx,
        );
    }
    permit.shrink_to(state.as_ref().map_or(0, Vec::len));
    let relocation_id = crate::object::id_uuid_v4();
    let record = RestoreRecord {
        relocation_id: relocation_id.clone(),
        stable_type: live.object_type.stable_type.to_string(),
        source_fence: authority.record.fence.clone(),
        source_version: authority.version.0.clone(),
        state,
        timers,
    };
    let ready = match restore_on_target(server, &node, &link, key, &record, deadline).await {
        Ok(ready) => ready,
        Err(e) => return cancel(backlog, e, resume_tx),
    };
    tracing::info!(object = %key, relocation = %relocation_id, target = %target, "relay-ready: handing over");

    // Past relay-ready: no way back. Saved queue, hold, then what follows, in order.
    let saved = backlog
        .into_iter()
        .filter_map(|(job, _)| job_to_held(&live.object_type, job))
        .collect();
    let relay = departure.start_relay(
        &node,
        &server.tracker,
        &server.cancel,
        link,
        ready.target_fence.clone(),
        ready.target_route.clone(),
        saved,
    );
    let _ = resume_tx.send(Resume::Moved);
    server.remove_live(&live);
    leave_entry(server, key);
    server.resolver.forget(key);
    let (done_tx, done_rx) = oneshot::channel();
    let cutover = CutoverRecord { relocation_id };
    if settings.drop_relocation_cutover {
        drop(done_tx);
    } else {
        let _ = relay.send(RelayItem::Control {
            command: Command::RelocationCutover,
            payload: cutover.encode()?,
            done: done_tx,
        });
    }
    drop(relay);
    let committed = match tokio::time::timeout_at(deadline, done_rx).await {
        Ok(Ok(Ok(_))) => true,
        // The cutover's answer was lost: the store says what happened.
        _ => confirm_commit(server, key, &ready, deadline).await,
    };
    let follow = settings.message_follow_duration;
    drop(permit);
    if !committed {
        finish(server, &departure, follow);
        return Err(Error::new(
            ErrorKind::Unavailable,
            format!("{key} was handed to {target}, which did not commit it: it is unavailable"),
        ));
    }
    finish(server, &departure, follow);
    Ok(Location {
        generation: ready.target_fence.object_generation,
        mesh_name: ready.target_route.mesh_name.clone(),
        rid: ready.target_route.rid.clone(),
    })
}

/// What may move: Actors of a type that allows it (Spots move with their aggregate,
/// which comes later).
fn check_movable(live: &LiveObject) -> Result<()> {
    if live.key.kind != ObjectKind::Actor {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{}: only Actors move between nodes so far", live.key),
        ));
    }
    if live.object_type.relocation == Relocation::Disable {
        return Err(Error::new(
            ErrorKind::Rejected,
            format!(
                "{} is of type {}, declared relocation = disable",
                live.key, live.object_type.stable_type
            ),
        ));
    }
    if live
        .membership()
        .is_some_and(|spot| !crate::object::is_entry_spot_id(spot.as_str()))
    {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "{} belongs to a User Spot: it moves with its Spot, or after joining an Entry Spot",
                live.key
            ),
        ));
    }
    Ok(())
}

/// The named node, or the one placement picks among the others serving the type.
fn choose_target(server: &ObjectServer, live: &LiveObject, to: Option<&str>) -> Result<String> {
    if to == Some(server.route.rid.as_str()) {
        return Err(Error::InvalidArgument(format!(
            "{} runs on {} already",
            live.key, server.route.rid
        )));
    }
    let candidates = crate::object::creation::candidates(
        server,
        live.key.kind,
        live.object_type.stable_type.as_str(),
    );
    let others: Vec<_> = candidates.into_iter().filter(|c| !c.local).collect();
    match to {
        Some(rid) if others.iter().any(|c| c.rid == rid) => Ok(rid.to_string()),
        Some(rid) => Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "node {rid} is not a known Object Server of {}",
                live.object_type.stable_type
            ),
        )),
        None => crate::object::placement::pick(&others, &[])
            .map(|c| c.rid.clone())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Unavailable,
                    format!(
                        "no other node serves {} to move {} to",
                        live.object_type.stable_type, live.key
                    ),
                )
            }),
    }
}

/// Sends the restore (command 31) and waits for relay-ready.
async fn restore_on_target(
    _server: &ObjectServer,
    node: &Arc<crate::mesh::MeshNode>,
    link: &crate::mesh::peer_table::PeerLink,
    key: &ObjectKey,
    record: &RestoreRecord,
    deadline: Instant,
) -> Result<RelayReady> {
    let settings = node.settings();
    let metadata = Metadata::new();
    let payload: Bytes = record.encode()?;
    let call = OutboundCall {
        hops: 0,
        command: Command::RelocationRestore,
        target: &key.id,
        packet: super::departure::CONTROL_PACKET,
        fence: None,
        metadata: &metadata,
        payload,
    };
    let timeout = deadline.saturating_duration_since(Instant::now());
    let admit_by = Instant::now() + settings.send_timeout;
    let reply = node
        .calls()
        .request(link, &call, deadline, timeout, admit_by)
        .await?;
    let ready = RelayReady::decode(&reply)?;
    let source = &record.source_fence;
    let target = &ready.target_fence;
    if target.object_generation != source.object_generation
        || target.owner_generation != source.owner_generation + 1
    {
        return Err(Error::new(
            ErrorKind::ProtocolError,
            "relay-ready names another incarnation or owner generation",
        ));
    }
    Ok(ready)
}

/// A move cancelled before relay-ready: the object runs on here with its queue in order
/// (the saved backlog, then what the hold kept).
fn cancel_move(
    server: &ObjectServer,
    live: &LiveObject,
    departure: &Arc<Departure>,
    backlog: Vec<(ObjectJob, usize)>,
    resume: oneshot::Sender<Resume>,
) {
    tracing::info!(object = %live.key, "move cancelled before relay-ready: the object runs on here");
    departure.cancel(live, backlog);
    server.departures.remove(departure);
    let _ = resume.send(Resume::Cancelled);
}

/// The Actor is no longer a member of this node's Entry Spot.
fn leave_entry(server: &ObjectServer, key: &ObjectKey) {
    if let Some(entry) = server.entry.as_ref() {
        if let Some(spot) = server.live().get(&ObjectKey::from(&entry.id)).cloned() {
            spot.remove_member(&key.id);
        }
    }
}

/// Reads the authority until the store answers whether the target committed.
async fn confirm_commit(
    server: &ObjectServer,
    key: &ObjectKey,
    ready: &RelayReady,
    deadline: Instant,
) -> bool {
    // The target commits by itself 1000 ms after relay-ready at the latest.
    tokio::time::sleep(CUTOVER_FALLBACK).await;
    let mut pause = std::time::Duration::from_millis(50);
    loop {
        match server.authority.read(key).await {
            Ok(Some(Versioned { record, .. })) => {
                if record.fence == ready.target_fence {
                    return true;
                }
                // A target whose lease is gone can no longer commit (it checks its lease
                // right before the owner change).
                if Instant::now() >= deadline || !target_lease_alive(server, ready).await {
                    return false;
                }
            }
            Ok(None) => return false,
            Err(e) => {
                tracing::warn!(object = %key, error = %e, "the store did not say whether the move committed; reading again");
                if Instant::now() >= deadline {
                    return false;
                }
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(std::time::Duration::from_secs(1));
    }
}

/// Whether the target still holds the lease it would commit under; `true` when the
/// store cannot say (the caller keeps asking).
async fn target_lease_alive(server: &ObjectServer, ready: &RelayReady) -> bool {
    let owner = crate::store::OwnerId(ready.target_fence.owner.clone());
    match server.store.read_lease(&owner).await {
        Ok(grant) => grant.is_some_and(|g| g.token == ready.target_fence.lease()),
        Err(_) => true,
    }
}

/// The move is over on this node: the old route is followed for `follow` (none at 0).
fn finish(server: &Arc<ObjectServer>, departure: &Arc<Departure>, follow: std::time::Duration) {
    if follow.is_zero() {
        server.departures.remove(departure);
        return;
    }
    departure.committed(Instant::now() + follow);
    let server = Arc::downgrade(server);
    let departure = departure.clone();
    let until = Instant::now() + follow;
    if let Some(layer) = server.upgrade() {
        let cancel = layer.cancel.clone();
        layer.tracker.spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => {}
                _ = cancel.cancelled() => {}
            }
            if let Some(layer) = server.upgrade() {
                layer.departures.remove(&departure);
            }
        });
    }
}
