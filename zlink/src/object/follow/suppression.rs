//! The registry that keeps follow notices (command 50) from being sent twice (seed 000
//! §2.5). It decides only whether a notice goes out; the relayed operation's payload,
//! reply and terminal result stay with their own owners, so nothing here ever changes
//! what a caller hears.
//!
//! A key names the sender told and every field of both routes: the object's kind and ID,
//! and on the source and on the target side the ObjectGeneration, the
//! AuthorityOwnerGeneration, the owner and its lease generation, and the node's RID and
//! lifecycle generation. Matching on fewer fields would let a marker of an earlier route
//! hold back the notice a new target needs.
//!
//! ```text
//! (absent = idle) --acquire--> InFlight --sent--> SentUntilExpiry --route ends--> gone
//!                                 `--failed--> (absent = idle)
//! ```
//!
//! The registry runs no timer of its own: a key goes when its Message Follow route ends
//! (the follow window closed, or the route was replaced by a later move).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::address::ObjectKey;
use crate::object::authority::{OwnerFence, OwnerRoute};
use crate::sync::LockUnpoisoned;

/// One route, whole: the owner fence and the node it names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FencedRoute {
    pub(crate) fence: OwnerFence,
    pub(crate) route: OwnerRoute,
}

/// What one notice is about: who is told, of which move of which object.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct NoticeKey {
    /// The RID of the node that sent on the old route.
    pub(crate) sender: String,
    pub(crate) object: ObjectKey,
    pub(crate) source: FencedRoute,
    pub(crate) target: FencedRoute,
}

/// Where one key stands. Idle is the key's absence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoticeState {
    /// Being sent: no second send starts.
    InFlight,
    /// Sent: none again while the route lives.
    SentUntilExpiry,
}

/// The node's notice suppression registry.
#[derive(Default)]
pub(crate) struct NoticeRegistry {
    states: Mutex<HashMap<NoticeKey, NoticeState>>,
}

impl NoticeRegistry {
    /// Idle → InFlight: `true` when this caller got the right to send the notice.
    pub(crate) fn acquire(&self, key: &NoticeKey) -> bool {
        let mut states = self.states.lock_unpoisoned();
        if states.contains_key(key) {
            return false;
        }
        states.insert(key.clone(), NoticeState::InFlight);
        true
    }

    /// InFlight → SentUntilExpiry when `sent`, else back to idle so a later message
    /// tries again. A key that is not in flight (its route ended meanwhile) stays gone.
    pub(crate) fn finished(&self, key: &NoticeKey, sent: bool) {
        let mut states = self.states.lock_unpoisoned();
        if states.get(key) != Some(&NoticeState::InFlight) {
            return;
        }
        if sent {
            states.insert(key.clone(), NoticeState::SentUntilExpiry);
        } else {
            states.remove(key);
        }
    }

    /// The Message Follow route `source` of `object` ended: every key of it goes.
    pub(crate) fn route_ended(&self, object: &ObjectKey, source: &FencedRoute) {
        self.states
            .lock_unpoisoned()
            .retain(|key, _| !(key.object == *object && key.source == *source));
    }

    /// Where `key` stands (`None`: idle).
    #[cfg(test)]
    pub(crate) fn state(&self, key: &NoticeKey) -> Option<NoticeState> {
        self.states.lock_unpoisoned().get(key).copied()
    }

    /// How many keys it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.states.lock_unpoisoned().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::ActorId;

    fn route(rid: &str, node_generation: u64, owner_generation: u64) -> FencedRoute {
        FencedRoute {
            fence: OwnerFence {
                object_generation: 4,
                owner_generation,
                owner: format!("{rid}-owner"),
                lease_generation: 2,
            },
            route: OwnerRoute {
                mesh_name: "m".into(),
                rid: rid.into(),
                node_generation,
            },
        }
    }

    fn key(sender: &str, target: FencedRoute) -> NoticeKey {
        NoticeKey {
            sender: sender.into(),
            object: ObjectKey::from(&ActorId::new("walker").unwrap()),
            source: route("a", 1, 1),
            target,
        }
    }

    #[test]
    fn in_flight_blocks_a_second_send_and_a_sent_notice_is_not_sent_again() {
        let registry = NoticeRegistry::default();
        let told = key("c", route("b", 1, 2));
        assert!(
            registry.acquire(&told),
            "idle: the first sender gets the right"
        );
        assert_eq!(registry.state(&told), Some(NoticeState::InFlight));
        assert!(!registry.acquire(&told), "in flight: no second send");
        registry.finished(&told, true);
        assert_eq!(registry.state(&told), Some(NoticeState::SentUntilExpiry));
        assert!(
            !registry.acquire(&told),
            "sent: none again while the route lives"
        );
    }

    #[test]
    fn a_failed_send_goes_back_to_idle_and_may_be_tried_again() {
        let registry = NoticeRegistry::default();
        let told = key("c", route("b", 1, 2));
        assert!(registry.acquire(&told));
        registry.finished(&told, false);
        assert_eq!(registry.state(&told), None);
        assert!(registry.acquire(&told));
    }

    #[test]
    fn every_fence_field_of_both_routes_is_part_of_the_key() {
        let registry = NoticeRegistry::default();
        let first = key("c", route("b", 1, 2));
        assert!(registry.acquire(&first));
        registry.finished(&first, true);
        // A restarted target (new lifecycle), another target node, a later owner
        // generation, another lease or owner, another incarnation: each is a new key,
        // and the marker of the first never holds its notice back.
        let mut variants = vec![
            key("c", route("b", 2, 2)),
            key("c", route("d", 1, 2)),
            key("c", route("b", 1, 3)),
            key("d", route("b", 1, 2)),
        ];
        let mut other_lease = first.clone();
        other_lease.target.fence.lease_generation = 3;
        let mut other_owner = first.clone();
        other_owner.target.fence.owner = "another".into();
        let mut other_source = first.clone();
        other_source.source.route.node_generation = 9;
        let mut other_incarnation = first.clone();
        other_incarnation.source.fence.object_generation = 5;
        other_incarnation.target.fence.object_generation = 5;
        variants.extend([other_lease, other_owner, other_source, other_incarnation]);
        for variant in &variants {
            assert!(registry.acquire(variant), "{variant:?}");
        }
    }

    #[test]
    fn a_route_that_ends_takes_its_keys_and_no_other() {
        let registry = NoticeRegistry::default();
        let ending = key("c", route("b", 1, 2));
        let mut other = key("c", route("b", 1, 3));
        other.source = route("b", 1, 2);
        for k in [&ending, &other] {
            assert!(registry.acquire(k));
            registry.finished(k, true);
        }
        registry.route_ended(&ending.object, &ending.source);
        assert_eq!(registry.len(), 1);
        assert_eq!(registry.state(&other), Some(NoticeState::SentUntilExpiry));
        // A send that finishes after its route ended leaves nothing behind.
        assert!(registry.acquire(&ending));
        registry.route_ended(&ending.object, &ending.source);
        registry.finished(&ending, true);
        assert_eq!(registry.state(&ending), None);
    }
}
