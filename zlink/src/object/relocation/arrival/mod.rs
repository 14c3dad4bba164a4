//! The target side of one move: build the arriving object under the fence it will own it
//! with (its mailbox is the temporary queue: it admits the relay, dispatches nothing),
//! then commit the owner change on the cutover or 1000 ms after relay-ready.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::{oneshot, OnceCell};
use tokio::time::Instant;

use super::permits::Permit;
use super::record::{MovedObject, MovedState, RelayReady, RestoreRecord, RestoreReply};
use super::RELOCATION_DEADLINE;
use crate::address::ActorRef;
use crate::address::{ObjectKey, ObjectKind, SpotId};
use crate::object::authority::{Authority, OwnerFence};
use crate::object::authority_store::Versioned;
use crate::object::bound_routes::SwitchOnOpen;
use crate::object::instance::Instance;
use crate::object::live_object::LiveObject;
use crate::object::membership::JoinOutcome;
use crate::object::object_job::Arrived;
use crate::object::object_type::TypeDef;
use crate::object::relocation::Moving;
use crate::store::StoreVersion;
use crate::sync::LockUnpoisoned;
use crate::{Error, ErrorKind, Result};

mod build;
mod checks;
mod commit;

pub(super) use build::{build, Staged};
use checks::{admit_join, JoinAdmission};
pub(super) use checks::{arriving_type, check_arriving, expected_authority};
pub(crate) use commit::commit;
use commit::commit_by_fallback;

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
    /// `switch` (a committed Actor's bound routes) is announced just before it dispatches:
    /// its first turn (`on_join_completed` after a Join) can push to its session.
    fn release(
        &self,
        go: Option<oneshot::Sender<bool>>,
        committed: bool,
        switch: Option<SwitchOnOpen>,
    ) {
        match (&self.group, go) {
            (Some(group), go) => group.settle(go, committed, switch),
            (None, Some(go)) => {
                // The binding is back before the first turn, so that turn can push.
                if let (true, Some(switch)) = (committed, switch) {
                    switch.announce();
                }
                let _ = go.send(committed);
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
                if let Some(switch) = switch {
                    switch.announce();
                }
                let _ = go.send(true);
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

/// The Entry Spot an arriving Actor lands in (unless it joins another Spot); a Spot
/// lands in none, and joins none.
fn landing_entry(
    server: &Moving,
    key: &ObjectKey,
    record: &RestoreRecord,
) -> Result<Option<SpotId>> {
    match key.kind {
        ObjectKind::Actor => server
            .entry
            .as_ref()
            .ok_or_else(|| Error::new(ErrorKind::Unavailable, "this node has no Entry Spot"))?
            .ready()
            .map(Some),
        ObjectKind::Spot if record.join.is_some() => Err(Error::new(
            ErrorKind::ProtocolError,
            "a Spot does not join a Spot",
        )),
        ObjectKind::Spot => Ok(None),
    }
}

/// The PerActor Spot `spot` whose member follows its shell: the shell arrived here first.
fn shell_here(server: &Moving, spot: &str) -> Result<(SpotId, Arc<LiveObject>)> {
    let spot = SpotId::new(spot)
        .map_err(|e| Error::new(ErrorKind::ProtocolError, format!("a bad Spot ID: {e}")))?;
    match server.registry.get(&ObjectKey::from(&spot)) {
        Some(shell) if !shell.is_entry() => Ok((spot, shell)),
        _ => Err(Error::new(
            ErrorKind::Unavailable,
            format!("Spot {spot}, which the Actor moves with, does not run here"),
        )),
    }
}

/// A restore (command 31) from the node `key` leaves: relay-ready, or why not.
pub(crate) async fn arrive(
    server: &Moving,
    key: ObjectKey,
    record: RestoreRecord,
) -> Result<RestoreReply> {
    if let Some(again) = check_arriving(server, &key, &record.relocation_id)? {
        return Ok(again);
    }
    if !record.members.is_empty() {
        return super::aggregate_arrival::arrive_with_members(server, key, record).await;
    }
    let object_type = arriving_type(&server.registry, key.kind, &record.object)?;
    let entry = landing_entry(server, &key, &record)?;
    let token = server.env.admitting_token()?;
    let permit = server
        .relocations
        .permits()
        .inbound(record.object.state.as_ref().map_or(0, MovedState::len))?;
    let slot = server.registry.begin_creating(&key, &object_type)?;
    // A Join's Spot admits the Actor before anything is built for it.
    let joining = match &record.join {
        Some(intent) => match admit_join(server, &key, &record, intent, &object_type).await? {
            JoinAdmission::Yes(joining) => Some(joining),
            JoinAdmission::Declined(reply) => {
                return Ok(RestoreReply::Declined {
                    reply: reply.to_vec(),
                })
            }
        },
        None => None,
    };
    let with_spot = match &record.with_spot {
        Some(spot) => Some(shell_here(server, spot)?),
        None => None,
    };
    let home = joining
        .as_ref()
        .map(|j| j.spot.clone())
        .or_else(|| with_spot.as_ref().map(|(spot, _)| spot.clone()))
        .or(entry);
    let expected = expected_authority(
        &server.env,
        &object_type,
        &record.object,
        &token,
        home.as_ref(),
    );
    let deadline = Instant::now() + RELOCATION_DEADLINE;
    let staged = Staged {
        object: &record.object,
        membership: home.clone(),
        deadline,
    };
    let built = build(
        &server.hosting,
        &object_type,
        &key,
        &server.env.handle()?,
        staged,
    )
    .await;
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
        server: &Moving,
        key: ObjectKey,
        object_type: Arc<TypeDef>,
        instance: Box<dyn Instance>,
        carried: Carried,
    ) -> Arc<Arrival> {
        let (go, wait) = oneshot::channel();
        let live = crate::object::launch::start(
            key.clone(),
            object_type,
            Versioned {
                record: self.expected.clone(),
                version: StoreVersion(String::new()),
            },
            instance,
            server.object_host(),
            wait.into(),
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
