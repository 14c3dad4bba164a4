//! A SpotWide User Spot moves with every member it has at seal time, as one unit (digest
//! §7.4): all of them are sealed, captured and restored together, in one restore; a
//! participant that may not move, or whose capture or restore fails, cancels the whole
//! move before anything is handed over. Past relay-ready each participant's queue is
//! relayed and cut over on its own, and the target opens dispatch for none of them before
//! all of them committed.

use std::sync::Arc;

use futures::future::join_all;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::ownership::{committed, reclaim, Reclaimed};
use super::permits::MAX_BYTES_IN_FLIGHT;
use super::placed_state::{place_state, StoredState};
use super::record::{
    MemberRestore, MovedState, RelayReady, RestoreRecord, RestoreReply, MAX_AGGREGATE_MEMBERS,
};
use super::seal::unseal;
use super::seal::{Captured, MoveSeal};
use super::source::{
    await_seal, disabled_type, finish, kind_code, moved_object, prepare_reserving, relay_to,
    restore_on_target, seal_bound_routes, send_cutover, MemberOutcomes,
};
use super::{INLINE_STATE_BYTES, MAX_CAPTURED_STATE_BYTES};
use crate::address::Location;
use crate::address::{ObjectKey, ObjectKind};
use crate::object::authority::AuthorityState;
use crate::object::bound_routes::BoundSeal;
use crate::object::env::ObjectEnv;
use crate::object::lifecycle::Relocation;
use crate::object::live_object::LiveObject;
use crate::object::object_job::Resume;
use crate::object::registry::ObjectRegistry;
use crate::object::relocation::Moving;
use crate::{Error, ErrorKind, Result};

/// The captured states of one unit that travel inside its restore, at most (the rest go
/// through the Relocation Store), so the restore stays well inside a message.
const UNIT_INLINE_BYTES: usize = 4 * 1024 * 1024;

/// One sealed participant. Dropped before it was handed over, it is cancelled: its queue
/// goes back in order and it runs on here.
struct Sealed<'a> {
    server: &'a Moving,
    live: Arc<LiveObject>,
    captured: Option<Captured>,
    resume: Option<oneshot::Sender<Resume>>,
    /// The routes bound to a member outside it, sealed for the move (released, as
    /// this drops, unless handed over), and what they carry to the target.
    bound: Option<BoundSeal>,
    bound_carried: Vec<u8>,
}

impl Drop for Sealed<'_> {
    fn drop(&mut self) {
        if let Some(captured) = self.captured.take() {
            unseal(&self.live, &self.server.departures, captured);
        }
        if let Some(resume) = self.resume.take() {
            let _ = resume.send(Resume::Cancelled);
        }
    }
}

/// Moves the SpotWide Spot `spot` and its `members` (their IDs, taken once the Spot took
/// no more Joins) to `to`, or to the node placement picks. Returns where the Spot runs,
/// and each member's outcome.
pub(crate) async fn relocate_with_members(
    server: &Moving,
    spot: &Arc<LiveObject>,
    to: Option<&str>,
    members: &[Arc<str>],
) -> Result<(Location, MemberOutcomes)> {
    // The follow duration of this move is the one in force when it started.
    let follow = server.relocations.follow_duration();
    let key = &spot.key;
    let _moving = spot.transition()?;
    let members = participants(&server.registry, spot, members)?;
    let preserving = std::iter::once(spot)
        .chain(&members)
        .filter(|l| l.object_type.relocation == Relocation::Preserve)
        .count();
    let reserve = preserving
        .saturating_mul(MAX_CAPTURED_STATE_BYTES)
        .min(MAX_BYTES_IN_FLIGHT);
    let route = prepare_reserving(server, spot, to, reserve).await?;
    check_members_served(server, key, &members, &route.target)?;
    let mut sealed = seal_all(server, spot, members, route.deadline).await?;
    let states = take_states(&mut sealed)?;
    let mut permit = route.permit;
    permit.shrink_to(states.iter().flatten().map(Vec::len).sum());
    let relocation_id = crate::object::id_uuid_v4();
    seal_members_bound_routes(server, &mut sealed, &relocation_id).await?;
    let (placed, _payloads) = place_unit_states(server, states, &relocation_id).await?;
    let record = unit_record(spot, &sealed, placed, &relocation_id)?;
    let restored = restore_unit(
        &route.node,
        &route.link,
        key,
        &record,
        route.deadline,
        server,
    )
    .await;
    let (readies, failed) = match restored {
        Ok(ready) => {
            tracing::info!(object = %key, relocation = %relocation_id, members = record.members.len(), target = %route.target, "relay-ready for the Spot and its members: handing over");
            (readies_of(ready), None)
        }
        Err(e) => (reclaim_all(&server.env, &mut sealed).await, Some(e)),
    };
    if let Some(e) = &failed {
        if readies.iter().all(Option::is_none) {
            return Err(e.clone());
        }
    }
    // Past relay-ready: no way back for any participant with a ready target (the others
    // are cancelled as they drop).
    let hand_over = HandOverAll {
        node: &route.node,
        link: &route.link,
        relocation_id: &relocation_id,
    };
    let cutovers = hand_over.all(server, &mut sealed, readies);
    drop(sealed);
    let settled = join_all(
        cutovers
            .into_iter()
            .map(|cutover| cutover.settle(server, route.deadline, follow)),
    )
    .await;
    drop(permit);
    if let Some(e) = failed {
        return Err(e);
    }
    unit_outcome(settled)
}

/// `NotFound` unless the target `rid` serves every member's type.
fn check_members_served(
    server: &Moving,
    key: &ObjectKey,
    members: &[Arc<LiveObject>],
    rid: &str,
) -> Result<()> {
    for member in members {
        let stable_type = member.object_type.stable_type.as_str();
        if !serves(server, rid, stable_type) {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "node {rid} serves no Actors of type {stable_type}, which {key}'s members are"
                ),
            ));
        }
    }
    Ok(())
}

/// Seals the routes bound outside each captured participant for the move, keeping what
/// they carry to the target.
async fn seal_members_bound_routes(
    server: &Moving,
    sealed: &mut [Sealed<'_>],
    relocation_id: &str,
) -> Result<()> {
    for participant in sealed.iter_mut() {
        let Some(captured) = participant.captured.as_ref() else {
            continue;
        };
        let live = &participant.live;
        let (seal, carried) = seal_bound_routes(
            &server.relocations,
            live,
            &captured.authority,
            relocation_id,
        )
        .await?;
        (participant.bound, participant.bound_carried) = (seal, carried);
    }
    Ok(())
}

/// Each participant's captured state as the restore carries it: inline while the unit's
/// inline budget lasts, else in the Relocation Store. The stored ones are removed once
/// the move is over here (when the returned payloads drop).
async fn place_unit_states(
    server: &Moving,
    states: Vec<Option<Vec<u8>>>,
    relocation_id: &str,
) -> Result<(Vec<Option<MovedState>>, Vec<StoredState>)> {
    let mut placed = Vec::with_capacity(states.len());
    let mut payloads = Vec::new();
    let mut inline_left = UNIT_INLINE_BYTES;
    for (index, state) in states.into_iter().enumerate() {
        let inline_up_to = INLINE_STATE_BYTES.min(inline_left);
        let reference = format!("zlink:state:{relocation_id}:{index}");
        let state = place_state(&server.hosting, reference, state, inline_up_to).await?;
        if let Some(MovedState::Inline(bytes)) = &state {
            inline_left = inline_left.saturating_sub(bytes.len());
        }
        payloads.extend(StoredState::of(
            &server.hosting,
            server.env.tracker(),
            &state,
        ));
        placed.push(state);
    }
    Ok((placed, payloads))
}

/// Sends the unit's restore; its relay-ready, with one fence per member in the record's
/// order.
async fn restore_unit(
    node: &Arc<crate::mesh::MeshNode>,
    link: &crate::mesh::peer_table::PeerLink,
    key: &ObjectKey,
    record: &RestoreRecord,
    deadline: Instant,
    server: &Moving,
) -> Result<RelayReady> {
    match restore_on_target(node, link, key, record, deadline, server.faults).await? {
        RestoreReply::Ready(ready) => check_member_fences(record, &ready).map(|_| ready),
        RestoreReply::Declined { .. } => Err(Error::new(
            ErrorKind::ProtocolError,
            "the target declined a Spot's restore",
        )),
    }
}

/// The relay-ready each participant relays to: the Spot's, then one per member.
fn readies_of(ready: RelayReady) -> Vec<Option<RelayReady>> {
    std::iter::once(ready.target_fence.clone())
        .chain(ready.members)
        .map(|target_fence| {
            Some(RelayReady {
                target_fence,
                target_route: ready.target_route.clone(),
                members: Vec::new(),
            })
        })
        .collect()
}

/// Where a unit's participants are handed over: the target's node and link, under one
/// relocation ID.
struct HandOverAll<'a> {
    node: &'a Arc<crate::mesh::MeshNode>,
    link: &'a crate::mesh::peer_table::PeerLink,
    relocation_id: &'a str,
}

/// One participant handed over, until its cutover is answered.
struct Cutover {
    key: ObjectKey,
    departure: Arc<crate::object::follow::Departure>,
    ready: RelayReady,
    done: oneshot::Receiver<Result<bytes::Bytes>>,
    sealed_at: crate::store::StoreVersion,
}

impl HandOverAll<'_> {
    /// Hands over every participant with a ready target: its queue relays, it leaves the
    /// registry, and its cutover goes behind what was relayed.
    fn all(
        &self,
        server: &Moving,
        sealed: &mut [Sealed<'_>],
        readies: Vec<Option<RelayReady>>,
    ) -> Vec<Cutover> {
        let mut cutovers = Vec::with_capacity(sealed.len());
        for (participant, ready) in sealed.iter_mut().zip(readies) {
            let (Some(ready), Some(captured)) = (ready, participant.captured.take()) else {
                continue;
            };
            let live = &participant.live;
            let Captured {
                backlog,
                departure,
                authority,
                ..
            } = captured;
            let relay = relay_to(
                self.node,
                self.link.clone(),
                live,
                &departure,
                backlog,
                &ready,
            );
            if let Some(resume) = participant.resume.take() {
                let _ = resume.send(Resume::Moved);
            }
            if let Some(seal) = participant.bound.take() {
                seal.handed_over();
            }
            server.registry.remove(live);
            if let Some((fence, from)) = departure.relaying_from() {
                server.resolver.moved(&live.key, &fence, &from);
            }
            let done = send_cutover(&relay, server.faults, &live.key, self.relocation_id);
            cutovers.push(Cutover {
                key: live.key.clone(),
                departure,
                ready,
                done,
                sealed_at: authority.version,
            });
        }
        cutovers
    }
}

impl Cutover {
    /// Where the participant runs once its target committed, by `deadline`; its old
    /// route is followed for `follow` either way.
    async fn settle(
        self,
        server: &Moving,
        deadline: Instant,
        follow: std::time::Duration,
    ) -> (ObjectKey, Result<Location>) {
        let Cutover {
            key,
            departure,
            ready,
            done,
            sealed_at,
        } = self;
        let committed = committed(server, &key, &ready, &sealed_at, done, deadline).await;
        finish(server, &departure, follow);
        let outcome = if committed {
            Ok(Location {
                generation: ready.target_fence.object_generation,
                mesh_name: ready.target_route.mesh_name.clone(),
                rid: ready.target_route.rid.clone(),
            })
        } else {
            Err(Error::new(
                ErrorKind::Unavailable,
                format!(
                    "{key} was handed to {}, which did not commit it: it is unavailable",
                    ready.target_route.rid
                ),
            ))
        };
        (key, outcome)
    }
}

/// Where the Spot runs (the first outcome) and each member's outcome.
fn unit_outcome(settled: Vec<(ObjectKey, Result<Location>)>) -> Result<(Location, MemberOutcomes)> {
    let mut settled = settled.into_iter();
    let spot_outcome = settled
        .next()
        .map(|(_, outcome)| outcome)
        .unwrap_or_else(|| {
            Err(Error::new(
                ErrorKind::InternalFailure,
                "the Spot was not handed over",
            ))
        });
    let members = settled
        .map(|(key, outcome)| (key.id.clone(), outcome))
        .collect();
    spot_outcome.map(|at| (at, members))
}

/// The member Actors that move with `spot`: every one still running here. One that may
/// not move refuses the whole move, before anything is sealed.
fn participants(
    registry: &ObjectRegistry,
    spot: &LiveObject,
    members: &[Arc<str>],
) -> Result<Vec<Arc<LiveObject>>> {
    if members.len() > MAX_AGGREGATE_MEMBERS {
        return Err(Error::new(
            ErrorKind::CapacityExceeded,
            format!(
                "{} has {} members; a Spot moves with at most {MAX_AGGREGATE_MEMBERS}",
                spot.key,
                members.len()
            ),
        ));
    }
    let mut participants = Vec::with_capacity(members.len());
    for id in members {
        let member_key = ObjectKey {
            kind: ObjectKind::Actor,
            id: id.clone(),
        };
        let Some(member) = registry.get(&member_key) else {
            continue;
        };
        if member.object_type.relocation == Relocation::Disable {
            let why = disabled_type(&member);
            return Err(Error::new(
                ErrorKind::Rejected,
                format!("{} moves only with all its members, and {why}", spot.key),
            ));
        }
        participants.push(member);
    }
    Ok(participants)
}

/// Whether node `rid` serves Actors of `stable_type`.
fn serves(server: &Moving, rid: &str, stable_type: &str) -> bool {
    crate::object::creation::candidates(server, ObjectKind::Actor, stable_type)
        .iter()
        .any(|c| c.rid == rid)
}

/// Seals the Spot and its members, each at its own turn boundary (they share a gate, so
/// each seals between the others' turns). A member that stopped or left the Spot before
/// its seal was no member at seal time; any other failure cancels every seal.
async fn seal_all<'a>(
    server: &'a Moving,
    spot: &Arc<LiveObject>,
    members: Vec<Arc<LiveObject>>,
    deadline: Instant,
) -> Result<Vec<Sealed<'a>>> {
    let mut asked = Vec::with_capacity(1 + members.len());
    for live in std::iter::once(spot.clone()).chain(members) {
        let (resume_tx, resume_rx) = oneshot::channel();
        let (job, captured_rx) = MoveSeal::job(&live, &server.departures, resume_rx);
        if live.deliver_notice(job) {
            asked.push((live, captured_rx, resume_tx));
        } else if Arc::ptr_eq(&live, spot) {
            return Err(Error::new(
                ErrorKind::Unavailable,
                format!("{} is closing", spot.key),
            ));
        }
    }
    let mut sealed = Vec::with_capacity(asked.len());
    let mut failed = None;
    for (live, mut captured_rx, resume_tx) in asked {
        let is_spot = Arc::ptr_eq(&live, spot);
        let waited = if failed.is_some() {
            // Given up already: take back a seal that came, or stop the one to come.
            captured_rx.close();
            captured_rx.try_recv().map_err(|_| None)
        } else {
            match await_seal(&live, &mut captured_rx, deadline).await {
                Ok(captured) => Ok(captured),
                // A member whose loop ended (it left, or closed) is no member at seal
                // time; one that did not reach a boundary in time fails the move.
                Err((e, late)) => {
                    if is_spot || e.is(ErrorKind::DeadlineExceeded) {
                        failed = Some(e);
                    }
                    Err(late)
                }
            }
        };
        let captured = match waited {
            Ok(captured) => captured,
            Err(Some(late)) => {
                unseal(&live, &server.departures, late);
                let _ = resume_tx.send(Resume::Cancelled);
                continue;
            }
            Err(None) => continue,
        };
        let participant = Sealed {
            server,
            live,
            captured: Some(captured),
            resume: Some(resume_tx),
            bound: None,
            bound_carried: Vec::new(),
        };
        let member_here = is_spot
            || participant
                .live
                .membership()
                .is_some_and(|m| m.as_str() == &*spot.key.id);
        if member_here {
            sealed.push(participant);
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(sealed),
    }
}

/// Each participant's captured state, checked: a unit moves only whole, its states
/// within their bounds.
fn take_states(sealed: &mut [Sealed<'_>]) -> Result<Vec<Option<Vec<u8>>>> {
    let mut states = Vec::with_capacity(sealed.len());
    let mut total = 0usize;
    for participant in sealed.iter_mut() {
        let key = &participant.live.key;
        let Some(captured) = participant.captured.as_mut() else {
            continue;
        };
        if captured.authority.record.state != AuthorityState::Ready {
            return Err(Error::new(
                ErrorKind::Unavailable,
                format!("{key} is closing"),
            ));
        }
        let state = captured.state.take().transpose().map_err(|e| {
            Error::new(
                ErrorKind::InternalFailure,
                format!("capturing {key}'s state failed: {e}"),
            )
        })?;
        let len = state.as_ref().map_or(0, Vec::len);
        if len > MAX_CAPTURED_STATE_BYTES {
            return Err(Error::new(
                ErrorKind::CapacityExceeded,
                format!("{key}'s captured state exceeds {MAX_CAPTURED_STATE_BYTES} bytes"),
            ));
        }
        total = total.saturating_add(len);
        states.push(state);
    }
    if total > MAX_BYTES_IN_FLIGHT {
        return Err(Error::new(
            ErrorKind::CapacityExceeded,
            format!("the Spot's and its members' states take {total} bytes; a unit moves with at most {MAX_BYTES_IN_FLIGHT}"),
        ));
    }
    Ok(states)
}

/// The one restore of the unit: the Spot's, carrying each member's.
fn unit_record(
    spot: &LiveObject,
    sealed: &[Sealed<'_>],
    mut states: Vec<Option<MovedState>>,
    relocation_id: &str,
) -> Result<RestoreRecord> {
    let mut states = states.drain(..);
    let mut records = sealed.iter().filter_map(|p| {
        let captured = p.captured.as_ref()?;
        Some((p, captured, states.next().flatten()))
    });
    let Some((_, spot_captured, spot_state)) = records.next() else {
        return Err(Error::new(
            ErrorKind::InternalFailure,
            "the Spot was not sealed",
        ));
    };
    let members = records
        .map(|(participant, captured, state)| MemberRestore {
            id: participant.live.key.id.to_string(),
            object: moved_object(
                &participant.live,
                &captured.authority,
                state,
                captured.timers.clone(),
                participant.bound_carried.clone(),
            ),
        })
        .collect();
    Ok(RestoreRecord {
        kind: kind_code(&spot.key),
        relocation_id: relocation_id.to_string(),
        object: moved_object(
            spot,
            &spot_captured.authority,
            spot_state,
            spot_captured.timers.clone(),
            Vec::new(),
        ),
        join: None,
        with_spot: None,
        members,
    })
}

/// After a restore of the unit that did not answer relay-ready: each participant is
/// re-fenced (see [`reclaim`]); those the target took already are handed over (`Some`),
/// the others run on here.
async fn reclaim_all(env: &ObjectEnv, sealed: &mut [Sealed<'_>]) -> Vec<Option<RelayReady>> {
    let mut readies = Vec::with_capacity(sealed.len());
    for participant in sealed.iter_mut() {
        let Some(captured) = participant.captured.as_mut() else {
            readies.push(None);
            continue;
        };
        let ready = match reclaim(env, &participant.live.key, &captured.authority).await {
            Reclaimed::Taken(ready) => Some(ready),
            Reclaimed::Kept(kept) => {
                participant.live.set_authority(kept.clone());
                captured.authority = kept;
                None
            }
            Reclaimed::Stopped => None,
        };
        readies.push(ready);
    }
    readies
}

/// FollowRelay-ready names one fence per member: the same incarnation, the next owner.
fn check_member_fences(record: &RestoreRecord, ready: &RelayReady) -> Result<()> {
    let matches = ready.members.len() == record.members.len()
        && record
            .members
            .iter()
            .zip(&ready.members)
            .all(|(m, target)| {
                target.object_generation == m.object.source_fence.object_generation
                    && target.owner_generation == m.object.source_fence.owner_generation + 1
            });
    if !matches {
        return Err(Error::new(
            ErrorKind::ProtocolError,
            "relay-ready does not name each member's next owner",
        ));
    }
    Ok(())
}
