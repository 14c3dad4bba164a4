//! The source side of one move: choose the target, seal, capture, restore on the target,
//! then relay and cut over (see the [module](super) for the whole flow).

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::bound_routes::{BoundMove, BoundSeal};
use super::follow::{Departure, RelayItem};
use super::ownership::{committed, reclaim, Reclaimed};
use super::permits::Permit;
use super::placed_state::{place_state, StoredState};
use super::record::{CutoverRecord, MovedState, RelayReady, RestoreRecord, RestoreReply};
use super::RelocationFaults;
use super::INLINE_STATE_BYTES;
use super::{job_to_held, MAX_CAPTURED_STATE_BYTES, RELOCATION_DEADLINE};
use crate::address::Location;
use crate::address::{ObjectKey, ObjectKind};
use crate::mesh::peer_table::PeerLink;
use crate::mesh::MeshNode;
use crate::object::authority::AuthorityState;
use crate::object::authority_store::Versioned;
use crate::object::live_object::{Captured, LiveObject, ObjectJob, Resume};
use crate::object::membership::Execution;
use crate::object::owner_link::{ObjectCommand, OwnerLink};
use crate::object::server::ObjectServer;
use crate::object::spot::Relocation;
use crate::sync::LockUnpoisoned;
use crate::wire::Command;
use crate::{Error, ErrorKind, Result};

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
    server: &Arc<ObjectServer>,
    key: &ObjectKey,
    to: Option<&str>,
) -> Result<Location> {
    server.unless_killed(relocate_now(server, key, to)).await
}

async fn relocate_now(
    server: &Arc<ObjectServer>,
    key: &ObjectKey,
    to: Option<&str>,
) -> Result<Location> {
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
    server: &Arc<ObjectServer>,
    live: &Arc<LiveObject>,
    to: Option<&str>,
) -> Result<(Location, MemberOutcomes)> {
    server
        .unless_killed(relocate_spot_now(server, live, to))
        .await
}

async fn relocate_spot_now(
    server: &Arc<ObjectServer>,
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
async fn relocate_member(
    server: &Arc<ObjectServer>,
    actor: &str,
    spot: &str,
    to: &str,
) -> Result<Location> {
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

/// Seals `live` at its next turn boundary and hands it over.
async fn seal_and_hand_over(
    server: &Arc<ObjectServer>,
    live: &Arc<LiveObject>,
    to: Option<&str>,
    carry: Carry,
) -> Result<Location> {
    let key = &live.key;
    let route = prepare(server, live, to).await?;
    let (captured_tx, mut captured_rx) = oneshot::channel();
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
    let sealed = match await_seal(live, &mut captured_rx, route.deadline).await {
        Ok(sealed) => sealed,
        Err((e, late)) => {
            if let Some(late) = late {
                cancel_seal(server, live, late);
                let _ = resume_tx.send(Resume::Cancelled);
            }
            return Err(e);
        }
    };
    let resume = std::sync::Mutex::new(Some(resume_tx));
    let take_resume = || resume.lock_unpoisoned().take();
    let outcome = hand_over(server, live, route, sealed, carry, || {
        if let Some(resume) = take_resume() {
            let _ = resume.send(Resume::Moved);
        }
    })
    .await;
    // Not handed over: the object's loop runs on.
    if let Some(resume) = take_resume() {
        let _ = resume.send(Resume::Cancelled);
    }
    match outcome {
        HandOver::Moved(at) => Ok(at),
        HandOver::Lost(e) | HandOver::Cancelled(e) => Err(e),
        HandOver::Declined(_) => Err(Error::new(ErrorKind::Rejected, "the target declined")),
    }
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

/// Undoes a seal whose move ends before relay-ready: the captured queue goes back ahead
/// of what the hold kept, and the object admits again.
pub(super) fn cancel_seal(server: &ObjectServer, live: &LiveObject, sealed: Captured) {
    sealed.departure.cancel(live, sealed.backlog);
    server.relocations.departures().remove(&sealed.departure);
}

/// Checks the target and takes the permits and the connection a move needs.
pub(crate) async fn prepare(
    server: &ObjectServer,
    live: &LiveObject,
    to: Option<&str>,
) -> Result<Route> {
    let reserve = match live.object_type.relocation {
        Relocation::Preserve => MAX_CAPTURED_STATE_BYTES,
        _ => 0,
    };
    prepare_reserving(server, live, to, reserve).await
}

/// [`prepare`], reserving `reserve` bytes of state in flight.
pub(super) async fn prepare_reserving(
    server: &ObjectServer,
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

/// Hands a sealed object to the target: restore, then (past relay-ready) relay and cut
/// over. Before relay-ready a failure puts the object's queue back (it runs on here);
/// `moved` runs once the object is handed over, before the commit is known.
pub(crate) async fn hand_over(
    server: &Arc<ObjectServer>,
    live: &Arc<LiveObject>,
    route: Route,
    sealed: Captured,
    carry: Carry,
    moved: impl FnOnce(),
) -> HandOver {
    let (join, with_spot) = match carry {
        Carry::Alone => (None, None),
        Carry::Join(intent) => (Some(intent), None),
        Carry::WithSpot(spot) => (None, Some(spot)),
    };
    let Route {
        node,
        link,
        target,
        mut permit,
        deadline,
    } = route;
    let key = &live.key;
    let Captured {
        authority,
        backlog,
        timers,
        state,
        departure,
    } = sealed;
    let cancel = |backlog, outcome: HandOver| {
        tracing::info!(object = %key, "move cancelled before relay-ready: the object runs on here");
        departure.cancel(live, backlog);
        server.relocations.departures().remove(&departure);
        outcome
    };
    let reference = |relocation_id: &str| format!("zlink:state:{relocation_id}");
    if authority.record.state != AuthorityState::Ready {
        let closing = Error::new(ErrorKind::Unavailable, format!("{key} is closing"));
        return cancel(backlog, HandOver::Cancelled(closing));
    }
    let state = match state.transpose() {
        Ok(state) => state,
        Err(e) => {
            let failed = Error::new(
                ErrorKind::InternalFailure,
                format!("capturing {key}'s state failed: {e}"),
            );
            return cancel(backlog, HandOver::Cancelled(failed));
        }
    };
    if state
        .as_ref()
        .is_some_and(|s| s.len() > MAX_CAPTURED_STATE_BYTES)
    {
        let oversized = Error::new(
            ErrorKind::CapacityExceeded,
            format!("{key}'s captured state exceeds {MAX_CAPTURED_STATE_BYTES} bytes"),
        );
        return cancel(backlog, HandOver::Cancelled(oversized));
    }
    permit.shrink_to(state.as_ref().map_or(0, Vec::len));
    let joining = join.is_some();
    let relocation_id = crate::object::id_uuid_v4();
    // Routes bound to the Actor outside it hold what they send from here on; a move
    // that does not hand it over releases them.
    let (bound_seal, bound) =
        match seal_bound_routes(server, live, &authority, &relocation_id).await {
            Ok(sealed) => sealed,
            Err(e) => return cancel(backlog, HandOver::Cancelled(e)),
        };
    let placed = place_state(server, reference(&relocation_id), state, INLINE_STATE_BYTES);
    let state = match placed.await {
        Ok(state) => state,
        Err(e) => return cancel(backlog, HandOver::Cancelled(e)),
    };
    // A state left in the Relocation Store is removed once the target has read it (or
    // the move is cancelled); its retention bounds it if this node dies first.
    let _payload = StoredState::of(server, &state);
    let record = RestoreRecord {
        kind: kind_code(key),
        relocation_id: relocation_id.clone(),
        object: moved_object(live, &authority, state, timers, bound),
        join,
        with_spot,
        members: Vec::new(),
    };
    let ready = match restore_on_target(
        &node,
        &link,
        key,
        &record,
        deadline,
        server.relocations.faults(),
    )
    .await
    {
        Ok(RestoreReply::Ready(ready)) => ready,
        Ok(RestoreReply::Declined { reply }) => {
            return cancel(backlog, HandOver::Declined(Bytes::from(reply)))
        }
        Err(e) => match reclaim(server, key, &authority).await {
            Reclaimed::Taken(ready) => ready,
            Reclaimed::Kept(kept) => {
                live.set_authority(kept);
                return cancel(backlog, HandOver::Cancelled(e));
            }
            Reclaimed::Stopped => return cancel(backlog, HandOver::Cancelled(e)),
        },
    };
    tracing::info!(object = %key, relocation = %relocation_id, target = %target, "relay-ready: handing over");
    if let Some(seal) = bound_seal {
        seal.handed_over();
    }

    // Past relay-ready: no way back. Saved queue, hold, then what follows, in order.
    let relay = relay_to(server, &node, link, live, &departure, backlog, &ready);
    moved();
    server.registry.remove(live);
    leave_source_spot(server, live, &authority, joining);
    // This node's own callers are told as a remote sender is: the route to here is old.
    server
        .resolver
        .moved(key, &authority.record.fence, server.env.route());
    let done = send_cutover(&relay, server.relocations.faults(), key, &relocation_id);
    drop(relay);
    let committed = committed(server, key, &ready, done, deadline).await;
    drop(permit);
    finish(server, &departure, server.relocations.follow_duration());
    if !committed {
        return HandOver::Lost(Error::new(
            ErrorKind::Unavailable,
            format!("{key} was handed to {target}, which did not commit it: it is unavailable"),
        ));
    }
    let at = Location {
        generation: ready.target_fence.object_generation,
        mesh_name: ready.target_route.mesh_name.clone(),
        rid: ready.target_route.rid.clone(),
    };
    HandOver::Moved(at)
}

/// Relay-ready was accepted for `live`: its saved queue (`backlog`) goes to the target
/// first, then its hold, then whatever still arrives, all through one relay.
pub(super) fn relay_to(
    server: &ObjectServer,
    node: &Arc<MeshNode>,
    link: PeerLink,
    live: &LiveObject,
    departure: &Arc<Departure>,
    backlog: Vec<(ObjectJob, usize)>,
    ready: &RelayReady,
) -> tokio::sync::mpsc::UnboundedSender<RelayItem> {
    let saved = backlog
        .into_iter()
        .filter_map(|(job, _)| job_to_held(&live.object_type, job))
        .collect();
    departure.start_relay(server, node, link, ready, saved)
}

/// Sends the cutover of `key` behind everything relayed so far; the answer says the
/// target committed (the channel closes unanswered when it was not sent).
pub(super) fn send_cutover(
    relay: &tokio::sync::mpsc::UnboundedSender<RelayItem>,
    faults: RelocationFaults,
    key: &ObjectKey,
    relocation_id: &str,
) -> oneshot::Receiver<Result<Bytes>> {
    let (done_tx, done_rx) = oneshot::channel();
    let cutover = CutoverRecord {
        kind: kind_code(key),
        relocation_id: relocation_id.to_string(),
    };
    match cutover.encode() {
        Ok(payload) if !faults.drops_cutover() => {
            let _ = relay.send(RelayItem::Control {
                command: Command::RelocationCutover,
                payload,
                done: done_tx,
            });
        }
        _ => drop(done_tx),
    }
    done_rx
}

/// `live` as it moves: sealed under `authority`, with its placed state and its timers.
pub(super) fn moved_object(
    live: &LiveObject,
    authority: &Versioned,
    state: Option<MovedState>,
    timers: Vec<crate::object::timer::TimerRecord>,
    bound: Vec<u8>,
) -> super::record::MovedObject {
    super::record::MovedObject {
        stable_type: live.object_type.stable_type.to_string(),
        source_fence: authority.record.fence.clone(),
        source_version: authority.version.0.clone(),
        state,
        timers,
        bound,
    }
}

/// Seals the routes bound to Actor `live` outside it for the move `relocation_id` (a
/// Spot has none): the seal, released unless handed over, and what it carries.
pub(super) async fn seal_bound_routes(
    server: &ObjectServer,
    live: &LiveObject,
    authority: &Versioned,
    relocation_id: &str,
) -> Result<(Option<BoundSeal>, Vec<u8>)> {
    if live.key.kind != ObjectKind::Actor {
        return Ok((None, Vec::new()));
    }
    let moving = BoundMove {
        actor: live.key.id.to_string(),
        generation: authority.record.fence.object_generation,
        relocation_id: relocation_id.to_string(),
    };
    BoundSeal::take(server.relocations.bound_routes(), moving).await
}

/// The record code of `key`'s namespace.
pub(super) fn kind_code(key: &ObjectKey) -> char {
    match key.kind {
        ObjectKind::Actor => 'a',
        ObjectKind::Spot => 's',
    }
}

/// What may move by itself: not an Entry Spot, not a type declared `disable`, not an
/// Actor of a User Spot (it moves with its Spot).
fn check_movable(live: &LiveObject) -> Result<()> {
    if live.is_entry() {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{} is an Entry Spot: it stays with its node", live.key),
        ));
    }
    relocatable_type(live)?;
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

/// `Rejected` for an object whose type is declared `relocation = disable`: it never
/// moves, and asking stops nothing.
pub(super) fn relocatable_type(live: &LiveObject) -> Result<()> {
    if live.object_type.relocation == Relocation::Disable {
        return Err(Error::new(ErrorKind::Rejected, disabled_type(live)));
    }
    Ok(())
}

/// Why `live` may not move: its type is declared `relocation = disable`.
pub(super) fn disabled_type(live: &LiveObject) -> String {
    format!(
        "{} is of type {}, declared relocation = disable",
        live.key, live.object_type.stable_type
    )
}

/// The named node, or the one placement picks among the others serving the type.
pub(super) fn choose_target(
    server: &ObjectServer,
    live: &LiveObject,
    to: Option<&str>,
) -> Result<String> {
    if to == Some(server.env.route().rid.as_str()) {
        return Err(Error::InvalidArgument(format!(
            "{} runs on {} already",
            live.key,
            server.env.route().rid
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

/// Sends the restore (command 31) and waits for relay-ready (or a Join's decline).
pub(super) async fn restore_on_target(
    node: &Arc<MeshNode>,
    link: &PeerLink,
    key: &ObjectKey,
    record: &RestoreRecord,
    deadline: Instant,
    faults: RelocationFaults,
) -> Result<RestoreReply> {
    let call = ObjectCommand::control(Command::RelocationRestore, &key.id, record.encode()?);
    let admit_by = Instant::now() + node.settings().send_timeout;
    let reply = OwnerLink::new(Arc::downgrade(node))
        .request(link, &call, deadline, admit_by)
        .await?;
    let reply = RestoreReply::decode(&reply)?;
    if faults.loses_relay_ready() {
        return Err(Error::new(
            ErrorKind::Unavailable,
            "the relay-ready answer was lost (test fault)",
        ));
    }
    if let RestoreReply::Ready(ready) = &reply {
        let source = &record.object.source_fence;
        let target = &ready.target_fence;
        if target.object_generation != source.object_generation
            || target.owner_generation != source.owner_generation + 1
        {
            return Err(Error::new(
                ErrorKind::ProtocolError,
                "relay-ready names another incarnation or owner generation",
            ));
        }
    }
    Ok(reply)
}

/// The Actor is no longer a member of the Spot it belonged to here. A Join tells that
/// Spot (`on_leave_actor`, one-way); a host move does not (the Actor did not leave its
/// Spot: it moved with it, or from one Entry Spot to another).
fn leave_source_spot(
    server: &ObjectServer,
    live: &LiveObject,
    authority: &Versioned,
    joining: bool,
) {
    let Some(spot) = live.membership() else {
        return;
    };
    let Some(previous) = server.registry.get(&ObjectKey::from(&spot)) else {
        return;
    };
    previous.remove_member(&live.key.id);
    if joining {
        if let Ok(id) = crate::object::ActorId::new(&live.key.id) {
            let actor = crate::object::ActorRef::at(id, authority.location());
            crate::object::membership::notify_left(&previous, actor);
        }
    }
}

/// The move is over on this node: the old route is followed for `follow` (none at 0).
pub(super) fn finish(
    server: &Arc<ObjectServer>,
    departure: &Arc<Departure>,
    follow: std::time::Duration,
) {
    if follow.is_zero() {
        server.relocations.departures().remove(departure);
        return;
    }
    departure.committed(Instant::now() + follow);
    let server = Arc::downgrade(server);
    let departure = departure.clone();
    let until = Instant::now() + follow;
    if let Some(layer) = server.upgrade() {
        let cancel = layer.env.cancel().clone();
        layer.env.tracker().spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => {}
                _ = cancel.cancelled() => {}
            }
            if let Some(layer) = server.upgrade() {
                layer.relocations.departures().remove(&departure);
            }
        });
    }
}
