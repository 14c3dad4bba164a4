//! One session's bindings: the route its bind got for each Actor, and the seal a move
//! of that Actor puts on it (seed 000 §3.3). A sealed binding holds what the session
//! relays, in order, until its move's route change (command 44) names where it goes.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;

use super::packet::StreamCodec;
use crate::call::PacketKind;
use crate::object::binding::{BindingRoute, RelocationRecord};
use crate::sync::LockUnpoisoned;
use crate::wire::Metadata;

/// A session's bindings: one route per Actor ID, and the relays held while its Actor
/// moves. `R` is how a held request is answered (the session's reply token).
pub(crate) struct Bindings<R> {
    routes: Mutex<HashMap<Arc<str>, Entry<R>>>,
}

impl<R> Default for Bindings<R> {
    fn default() -> Self {
        Bindings {
            routes: Mutex::new(HashMap::new()),
        }
    }
}

struct Entry<R> {
    route: BindingRoute,
    /// Sealed for a move: its relocation, and what the session relayed since, in order.
    seal: Option<(String, VecDeque<HeldRelay<R>>)>,
}

impl<R> Bindings<R> {
    pub(crate) fn get(&self, actor: &str) -> Option<BindingRoute> {
        self.routes
            .lock_unpoisoned()
            .get(actor)
            .map(|e| e.route.clone())
    }

    pub(crate) fn set(&self, route: BindingRoute) {
        self.routes
            .lock_unpoisoned()
            .insert(route.key.id.clone(), Entry { route, seal: None });
    }

    /// Removes exactly `route`'s binding; `false` when another one is there now.
    pub(crate) fn remove(&self, route: &BindingRoute) -> bool {
        let mut routes = self.routes.lock_unpoisoned();
        match routes.get(&route.key.id) {
            Some(held) if held.route.binding_generation == route.binding_generation => {
                routes.remove(&route.key.id);
                true
            }
            _ => false,
        }
    }

    pub(crate) fn all(&self) -> Vec<BindingRoute> {
        self.routes
            .lock_unpoisoned()
            .values()
            .map(|e| e.route.clone())
            .collect()
    }

    /// Holds `relay` if its binding is sealed, or gives it back with the route to send
    /// it on now.
    pub(crate) fn hold_or_route(&self, actor: &str, relay: HeldRelay<R>) -> Routing<R> {
        let mut routes = self.routes.lock_unpoisoned();
        match routes.get_mut(actor) {
            Some(Entry {
                seal: Some((_, held)),
                ..
            }) => {
                held.push_back(relay);
                Routing::Held
            }
            Some(entry) => Routing::Send(entry.route.clone(), relay),
            None => Routing::NotBound(relay),
        }
    }

    /// Seals the binding `record` names for its move; `false` when it is not this
    /// session's current binding, or `from` is not its owner.
    pub(crate) fn seal(&self, record: &RelocationRecord, from: Option<&str>) -> bool {
        let mut routes = self.routes.lock_unpoisoned();
        let Some(entry) = routes.get_mut(record.actor.as_str()) else {
            return false;
        };
        let exact = entry.route.binding_generation == record.binding_generation
            && entry.route.fence.object_generation == record.object_generation
            && from.is_none_or(|rid| rid == entry.route.owner.rid);
        if exact {
            match &mut entry.seal {
                None => entry.seal = Some((record.relocation_id.clone(), VecDeque::new())),
                // The owner moves the Actor again: its last move ended, though its 44 has
                // not come (or was lost). The new move's 44 lets the held relays go.
                Some((id, _)) if *id != record.relocation_id => {
                    tracing::debug!(actor = %record.actor, from = %id, to = %record.relocation_id, "a binding's seal taken over by the Actor's next move");
                    *id = record.relocation_id.clone();
                }
                Some(_) => {}
            }
        }
        exact
    }

    /// Applies a 44 to the binding sealed by its relocation: the new route on a commit,
    /// the old one kept on an abort. `false` when no such seal is here, or `from` is not
    /// who may send it (the target on a commit, the owner on an abort).
    pub(crate) fn reroute(&self, record: &RelocationRecord, from: Option<&str>) -> bool {
        let mut routes = self.routes.lock_unpoisoned();
        let Some(entry) = routes.get_mut(record.actor.as_str()) else {
            return false;
        };
        let sealed = matches!(&entry.seal, Some((id, _)) if *id == record.relocation_id)
            && entry.route.binding_generation == record.binding_generation
            && entry.route.fence.object_generation == record.object_generation;
        if !sealed {
            return false;
        }
        match &record.target {
            Some(target) => {
                if from.is_some_and(|rid| rid != target.rid) {
                    return false;
                }
                let route = &mut entry.route;
                route.owner.mesh_name = target.mesh_name.clone();
                route.owner.rid = target.rid.clone();
                route.owner.node_generation = target.node_generation;
                route.fence.owner_generation = target.owner_generation;
                route.fence.lease_generation = target.lease_generation;
                route.actor.mesh_name = target.mesh_name.clone();
                route.actor.rid = target.rid.clone();
            }
            None => {
                if from.is_some_and(|rid| rid != entry.route.owner.rid) {
                    return false;
                }
            }
        }
        true
    }

    /// The next relay held by `relocation_id`'s seal, with the route to send it on; when
    /// none is left, the seal is lifted (in the same step, so nothing overtakes them).
    pub(crate) fn next_held(
        &self,
        actor: &str,
        relocation_id: &str,
    ) -> Option<(BindingRoute, HeldRelay<R>)> {
        let mut routes = self.routes.lock_unpoisoned();
        let entry = routes.get_mut(actor)?;
        let (id, held) = entry.seal.as_mut()?;
        if id != relocation_id {
            return None;
        }
        match held.pop_front() {
            Some(relay) => Some((entry.route.clone(), relay)),
            None => {
                entry.seal = None;
                None
            }
        }
    }

    /// Whether a move seals the binding of `actor` now.
    pub(crate) fn is_sealed(&self, actor: &str) -> bool {
        self.routes
            .lock_unpoisoned()
            .get(actor)
            .is_some_and(|e| e.seal.is_some())
    }

    /// Whether `relocation_id` still seals the binding of `actor`.
    pub(crate) fn sealed_by(&self, actor: &str, relocation_id: &str) -> bool {
        self.routes
            .lock_unpoisoned()
            .get(actor)
            .is_some_and(|e| matches!(&e.seal, Some((id, _)) if id == relocation_id))
    }
}

/// Where a relay goes now.
pub(crate) enum Routing<R> {
    /// Its Actor is moving: held until the new route arrives.
    Held,
    /// On this route, now.
    Send(BindingRoute, HeldRelay<R>),
    /// The session is not bound to that Actor.
    NotBound(HeldRelay<R>),
}

/// A relay the session made, as it goes out or waits for a move; a request carries how it
/// is answered (`R`).
pub(crate) struct HeldRelay<R> {
    pub(crate) packet: String,
    pub(crate) kind: PacketKind,
    pub(crate) payload: Bytes,
    pub(crate) metadata: Metadata,
    pub(crate) session_seq: u64,
    pub(crate) codec: StreamCodec,
    pub(crate) token: Option<R>,
    pub(crate) timeout: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::{ActorId, ActorRef, ObjectKey};
    use crate::object::authority::OwnerRoute;
    use crate::object::binding::{SessionKey, TargetRoute};
    use crate::wire::RouteFence;

    fn route(binding_generation: u64) -> BindingRoute {
        let id = ActorId::new("p").unwrap();
        BindingRoute {
            actor: ActorRef {
                id: id.clone(),
                generation: 7,
                mesh_name: "m".into(),
                rid: "n1".into(),
            },
            key: ObjectKey::from(&id),
            owner: OwnerRoute {
                mesh_name: "m".into(),
                rid: "n1".into(),
                node_generation: 1,
            },
            fence: RouteFence {
                object_generation: 7,
                owner_generation: 3,
                lease_generation: 1,
            },
            binding_generation,
            session_lease: 1,
        }
    }

    fn record(relocation_id: &str, target: Option<&str>) -> RelocationRecord {
        RelocationRecord {
            relocation_id: relocation_id.into(),
            session: SessionKey {
                rid: "gw".into(),
                node_generation: 1,
                session: 1,
            },
            actor: "p".into(),
            object_generation: 7,
            binding_generation: 2,
            target: target.map(|rid| TargetRoute {
                mesh_name: "m".into(),
                rid: rid.into(),
                node_generation: 5,
                owner_generation: 4,
                lease_generation: 1,
            }),
        }
    }

    fn relay(session_seq: u64) -> HeldRelay<()> {
        HeldRelay {
            packet: "step".into(),
            kind: PacketKind::Send,
            payload: Bytes::new(),
            metadata: Metadata::default(),
            session_seq,
            codec: StreamCodec::Json,
            token: None,
            timeout: Duration::from_secs(1),
        }
    }

    fn sealed() -> Bindings<()> {
        let bindings = Bindings::<()>::default();
        bindings.set(route(2));
        assert!(bindings.seal(&record("r1", None), Some("n1")));
        for seq in 1..=3 {
            assert!(matches!(
                bindings.hold_or_route("p", relay(seq)),
                Routing::Held
            ));
        }
        bindings
    }

    fn drain(bindings: &Bindings<()>, relocation_id: &str) -> Vec<(String, u64)> {
        std::iter::from_fn(|| bindings.next_held("p", relocation_id))
            .map(|(route, relay)| (route.owner.rid, relay.session_seq))
            .collect()
    }

    #[test]
    fn only_the_actors_owner_seals_its_current_binding() {
        let bindings = Bindings::<()>::default();
        bindings.set(route(2));
        assert!(
            !bindings.seal(&record("r1", None), Some("n9")),
            "not the owner"
        );
        let mut older = record("r1", None);
        older.binding_generation = 1;
        assert!(!bindings.seal(&older, Some("n1")), "an older binding");
        assert!(!bindings.is_sealed("p"));
        assert!(bindings.seal(&record("r1", None), Some("n1")));
        assert!(bindings.sealed_by("p", "r1"));
    }

    #[test]
    fn a_commit_from_the_target_switches_the_route_and_the_held_relays_follow_in_order() {
        let bindings = sealed();
        assert!(
            !bindings.reroute(&record("r1", Some("n2")), Some("n3")),
            "a commit only from the target it names"
        );
        assert!(bindings.reroute(&record("r1", Some("n2")), Some("n2")));
        assert_eq!(
            drain(&bindings, "r1"),
            [("n2".into(), 1), ("n2".into(), 2), ("n2".into(), 3)]
        );
        assert!(!bindings.is_sealed("p"), "the seal lifts once they are out");
        assert_eq!(bindings.get("p").unwrap().owner.node_generation, 5);
    }

    #[test]
    fn an_abort_releases_only_the_matching_seal_and_the_held_relays_go_to_the_source() {
        let bindings = sealed();
        assert!(
            !bindings.reroute(&record("r0", None), Some("n1")),
            "another relocation's abort"
        );
        assert!(drain(&bindings, "r0").is_empty());
        assert!(
            bindings.sealed_by("p", "r1"),
            "still sealed by its own move"
        );
        assert!(
            !bindings.reroute(&record("r1", None), Some("n2")),
            "an abort only from the owner"
        );
        assert!(bindings.reroute(&record("r1", None), Some("n1")));
        assert_eq!(
            drain(&bindings, "r1"),
            [("n1".into(), 1), ("n1".into(), 2), ("n1".into(), 3)]
        );
        assert!(!bindings.is_sealed("p"));
    }

    #[test]
    fn a_late_route_change_for_a_lifted_seal_is_ignored() {
        let bindings = sealed();
        assert!(bindings.reroute(&record("r1", Some("n2")), Some("n2")));
        drain(&bindings, "r1");
        // The same 44 again (never resent by a sender, but a duplicate would be
        // harmless): no seal by r1 any more, so the route stays where it is.
        assert!(!bindings.reroute(&record("r1", None), Some("n2")));
        assert_eq!(bindings.get("p").unwrap().owner.rid, "n2");
        assert!(matches!(
            bindings.hold_or_route("p", relay(4)),
            Routing::Send(..)
        ));
    }

    #[test]
    fn a_seal_by_the_owners_next_move_takes_over_a_seal_whose_abort_never_came() {
        let bindings = sealed();
        // r1 was cancelled on n1 and its abort is late; n1 moves the Actor again (r2).
        assert!(bindings.seal(&record("r2", None), Some("n1")));
        assert!(bindings.sealed_by("p", "r2"), "r2 holds what r1 held");
        assert!(
            !bindings.reroute(&record("r1", None), Some("n1")),
            "the late abort of r1 changes nothing"
        );
        assert!(bindings.reroute(&record("r2", Some("n2")), Some("n2")));
        assert_eq!(
            drain(&bindings, "r2"),
            [("n2".into(), 1), ("n2".into(), 2), ("n2".into(), 3)]
        );
        assert!(!bindings.is_sealed("p"));
    }
}
