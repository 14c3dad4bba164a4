//! The source side of one move: choose the target, seal, capture, restore on the target,
//! then relay and cut over (see the [module](super) for the whole flow).

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::Instrument;

use super::permits::Permit;
use super::seal::{Captured, MoveSeal};
use super::{MAX_CAPTURED_STATE_BYTES, RELOCATION_DEADLINE};
use crate::address::Location;
use crate::address::{ObjectKey, ObjectKind};
use crate::mesh::peer_table::PeerLink;
use crate::mesh::MeshNode;
use crate::object::lifecycle::Relocation;
use crate::object::live_object::LiveObject;
use crate::object::membership::Execution;
use crate::object::object_job::Resume;
use crate::object::relocation::Moving;
use crate::sync::LockUnpoisoned;
use crate::telemetry::{Happened, MoveOutcome};
use crate::{Error, ErrorKind, Result};

mod checks;
mod hand_over;

use checks::{check_movable, choose_target};
pub(crate) use checks::{disabled_type, kind_code, relocatable_type};
pub(crate) use hand_over::{
    finish, hand_over, moved_object, relay_to, restore_on_target, seal_bound_routes, send_cutover,
};

/// Where a move goes, and what it holds while it runs.
pub(crate) struct Route {
    pub(super) node: Arc<MeshNode>,
    pub(super) link: PeerLink,
    pub(super) target: String,
    pub(super) permit: Permit,
    pub(super) deadline: Instant,
}

/// A Join to a Spot on the target: the target admits it (`on_actor_join`) before it
/// takes the Actor.
pub(crate) use super::record::JoinIntent;

/// What else a move does besides moving the object.
pub(crate) enum Carry {
    /// Nothing: a host move (an Entry-Spot Actor lands in the target's Entry Spot).
    Alone,
    /// A Join of a Spot on the target.
    Join(JoinIntent),
    /// A member of a PerActor Spot whose shell moved to the target first: it stays a
    /// member there.
    WithSpot(String),
}

/// How a hand-over ended for the object on the source.
pub(crate) enum HandOver {
    /// The target committed: the object runs there now.
    Moved(Location),
    /// Cancelled before relay-ready: the object's queue is back in order and it runs on
    /// here (a Join's target Spot declined it: `Declined` with its reply).
    Cancelled(Error),
    Declined(Bytes),
    /// Handed over, but the target did not commit: the object is unavailable.
    Lost(Error),
}

/// Moves the object `key`, which this node owns, to `to` (a node's RID) or to the node
/// placement picks among those serving its type. Returns where it runs now.
pub(crate) async fn relocate(
    server: &Moving,
    key: &ObjectKey,
    to: Option<&str>,
) -> Result<Location> {
    server.unless_killed(relocate_now(server, key, to)).await
}

async fn relocate_now(server: &Moving, key: &ObjectKey, to: Option<&str>) -> Result<Location> {
    let live = server.registry.get(key).ok_or_else(|| {
        Error::new(
            ErrorKind::NotFound,
            format!("{key} does not run on this node: relocate it on its owner"),
        )
    })?;
    check_movable(&live)?;
    if key.kind == ObjectKind::Actor {
        return seal_and_hand_over(server, &live, to, Carry::Alone).await;
    }
    relocate_spot_now(server, &live, to).await.map(|(at, _)| at)
}

/// Each member's outcome of a Spot's move, by Actor ID.
pub(crate) type MemberOutcomes = Vec<(Arc<str>, Result<Location>)>;

/// Moves a Spot, taking no Join meanwhile. A SpotWide Spot moves with its members as one
/// unit; a PerActor Spot moves its shell, then each member as its own move. Returns where
/// the Spot runs, and each member's outcome.
pub(crate) async fn relocate_spot(
    server: &Moving,
    live: &Arc<LiveObject>,
    to: Option<&str>,
) -> Result<(Location, MemberOutcomes)> {
    server
        .unless_killed(relocate_spot_now(server, live, to))
        .await
}

async fn relocate_spot_now(
    server: &Moving,
    live: &Arc<LiveObject>,
    to: Option<&str>,
) -> Result<(Location, MemberOutcomes)> {
    let key = &live.key;
    live.hold_joins();
    let members = live.member_ids();
    if !members.is_empty() && live.object_type.execution != Execution::PerActor {
        let moved = super::aggregate::relocate_with_members(server, live, to, &members).await;
        if moved.is_err() {
            live.reopen();
        }
        return moved;
    }
    let at = match seal_and_hand_over(server, live, to, Carry::Alone).await {
        Ok(at) => at,
        Err(e) => {
            live.reopen();
            return Err(e);
        }
    };
    // The shell runs on the target: now each member, on its own (ToSpot already goes to
    // the target; ToActor follows each member's own owner).
    let mut outcomes = Vec::with_capacity(members.len());
    for member in members {
        let outcome = relocate_member(server, &member, &key.id, &at.rid).await;
        if let Err(e) = &outcome {
            tracing::warn!(object = %key, member = %member, error = %e, "a member did not follow its Spot: it stays here");
        }
        outcomes.push((member, outcome));
    }
    Ok((at, outcomes))
}

/// Moves member `actor` of the PerActor Spot `spot` to node `to`, where the Spot runs now.
async fn relocate_member(server: &Moving, actor: &str, spot: &str, to: &str) -> Result<Location> {
    let id =
        crate::object::ActorId::new(actor).map_err(|e| Error::InvalidArgument(e.to_string()))?;
    let key = ObjectKey::from(&id);
    let live = server.registry.get(&key).ok_or_else(|| {
        Error::new(
            ErrorKind::NotFound,
            format!("{key} does not run on this node"),
        )
    })?;
    if live.membership().is_none_or(|m| m.as_str() != spot) {
        return Err(Error::new(
            ErrorKind::Unavailable,
            format!("{key} left Spot {spot} meanwhile"),
        ));
    }
    relocatable_type(&live)?;
    seal_and_hand_over(server, &live, Some(to), Carry::WithSpot(spot.to_string())).await
}

/// Seals `live` at its next turn boundary and hands it over; the move is counted by how
/// it ended.
async fn seal_and_hand_over(
    server: &Moving,
    live: &Arc<LiveObject>,
    to: Option<&str>,
    carry: Carry,
) -> Result<Location> {
    let started = std::time::Instant::now();
    let kind = live.key.kind.into();
    let route = server.env.route();
    let span = tracing::info_span!(
        "zlink.relocation",
        mesh = %route.mesh_name,
        rid = %route.rid,
        object = %live.key,
        to = to.unwrap_or("placement"),
        outcome = tracing::field::Empty,
    );
    server.env.events().emit(|| Happened::RelocationStarted {
        kind,
        id: live.key.id.to_string(),
    });
    let handed_over = seal_then_hand_over(server, live, to, carry)
        .instrument(span.clone())
        .await;
    let (moved, outcome) = match handed_over {
        Ok(HandOver::Moved(at)) => (Ok(at), MoveOutcome::Moved),
        Ok(HandOver::Lost(e)) => (Err(e), MoveOutcome::Lost),
        Ok(HandOver::Cancelled(e)) | Err(e) => (Err(e), MoveOutcome::Cancelled),
        Ok(HandOver::Declined(_)) => (
            Err(Error::new(ErrorKind::Rejected, "the target declined")),
            MoveOutcome::Cancelled,
        ),
    };
    server.env.meter().moved(kind, outcome, started);
    span.record("outcome", outcome.as_str());
    server.env.events().emit(|| Happened::RelocationEnded {
        kind,
        id: live.key.id.to_string(),
        outcome: outcome.as_str(),
        to: moved.as_ref().ok().map(|at| at.rid.clone()),
        millis: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    });
    moved
}

async fn seal_then_hand_over(
    server: &Moving,
    live: &Arc<LiveObject>,
    to: Option<&str>,
    carry: Carry,
) -> Result<HandOver> {
    let key = &live.key;
    let _moving = live.transition()?;
    let route = prepare(server, live, to)
        .instrument(tracing::debug_span!("zlink.relocation.prepare"))
        .await?;
    let (resume_tx, resume_rx) = oneshot::channel();
    let (job, mut captured_rx) = MoveSeal::job(live, &server.departures, resume_rx);
    if !live.deliver_notice(job) {
        return Err(Error::new(
            ErrorKind::Unavailable,
            format!("{key} is closing"),
        ));
    }
    let sealed = match await_seal(live, &mut captured_rx, route.deadline)
        .instrument(tracing::debug_span!("zlink.relocation.seal"))
        .await
    {
        Ok(sealed) => sealed,
        Err((e, late)) => {
            if let Some(late) = late {
                super::seal::unseal(live, &server.departures, late);
                let _ = resume_tx.send(Resume::Cancelled);
            }
            return Err(e);
        }
    };
    let sealed_at = std::time::Instant::now();
    let carried = sealed
        .state
        .as_ref()
        .and_then(|state| state.as_ref().ok())
        .map_or(0, Vec::len)
        + sealed.backlog.iter().map(|(_, bytes)| bytes).sum::<usize>();
    let resume = std::sync::Mutex::new(Some(resume_tx));
    let take_resume = || resume.lock_unpoisoned().take();
    let outcome = hand_over(server, live, route, sealed, carry, || {
        if let Some(resume) = take_resume() {
            let _ = resume.send(Resume::Moved);
        }
    })
    .instrument(tracing::debug_span!("zlink.relocation.hand_over"))
    .await;
    // Not handed over: the object's loop runs on.
    if let Some(resume) = take_resume() {
        let _ = resume.send(Resume::Cancelled);
    }
    if matches!(outcome, HandOver::Moved(_)) {
        server
            .env
            .meter()
            .carried(key.kind.into(), carried, sealed_at);
    }
    Ok(outcome)
}

/// Waits until `deadline` for `live`'s seal. A seal that came too late (after the wait
/// gave up, before it stopped listening) is handed back with the error, to be cancelled.
pub(super) async fn await_seal(
    live: &LiveObject,
    captured: &mut oneshot::Receiver<Captured>,
    deadline: Instant,
) -> std::result::Result<Captured, (Error, Option<Captured>)> {
    let key = &live.key;
    match tokio::time::timeout_at(deadline, &mut *captured).await {
        Ok(Ok(sealed)) => Ok(sealed),
        Ok(Err(_)) => Err((
            Error::new(ErrorKind::Unavailable, format!("{key} stopped")),
            None,
        )),
        Err(_) => {
            // From here the object's loop cannot hand a seal over: it undoes it itself.
            captured.close();
            let late = captured.try_recv().ok();
            let late_error = Error::new(
                ErrorKind::DeadlineExceeded,
                format!("{key}'s handler did not reach a boundary in time"),
            );
            Err((late_error, late))
        }
    }
}

/// Checks the target and takes the permits and the connection a move needs.
pub(crate) async fn prepare(server: &Moving, live: &LiveObject, to: Option<&str>) -> Result<Route> {
    let reserve = match live.object_type.relocation {
        Relocation::Preserve => MAX_CAPTURED_STATE_BYTES,
        _ => 0,
    };
    prepare_reserving(server, live, to, reserve).await
}

/// [`prepare`], reserving `reserve` bytes of state in flight.
pub(super) async fn prepare_reserving(
    server: &Moving,
    live: &LiveObject,
    to: Option<&str>,
    reserve: usize,
) -> Result<Route> {
    let deadline = Instant::now() + RELOCATION_DEADLINE;
    let target = choose_target(server, live, to)?;
    let permit = server
        .relocations
        .permits()
        .outbound_by(reserve, deadline)
        .await?;
    let node = server.env.owner_link().node()?;
    let link = node
        .calls()
        .peer(&target, Instant::now() + node.settings().send_timeout)
        .await
        .map_err(|e| Error::new(ErrorKind::Unavailable, format!("node {target}: {e}")))?;
    Ok(Route {
        node,
        link,
        target,
        permit,
        deadline,
    })
}
