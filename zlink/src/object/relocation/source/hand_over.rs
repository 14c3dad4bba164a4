//! The hand-over of a sealed object: restore it on the target, relay what is queued, cut
//! over, and finish on the source.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::super::seal::Captured;
use super::checks::kind_code;
use super::{Carry, HandOver, JoinIntent, Route};
use crate::address::Location;
use crate::address::{ObjectKey, ObjectKind};
use crate::mesh::peer_table::PeerLink;
use crate::mesh::MeshNode;
use crate::object::authority::AuthorityState;
use crate::object::authority_store::Versioned;
use crate::object::bound_routes::{BoundMove, BoundSeal};
use crate::object::follow::{Departure, RelayItem};
use crate::object::live_object::LiveObject;
use crate::object::object_job::ObjectJob;
use crate::object::owner_link::{ObjectCommand, OwnerLink};
use crate::object::registry::ObjectRegistry;
use crate::object::relocation::job_to_held;
use crate::object::relocation::ownership::{committed, reclaim, Reclaimed};
use crate::object::relocation::placed_state::{place_state, StoredState};
use crate::object::relocation::record::{
    CutoverRecord, MovedState, RelayReady, RestoreRecord, RestoreReply,
};
use crate::object::relocation::Moving;
use crate::object::relocation::RelocationFaults;
use crate::object::relocation::Relocations;
use crate::object::relocation::INLINE_STATE_BYTES;
use crate::object::relocation_state::MAX_CAPTURED_STATE_BYTES;
use crate::wire::Command;
use crate::{Error, ErrorKind, Result};

/// Hands a sealed object to the target: restore, then (past relay-ready) relay and cut
/// over. Before relay-ready a failure puts the object's queue back (it runs on here);
/// `moved` runs once the object is handed over, before the commit is known.
pub(crate) async fn hand_over(
    server: &Moving,
    live: &Arc<LiveObject>,
    route: Route,
    sealed: Captured,
    carry: Carry,
    moved: impl FnOnce(),
) -> HandOver {
    // The follow duration of this move is the one in force when it started.
    let follow = server.relocations.follow_duration();
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
        server.departures.remove(&departure);
        outcome
    };
    let state = match checked_state(key, &authority, state) {
        Ok(state) => state,
        Err(e) => return cancel(backlog, HandOver::Cancelled(e)),
    };
    permit.shrink_to(state.as_ref().map_or(0, Vec::len));
    let joining = join.is_some();
    let relocation_id = crate::object::id_uuid_v4();
    let unit = MoveUnit {
        live,
        authority: &authority,
        relocation_id: &relocation_id,
    };
    // Routes bound to the Actor outside it hold what they send from here on; a move
    // that does not hand it over releases them. A state left in the Relocation Store is
    // removed once the target has read it (or the move is cancelled); its retention
    // bounds it if this node dies first.
    let (record, bound_seal, _payload) = match unit
        .restore_record(server, state, timers, join, with_spot)
        .await
    {
        Ok(prepared) => prepared,
        Err(e) => return cancel(backlog, HandOver::Cancelled(e)),
    };
    let ready = match unit
        .restored(server, (&node, &link), &record, deadline)
        .await
    {
        Ok(ready) => ready,
        Err(outcome) => return cancel(backlog, outcome),
    };
    tracing::info!(object = %key, relocation = %relocation_id, target = %target, "relay-ready: handing over");
    if let Some(seal) = bound_seal {
        seal.handed_over();
    }

    // Past relay-ready: no way back. Saved queue, hold, then what follows, in order.
    let relay = relay_to(&node, link, live, &departure, backlog, &ready);
    moved();
    server.registry.remove(live);
    leave_source_spot(&server.registry, live, &authority, joining);
    // This node's own callers are told as a remote sender is: the route to here is old.
    server
        .resolver
        .moved(key, &authority.record.fence, server.env.route());
    let done = send_cutover(&relay, server.faults, key, &relocation_id);
    drop(relay);
    let committed = committed(server, key, &ready, &authority.version, done, deadline).await;
    drop(permit);
    finish(server, &departure, follow);
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

/// The captured state of `key` a move may carry: none of a closing object, of a capture
/// that failed, or over [`MAX_CAPTURED_STATE_BYTES`].
fn checked_state(
    key: &ObjectKey,
    authority: &Versioned,
    state: Option<Result<Vec<u8>>>,
) -> Result<Option<Vec<u8>>> {
    if authority.record.state != AuthorityState::Ready {
        return Err(Error::new(
            ErrorKind::Unavailable,
            format!("{key} is closing"),
        ));
    }
    let state = state.transpose().map_err(|e| {
        Error::new(
            ErrorKind::InternalFailure,
            format!("capturing {key}'s state failed: {e}"),
        )
    })?;
    if state
        .as_ref()
        .is_some_and(|s| s.len() > MAX_CAPTURED_STATE_BYTES)
    {
        return Err(Error::new(
            ErrorKind::CapacityExceeded,
            format!("{key}'s captured state exceeds {MAX_CAPTURED_STATE_BYTES} bytes"),
        ));
    }
    Ok(state)
}

/// One sealed object on its way out, under one relocation ID.
struct MoveUnit<'a> {
    live: &'a LiveObject,
    authority: &'a Versioned,
    relocation_id: &'a str,
}

impl MoveUnit<'_> {
    /// Its restore: the routes bound outside it sealed for the move (and what they
    /// carry), its state placed inline or in the Relocation Store (removed when the last
    /// value returned drops).
    async fn restore_record(
        &self,
        server: &Moving,
        state: Option<Vec<u8>>,
        timers: Vec<crate::object::timer::TimerRecord>,
        join: Option<JoinIntent>,
        with_spot: Option<String>,
    ) -> Result<(RestoreRecord, Option<BoundSeal>, Option<StoredState>)> {
        let (live, authority) = (self.live, self.authority);
        let (bound_seal, bound) =
            seal_bound_routes(&server.relocations, live, authority, self.relocation_id).await?;
        let reference = format!("zlink:state:{}", self.relocation_id);
        let state = place_state(&server.hosting, reference, state, INLINE_STATE_BYTES).await?;
        let payload = StoredState::of(&server.hosting, server.env.tracker(), &state);
        let record = RestoreRecord {
            kind: kind_code(&live.key),
            relocation_id: self.relocation_id.to_string(),
            object: moved_object(live, authority, state, timers, bound),
            join,
            with_spot,
            members: Vec::new(),
        };
        Ok((record, bound_seal, payload))
    }

    /// The target's relay-ready for `record`, sent on `to` by `deadline`. A restore whose
    /// answer was lost may still have been taken: the authority is re-fenced here before
    /// the object runs on ([`reclaim`]). The outcome that cancels the move otherwise.
    async fn restored(
        &self,
        server: &Moving,
        to: (&Arc<MeshNode>, &PeerLink),
        record: &RestoreRecord,
        deadline: Instant,
    ) -> std::result::Result<RelayReady, HandOver> {
        let key = &self.live.key;
        match restore_on_target(to.0, to.1, key, record, deadline, server.faults).await {
            Ok(RestoreReply::Ready(ready)) => Ok(ready),
            Ok(RestoreReply::Declined { reply }) => Err(HandOver::Declined(Bytes::from(reply))),
            Err(e) => match reclaim(&server.env, key, self.authority).await {
                Reclaimed::Taken(ready) => Ok(ready),
                Reclaimed::Kept(kept) => {
                    self.live.set_authority(kept);
                    Err(HandOver::Cancelled(e))
                }
                Reclaimed::Stopped => Err(HandOver::Cancelled(e)),
            },
        }
    }
}

/// Relay-ready was accepted for `live`: its saved queue (`backlog`) goes to the target
/// first, then its hold, then whatever still arrives, all through one relay.
pub(crate) fn relay_to(
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
    departure.start_relay(
        node,
        link,
        (ready.target_fence.clone(), ready.target_route.clone()),
        saved,
    )
}

/// Sends the cutover of `key` behind everything relayed so far; the answer says the
/// target committed (the channel closes unanswered when it was not sent).
pub(crate) fn send_cutover(
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
pub(crate) fn moved_object(
    live: &LiveObject,
    authority: &Versioned,
    state: Option<MovedState>,
    timers: Vec<crate::object::timer::TimerRecord>,
    bound: Vec<u8>,
) -> crate::object::relocation::record::MovedObject {
    crate::object::relocation::record::MovedObject {
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
pub(crate) async fn seal_bound_routes(
    relocations: &Relocations,
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
    BoundSeal::take(relocations.bound_routes(), moving).await
}

/// Sends the restore (command 31) and waits for relay-ready (or a Join's decline).
pub(crate) async fn restore_on_target(
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
pub(super) fn leave_source_spot(
    registry: &ObjectRegistry,
    live: &LiveObject,
    authority: &Versioned,
    joining: bool,
) {
    let Some(spot) = live.membership() else {
        return;
    };
    let Some(previous) = registry.get(&ObjectKey::from(&spot)) else {
        return;
    };
    previous.remove_member(&live.key.id);
    if joining {
        if let Ok(id) = crate::object::ActorId::new(&live.key.id) {
            let actor = crate::object::ActorRef::at(id, authority.location());
            crate::object::joining::notify_left(&previous, actor);
        }
    }
}

/// The move is over on this node: the old route is followed for `follow` (none at 0).
pub(crate) fn finish(server: &Moving, departure: &Arc<Departure>, follow: std::time::Duration) {
    if follow.is_zero() {
        server.departures.remove(departure);
        return;
    }
    departure.committed(Instant::now() + follow);
    let server = server.downgrade();
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
                layer.departures.remove(&departure);
            }
        });
    }
}
