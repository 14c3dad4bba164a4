//! The host-level move: every object this node owns goes to other nodes, and the node
//! takes no new ones while it does (digest §7.5, PlannedMaintenance).

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;

use super::source::{relocate, relocate_spot};
use crate::address::Location;
use crate::address::{ActorId, ObjectKey, ObjectKind, SpotId};
use crate::address::{ActorRef, SpotRef};
use crate::object::lifecycle::Relocation;
use crate::object::live_object::LiveObject;
use crate::object::membership::Execution;
use crate::object::relocation::Moving;
use crate::Error;
use crate::Result;

/// The most moves one node runs at once while it relocates everything.
const MAX_DRAIN_CONCURRENCY: usize = 16;

/// Moves a node with `cores` runs at once while it relocates everything: four a core
/// (4 to 16). More only queue for the same cores: each move's pause (and so the wait of
/// the calls that reach it meanwhile) grows while the drain ends no sooner. On 2 cores, 8
/// moves at once drained 100 Actors as fast as 16 with half the calls' p99.
fn drain_concurrency(cores: usize) -> usize {
    cores.saturating_mul(4).clamp(4, MAX_DRAIN_CONCURRENCY)
}

fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Why an object stayed on a node that relocated everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BlockedReason {
    /// Its type is declared `relocation = disable`.
    RelocationDisabled,
    /// An Actor that belongs to a User Spot which stays (the Actor moves only with its
    /// Spot).
    InUserSpot,
    /// A `SpotWide` Spot one of whose member Actors may not move: such a Spot moves only
    /// together with all of its members.
    SpotWithMembers,
}

/// An object that stayed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedObject {
    /// Its ID.
    pub id: String,
    /// Whether it is a Spot (else an Actor).
    pub is_spot: bool,
    /// Why it stayed.
    pub reason: BlockedReason,
}

/// What [`Runtime::relocate_all`](crate::Runtime::relocate_all) did.
#[derive(Debug, Clone, Default)]
pub struct RelocationReport {
    /// The Actors that moved, each where it runs now.
    pub moved: Vec<ActorRef>,
    /// The Spots that moved, each where it runs now.
    pub moved_spots: Vec<SpotRef>,
    /// The objects that may not move, untouched.
    pub blocked: Vec<BlockedObject>,
    /// The moves that failed, each with the object's ID and the error: an object whose
    /// move failed before its target confirmed runs on here; one whose target failed
    /// later is unavailable.
    pub failed: Vec<(String, Error)>,
}

impl RelocationReport {
    /// Whether everything this node owned moved.
    pub fn is_complete(&self) -> bool {
        self.blocked.is_empty() && self.failed.is_empty()
    }
}

/// Moves every movable object of `server` to other nodes chosen by placement. The node
/// takes no new objects meanwhile; when everything moved, or when it is about to stop
/// (`stopping`), it stays that way; otherwise it serves again.
pub(crate) async fn relocate_all(server: &Moving, stopping: bool) -> RelocationReport {
    set_draining(server, true).await;
    let mut report = RelocationReport::default();
    let owned: Vec<_> = server
        .registry
        .all()
        .into_iter()
        .filter(|live| !live.is_entry())
        .collect();
    let movable = movable_objects(&owned, &mut report.blocked);
    let moves = futures::stream::iter(movable.into_iter().map(|live| {
        let server = server.clone();
        async move {
            let outcome = match live.key.kind {
                ObjectKind::Actor => relocate(&server, &live.key, None)
                    .await
                    .map(|at| (at, Vec::new())),
                ObjectKind::Spot => relocate_spot(&server, &live, None).await,
            };
            (live.key.clone(), outcome)
        }
    }))
    .buffer_unordered(drain_concurrency(available_cores()))
    .collect::<Vec<_>>()
    .await;
    record_moves(&mut report, moves);
    if !report.is_complete() && !stopping {
        set_draining(server, false).await;
    }
    tracing::info!(
        moved = report.moved.len() + report.moved_spots.len(),
        blocked = report.blocked.len(),
        failed = report.failed.len(),
        "relocated the node's objects"
    );
    report
}

/// The objects of `owned` that may move now; the others go to `blocked_out` with why.
/// Linear in the objects and the members: each Spot's decision is made once, and objects
/// are found by key (a drain of zones with thousands of members each spent seconds in
/// nested scans, holding its task, before this).
fn movable_objects(
    owned: &[Arc<LiveObject>],
    blocked_out: &mut Vec<BlockedObject>,
) -> Vec<Arc<LiveObject>> {
    let by_key: HashMap<&ObjectKey, &Arc<LiveObject>> =
        owned.iter().map(|live| (&live.key, live)).collect();
    let mut spots = SpotDecisions {
        by_key: &by_key,
        decided: HashMap::new(),
    };
    let mut movable = Vec::new();
    for live in owned {
        let blocked = |reason| BlockedObject {
            id: live.key.id.to_string(),
            is_spot: live.key.kind == ObjectKind::Spot,
            reason,
        };
        let user_spot = live
            .membership()
            .filter(|spot| !crate::object::is_entry_spot_id(spot.as_str()));
        if live.object_type.relocation == Relocation::Disable {
            blocked_out.push(blocked(BlockedReason::RelocationDisabled));
        } else if let Some(spot) = user_spot {
            if !spots.moves_with_members(&ObjectKey::from(&spot)) {
                blocked_out.push(blocked(BlockedReason::InUserSpot));
            }
        } else if live.key.kind == ObjectKind::Spot && !spots.moves_with_members(&live.key) {
            blocked_out.push(blocked(BlockedReason::SpotWithMembers));
        } else {
            movable.push(live.clone());
        }
    }
    movable
}

/// Whether each User Spot of a drain takes its members along, decided once per Spot: a
/// PerActor Spot its shell first, then each member; a SpotWide Spot all of them as one
/// unit, so only if each of them may move.
struct SpotDecisions<'a> {
    by_key: &'a HashMap<&'a ObjectKey, &'a Arc<LiveObject>>,
    decided: HashMap<ObjectKey, bool>,
}

impl SpotDecisions<'_> {
    /// Whether the Spot `key` (one this node owns) moves, with its members.
    fn moves_with_members(&mut self, key: &ObjectKey) -> bool {
        if let Some(decided) = self.decided.get(key) {
            return *decided;
        }
        let decided = self
            .by_key
            .get(key)
            .is_some_and(|spot| self.takes_members(spot));
        self.decided.insert(key.clone(), decided);
        decided
    }

    fn takes_members(&self, spot: &LiveObject) -> bool {
        let may_move = |live: &LiveObject| live.object_type.relocation != Relocation::Disable;
        may_move(spot)
            && (spot.object_type.execution == Execution::PerActor
                || spot.member_ids().iter().all(|id| {
                    let key = ObjectKey {
                        kind: ObjectKind::Actor,
                        id: id.clone(),
                    };
                    self.by_key.get(&key).is_none_or(|member| may_move(member))
                }))
    }
}

/// Each move's outcome in the report: moved Actors and Spots (a Spot's members with it),
/// or the failure.
type MoveOutcome = (
    ObjectKey,
    Result<(Location, Vec<(Arc<str>, Result<Location>)>)>,
);

fn record_moves(report: &mut RelocationReport, moves: Vec<MoveOutcome>) {
    let moved_actor = |report: &mut RelocationReport, id: &str, outcome: Result<Location>| match (
        ActorId::new(id),
        outcome,
    ) {
        (Ok(id), Ok(at)) => report.moved.push(ActorRef::at(id, at)),
        (_, Err(e)) => report.failed.push((id.to_string(), e)),
        (Err(_), Ok(_)) => {}
    };
    for (key, outcome) in moves {
        match (outcome, key.kind) {
            (Ok((at, _)), ObjectKind::Actor) => moved_actor(report, &key.id, Ok(at)),
            (Ok((at, members)), ObjectKind::Spot) => {
                if let Ok(id) = SpotId::new(&key.id) {
                    report.moved_spots.push(SpotRef::at(id, at));
                }
                for (member, outcome) in members {
                    moved_actor(report, &member, outcome);
                }
            }
            (Err(e), _) => report.failed.push((key.id.to_string(), e)),
        }
    }
}

/// Takes no new objects (`true`) or takes them again, here and in the descriptor peers'
/// placement reads.
async fn set_draining(server: &Moving, draining: bool) {
    if draining {
        server.hosting.begin_draining();
    } else {
        server.hosting.end_draining();
    }
    if let Some(node) = server.env.node() {
        node.set_draining(draining).await;
    }
}

#[cfg(test)]
mod tests {
    use super::drain_concurrency;

    #[test]
    fn a_drain_runs_four_moves_a_core_between_4_and_16() {
        assert_eq!(drain_concurrency(1), 4);
        assert_eq!(drain_concurrency(2), 8);
        assert_eq!(drain_concurrency(4), 16);
        assert_eq!(drain_concurrency(64), 16);
    }
}
