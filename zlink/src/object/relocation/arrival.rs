//! The target side of one move: build the arriving object under the fence it will own it
//! with (its mailbox is the temporary queue: it admits the relay, dispatches nothing),
//! then commit the owner change on the cutover or 1000 ms after relay-ready.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::FutureExt;
use tokio::sync::{oneshot, OnceCell};
use tokio::time::Instant;

use super::bound_routes::SwitchOnOpen;
use super::permits::Permit;
use super::record::{JoinIntent, MovedObject, MovedState, RelayReady, RestoreRecord, RestoreReply};
use super::{CUTOVER_FALLBACK, RELOCATION_DEADLINE};
use crate::address::{ActorId, ObjectKey, ObjectKind, SpotId};
use crate::address::{ActorRef, Location};
use crate::object::authority::{Authority, AuthorityState, ObjectShape, OwnerFence};
use crate::object::authority_store::{Fenced, Versioned};
use crate::object::instance::Instance;
use crate::object::live_object::{Arrived, LiveObject};
use crate::object::membership::{JoinDecision, JoinOutcome};
use crate::object::object_type::TypeDef;
use crate::object::server::ObjectServer;
use crate::object::spot::Relocation;
use crate::store::StoreVersion;
use crate::store::{PayloadRead, PayloadRef};
use crate::sync::LockUnpoisoned;
use crate::{Error, ErrorKind, Result};

/// One object arriving on this node, until its owner change committed (or failed).
pub(crate) struct Arrival {
    relocation_id: String,
    source_version: StoreVersion,
    expected: Authority,
    pub(super) live: Arc<LiveObject>,
    go: Mutex<Option<oneshot::Sender<bool>>>,
    outcome: OnceCell<Result<()>>,
    deadline: Instant,
    /// The inbound permit, returned when the arrival settles.
    permit: Mutex<Option<Permit>>,
    /// The Join this move carries out, admitted by its Spot (holding a seat there).
    joining: Option<Joining>,
    /// The Spot this Actor stays a member of: a PerActor Spot's shell that moved here
    /// first, or the SpotWide Spot it moves with.
    shell: Option<Arc<LiveObject>>,
    /// The unit this object arrives with (a SpotWide Spot and its members): none of them
    /// dispatches before all of them settled.
    group: Option<Arc<ArrivalGroup>>,
    /// A SpotWide Spot's members' fences, answered again to a repeated restore.
    members: Vec<OwnerFence>,
    /// What the routes bound to the Actor outside it carried here.
    bound: Vec<u8>,
}

impl Arrival {
    /// Opens (or, not committed, closes) the object's dispatch: at once when it arrives
    /// alone, with the rest of its unit otherwise.
    /// `switch` (a committed Actor's bound routes) follows once it dispatches.
    fn release(
        &self,
        go: Option<oneshot::Sender<bool>>,
        committed: bool,
        switch: Option<SwitchOnOpen>,
    ) {
        match (&self.group, go) {
            (Some(group), go) => group.settle(go, committed, switch),
            (None, Some(go)) => {
                let _ = go.send(committed);
                if let (true, Some(switch)) = (committed, switch) {
                    switch.announce();
                }
            }
            (None, None) => {}
        }
    }
}

/// A committed arrival's dispatch, and what follows its opening.
type Opening = (oneshot::Sender<bool>, Option<SwitchOnOpen>);

/// The objects that arrive as one unit: each one's dispatch opens when the last one's
/// owner change settled (committed or failed), so no member runs before its Spot.
pub(super) struct ArrivalGroup {
    /// How many have not settled, and the dispatch of those that committed.
    waiting: Mutex<(usize, Vec<Opening>)>,
}

impl ArrivalGroup {
    pub(super) fn new(size: usize) -> Arc<Self> {
        Arc::new(ArrivalGroup {
            waiting: Mutex::new((size, Vec::new())),
        })
    }

    /// One arrival settled: a committed one waits for the others; a failed one closes.
    fn settle(
        &self,
        go: Option<oneshot::Sender<bool>>,
        committed: bool,
        switch: Option<SwitchOnOpen>,
    ) {
        let mut waiting = self.waiting.lock_unpoisoned();
        waiting.0 = waiting.0.saturating_sub(1);
        match go {
            Some(go) if committed => waiting.1.push((go, switch)),
            Some(go) => {
                let _ = go.send(false);
            }
            None => {}
        }
        if waiting.0 == 0 {
            let opening: Vec<_> = waiting.1.drain(..).collect();
            drop(waiting);
            for (go, switch) in opening {
                let _ = go.send(true);
                if let Some(switch) = switch {
                    switch.announce();
                }
            }
        }
    }
}

/// A Join admitted by its Spot on this node: the seat is taken until the commit.
pub(super) struct Joining {
    spot: SpotId,
    target: Arc<LiveObject>,
    reply: Bytes,
    actor: ActorRef,
}

enum Admitted {
    Yes(Joining),
    Declined(Bytes),
}

/// Runs the Join's admission on its Spot here: the Spot must run here and take Actors of
/// this type; `on_actor_join` decides (an Entry Spot admits every Actor).
async fn admit_join(
    server: &ObjectServer,
    key: &ObjectKey,
    record: &RestoreRecord,
    intent: &JoinIntent,
    object_type: &TypeDef,
) -> Result<Admitted> {
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
        match crate::object::membership::admit(
            &target,
            actor.clone(),
            Bytes::from(intent.request.clone()),
        )
        .await
        {
            Some(JoinDecision::Accept(reply)) => reply,
            Some(JoinDecision::Reject(reply)) => return Ok(Admitted::Declined(reply)),
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
    Ok(Admitted::Yes(Joining {
        spot,
        target,
        reply,
        actor,
    }))
}

/// The arrivals of one node, by object.
#[derive(Default)]
pub(crate) struct Arrivals {
    map: Mutex<HashMap<ObjectKey, Arc<Arrival>>>,
}

impl Arrivals {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, Arc<Arrival>>> {
        self.map.lock_unpoisoned()
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<Arrival>> {
        self.map().get(key).cloned()
    }

    fn remove(&self, key: &ObjectKey, arrival: &Arc<Arrival>) {
        let mut map = self.map();
        if map.get(key).is_some_and(|a| Arc::ptr_eq(a, arrival)) {
            map.remove(key);
        }
    }
}

pub(super) fn ready_of(arrival: &Arrival) -> RelayReady {
    RelayReady {
        target_fence: arrival.expected.fence.clone(),
        target_route: arrival.expected.route.clone(),
        members: arrival.members.clone(),
    }
}

/// The object of `record` may arrive at all: not here already, nor arriving by another
/// move, and this node takes objects in. `Some` answers a repeated restore again.
pub(super) fn check_arriving(
    server: &ObjectServer,
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
    if server.is_draining() {
        return Err(Error::new(
            ErrorKind::Unavailable,
            "this node is relocating its objects away and takes none in",
        ));
    }
    Ok(None)
}

/// The type of `object` (of `kind`) as this node serves it, with the same policy the
/// source moves it under (a state comes exactly with `preserve`).
pub(super) fn arriving_type(
    server: &ObjectServer,
    kind: ObjectKind,
    object: &MovedObject,
) -> Result<Arc<TypeDef>> {
    let stable_type = object.stable_type.as_str();
    let object_type = server.registry.object_type(kind, stable_type)?;
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

/// The authority an arriving object will run under here: its source's with AOG + 1 and
/// this node as the owner.
pub(super) fn expected_authority(
    server: &ObjectServer,
    kind: ObjectKind,
    object: &MovedObject,
    token: &crate::store::LeaseToken,
    home: Option<&SpotId>,
) -> Authority {
    let source = &object.source_fence;
    Authority {
        state: AuthorityState::Ready,
        shape: match kind {
            ObjectKind::Actor => ObjectShape::Actor,
            ObjectKind::Spot => ObjectShape::UserSpot,
        },
        stable_type: object.stable_type.clone(),
        fence: OwnerFence {
            object_generation: source.object_generation,
            owner_generation: source.owner_generation + 1,
            owner: token.owner.0.clone(),
            lease_generation: token.generation,
        },
        route: server.env.route().clone(),
        membership: home.map(ToString::to_string),
        creation_request: None,
    }
}

/// A restore (command 31) from the node `key` leaves: relay-ready, or why not.
pub(crate) async fn arrive(
    server: &Arc<ObjectServer>,
    key: ObjectKey,
    record: RestoreRecord,
) -> Result<RestoreReply> {
    if let Some(again) = check_arriving(server, &key, &record.relocation_id)? {
        return Ok(again);
    }
    if !record.members.is_empty() {
        return super::aggregate_arrival::arrive_with_members(server, key, record).await;
    }
    let object_type = arriving_type(server, key.kind, &record.object)?;
    // An Actor lands in this node's Entry Spot (or the Spot it joins); a Spot in none.
    let entry = match key.kind {
        ObjectKind::Actor => Some(
            server
                .entry
                .as_ref()
                .ok_or_else(|| Error::new(ErrorKind::Unavailable, "this node has no Entry Spot"))?
                .ready()?,
        ),
        ObjectKind::Spot if record.join.is_some() => {
            return Err(Error::new(
                ErrorKind::ProtocolError,
                "a Spot does not join a Spot",
            ))
        }
        ObjectKind::Spot => None,
    };
    let token = admitting_token(server)?;
    let permit = server
        .relocations
        .permits()
        .inbound(record.object.state.as_ref().map_or(0, MovedState::len))?;
    let slot = server.registry.begin_creating(&key, &object_type)?;
    // A Join's Spot admits the Actor before anything is built for it.
    let joining = match &record.join {
        Some(intent) => match admit_join(server, &key, &record, intent, &object_type).await? {
            Admitted::Yes(joining) => Some(joining),
            Admitted::Declined(reply) => {
                return Ok(RestoreReply::Declined {
                    reply: reply.to_vec(),
                })
            }
        },
        None => None,
    };
    // A PerActor Spot's member follows its shell, which arrived here first.
    let with_spot = match &record.with_spot {
        Some(spot) => {
            let spot = SpotId::new(spot)
                .map_err(|e| Error::new(ErrorKind::ProtocolError, format!("a bad Spot ID: {e}")))?;
            let shell = server.registry.get(&ObjectKey::from(&spot));
            match shell {
                Some(shell) if !shell.is_entry() => Some((spot, shell)),
                _ => {
                    return Err(Error::new(
                        ErrorKind::Unavailable,
                        format!("Spot {spot}, which the Actor moves with, does not run here"),
                    ))
                }
            }
        }
        None => None,
    };
    let home = joining
        .as_ref()
        .map(|j| j.spot.clone())
        .or_else(|| with_spot.as_ref().map(|(spot, _)| spot.clone()))
        .or(entry);
    let expected = expected_authority(server, key.kind, &record.object, &token, home.as_ref());
    let deadline = Instant::now() + RELOCATION_DEADLINE;
    let staged = Staged {
        object: &record.object,
        membership: home.clone(),
        deadline,
    };
    let built = build(server, &object_type, &key, &server.handle()?, staged).await;
    let instance = match built {
        Ok(instance) => instance,
        Err(e) => {
            // The Join's seat is given back: nothing arrived.
            if let Some(joining) = &joining {
                joining.target.remove_member(&key.id);
            }
            return Err(e);
        }
    };
    let joined = joining.as_ref().map(|j| JoinOutcome::Accepted {
        spot: j.spot.clone(),
        reply: j.reply.clone(),
    });
    let arrival = Arriving {
        relocation_id: &record.relocation_id,
        object: &record.object,
        expected,
        joined,
        deadline,
        permit: Some(permit),
    }
    .start(
        server,
        key,
        object_type,
        instance,
        Carried {
            joining,
            shell: with_spot.map(|(_, shell)| shell),
            ..Carried::default()
        },
    );
    drop(slot);
    Ok(RestoreReply::Ready(ready_of(&arrival)))
}

/// The lease token this node owns new objects under.
pub(super) fn admitting_token(server: &ObjectServer) -> Result<crate::store::LeaseToken> {
    server.env.lease().admitting_token().ok_or_else(|| {
        Error::new(
            ErrorKind::Unavailable,
            "this node's lease admits no new work",
        )
    })
}

/// What an arrival carries besides its object.
#[derive(Default)]
pub(super) struct Carried {
    pub(super) joining: Option<Joining>,
    pub(super) shell: Option<Arc<LiveObject>>,
    pub(super) group: Option<Arc<ArrivalGroup>>,
    pub(super) members: Vec<OwnerFence>,
}

/// An object about to be registered here as arriving.
pub(super) struct Arriving<'a> {
    pub(super) relocation_id: &'a str,
    pub(super) object: &'a MovedObject,
    pub(super) expected: Authority,
    pub(super) joined: Option<JoinOutcome>,
    pub(super) deadline: Instant,
    pub(super) permit: Option<Permit>,
}

impl Arriving<'_> {
    /// Starts the built `instance` under the fence it will own the object with, not
    /// dispatching: from here its mailbox is the temporary queue, admitting what the
    /// source relays. Commits by itself [`CUTOVER_FALLBACK`] after this if no cutover
    /// came.
    pub(super) fn start(
        self,
        server: &Arc<ObjectServer>,
        key: ObjectKey,
        object_type: Arc<TypeDef>,
        instance: Box<dyn Instance>,
        carried: Carried,
    ) -> Arc<Arrival> {
        let (go, wait) = oneshot::channel();
        let live = LiveObject::start(
            key.clone(),
            object_type,
            Versioned {
                record: self.expected.clone(),
                version: StoreVersion(String::new()),
            },
            instance,
            server.object_host(),
            wait,
            Some(Arrived {
                timers: self.object.timers.clone(),
                joined: self.joined,
            }),
        );
        server.registry.insert(live.clone());
        let arrival = Arc::new(Arrival {
            relocation_id: self.relocation_id.to_string(),
            source_version: StoreVersion(self.object.source_version.clone()),
            expected: self.expected,
            live,
            go: Mutex::new(Some(go)),
            outcome: OnceCell::new(),
            deadline: self.deadline,
            permit: Mutex::new(self.permit),
            joining: carried.joining,
            shell: carried.shell,
            group: carried.group,
            members: carried.members,
            bound: self.object.bound.clone(),
        });
        server
            .relocations
            .arrivals()
            .map()
            .insert(key.clone(), arrival.clone());
        commit_by_fallback(server, key, self.relocation_id.to_string());
        arrival
    }
}

/// No cutover within the fallback: the target commits by itself.
fn commit_by_fallback(server: &Arc<ObjectServer>, key: ObjectKey, relocation_id: String) {
    let weak = Arc::downgrade(server);
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

/// The captured state's bytes: inline, or read from the Relocation Store (a state that
/// is not there, or not whole, is lost data: nothing is built).
async fn fetch_state(server: &ObjectServer, state: &MovedState) -> Result<Bytes> {
    let (reference, len) = match state {
        MovedState::Inline(bytes) => return Ok(Bytes::copy_from_slice(bytes)),
        MovedState::Stored { reference, len } => (reference, *len),
    };
    let store = server
        .relocations
        .required_store("read the moved state from")?;
    let reference = PayloadRef::new(reference.clone()).map_err(Error::from)?;
    match store.read(&reference).await {
        Ok(PayloadRead::Found { bytes, .. }) if bytes.len() as u64 == len => Ok(bytes),
        Ok(PayloadRead::Found { bytes, .. }) => Err(Error::new(
            ErrorKind::DataLost,
            format!("the moved state has {} bytes, not {len}", bytes.len()),
        )),
        Ok(PayloadRead::Missing) => Err(Error::new(
            ErrorKind::DataLost,
            "the moved state is not in the Relocation Store",
        )),
        Err(e) => Err(Error::new(
            ErrorKind::Unavailable,
            format!("the Relocation Store did not give the moved state: {e}"),
        )),
    }
}

/// What an arriving instance is built from.
pub(super) struct Staged<'a> {
    pub(super) object: &'a MovedObject,
    pub(super) membership: Option<SpotId>,
    pub(super) deadline: Instant,
}

/// The hidden instance: the factory's, with the captured state restored (`preserve`).
pub(super) async fn build(
    server: &ObjectServer,
    object_type: &TypeDef,
    key: &ObjectKey,
    handle: &crate::handler::Handle,
    staged: Staged<'_>,
) -> Result<Box<dyn Instance>> {
    let (mut instance, _) = crate::object::creation::stage(
        object_type,
        key,
        handle,
        staged.object.source_fence.object_generation,
        staged.membership,
        staged.deadline,
        None,
    )
    .await?;
    if let Some(state) = &staged.object.state {
        let state = fetch_state(server, state).await?;
        let restored = std::panic::AssertUnwindSafe(async { instance.restore_state(&state) })
            .catch_unwind()
            .await
            .map_err(|_| {
                Error::new(
                    ErrorKind::InternalFailure,
                    "the state adapter's restore panicked",
                )
            })?;
        restored.map_err(|e| {
            Error::new(
                ErrorKind::InternalFailure,
                format!("restoring {key}'s state failed: {e}"),
            )
        })?;
    }
    Ok(instance)
}

/// The cutover (or the fallback): commits the owner change once; a second call gets the
/// first one's outcome.
pub(crate) async fn commit(
    server: &Arc<ObjectServer>,
    key: &ObjectKey,
    relocation_id: &str,
) -> Result<()> {
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

async fn commit_once(
    server: &Arc<ObjectServer>,
    key: &ObjectKey,
    arrival: &Arc<Arrival>,
) -> Result<()> {
    let mut pause = std::time::Duration::from_millis(20);
    let outcome = loop {
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
            Ok(Fenced::Moved) => {
                break match server.env.authority().read(key).await {
                    Ok(Some(current)) if current.record == arrival.expected => Ok(current.version),
                    _ => Err(Error::new(
                        ErrorKind::Unavailable,
                        format!("{key}'s authority changed before the owner change"),
                    )),
                }
            }
            // Unknown or unavailable: dispatch stays closed while the store is asked again.
            Err(e) => {
                if Instant::now() + pause >= arrival.deadline {
                    break Err(Error::new(
                        ErrorKind::Unavailable,
                        format!("the store did not take {key}'s owner change: {e}"),
                    ));
                }
                tracing::warn!(object = %key, error = %e, "owner change not confirmed; asking the store again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(std::time::Duration::from_millis(500));
            }
        }
    };
    server.relocations.arrivals().remove(key, arrival);
    arrival.permit.lock_unpoisoned().take();
    let go = arrival.go.lock_unpoisoned().take();
    match outcome {
        Ok(version) => {
            let ready = Versioned {
                record: arrival.expected.clone(),
                version,
            };
            arrival.live.set_authority(ready);
            // This node's own cached route (to the old owner) is stale now; its next
            // call switches here behind a barrier down that route.
            server.resolver.saw_authority(key, &arrival.expected.fence);
            match &arrival.joining {
                // The Spot joined hears it before the Actor's first turn here.
                Some(joining) => {
                    arrival.live.set_membership(Some(joining.spot.clone()));
                    arrival.live.use_gate_of(Some(&joining.target));
                    let mut actor = joining.actor.clone();
                    actor.rid = server.env.route().rid.clone();
                    crate::object::membership::joined(&joining.target, actor).await;
                }
                None => match &arrival.shell {
                    Some(shell) => {
                        shell.add_member(&key.id);
                    }
                    None if key.kind == ObjectKind::Actor => join_entry(server, key),
                    None => {}
                },
            }
            let switch = match ActorId::new(&key.id) {
                Ok(id) if key.kind == ObjectKind::Actor => {
                    let at = ActorRef::at(id, arrival.live.authority().location());
                    let hooks = server.relocations.bound_routes();
                    SwitchOnOpen::of(hooks, at, &arrival.relocation_id, &arrival.bound)
                }
                _ => None,
            };
            arrival.release(go, true, switch);
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

/// The arrived Actor is a member of this node's Entry Spot (no callback: a move is not a
/// creation or a join).
fn join_entry(server: &ObjectServer, key: &ObjectKey) {
    if let Some(entry) = server.entry.as_ref() {
        if let Some(spot) = server.registry.get(&ObjectKey::from(&entry.id)) {
            spot.add_member(&key.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_dispatches_only_once_every_participant_settled() {
        let group = ArrivalGroup::new(3);
        let ((spot, mut spot_rx), (member, mut member_rx), (lost, mut lost_rx)) =
            (oneshot::channel(), oneshot::channel(), oneshot::channel());
        group.settle(Some(spot), true, None);
        assert!(
            spot_rx.try_recv().is_err(),
            "the Spot waits for its members"
        );
        group.settle(Some(lost), false, None);
        assert_eq!(
            lost_rx.try_recv(),
            Ok(false),
            "a member that did not commit closes"
        );
        assert!(spot_rx.try_recv().is_err());
        group.settle(Some(member), true, None);
        assert_eq!(spot_rx.try_recv(), Ok(true));
        assert_eq!(member_rx.try_recv(), Ok(true));
    }
}
