//! [`ObjectRegistry`]: what one node runs and may run — the types it serves, its live
//! objects, the creations in progress with their capacity slots, and the cap on
//! activations running at once. One lock covers the live objects and the creations, so a
//! limit's check and its slot are one step.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{Semaphore, SemaphorePermit};

use super::live_object::LiveObject;
use super::object_type::TypeDef;
use crate::address::{ObjectKey, ObjectKind, StableType};
use crate::sync::LockUnpoisoned;
use crate::telemetry::{ObjectClass, ObjectMeter};
use crate::{Error, ErrorKind, Result};

/// Creations one node runs at once (factory through commit).
const MAX_ACTIVATIONS: usize = 128;

/// What the registry needs to know of a running object.
pub(crate) trait Registered: Clone {
    fn key(&self) -> &ObjectKey;
    fn stable_type(&self) -> &StableType;
    /// Whether it is the node's Entry Spot (which counts against no limit).
    fn is_entry(&self) -> bool;
    /// Whether `other` is this very registration (not only the same ID).
    fn same(&self, other: &Self) -> bool;
    /// Stops an incarnation the registry no longer names.
    fn stop_superseded(&self);
}

impl Registered for Arc<LiveObject> {
    fn key(&self) -> &ObjectKey {
        &self.key
    }

    fn stable_type(&self) -> &StableType {
        &self.object_type.stable_type
    }

    fn is_entry(&self) -> bool {
        LiveObject::is_entry(self)
    }

    fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(self, other)
    }

    fn stop_superseded(&self) {
        tracing::warn!(object = %self.key, generation = self.generation(), "stopping an older incarnation still registered here");
        self.stop();
    }
}

/// The objects of one node.
pub(crate) struct ObjectRegistry<L: Registered = Arc<LiveObject>> {
    types: HashMap<(ObjectKind, StableType), Arc<TypeDef>>,
    /// The most Spots this node runs (0: no limit).
    max_spots: u32,
    activations: Semaphore,
    state: Mutex<State<L>>,
    /// Woken whenever a creation attempt of this node ends (committed or not).
    settled: tokio::sync::Notify,
    /// Counts the Spots and Actors registered here.
    meter: Arc<ObjectMeter>,
}

struct State<L> {
    live: super::KeyMap<L>,
    /// The creation attempts running on this node, by attempt number.
    creating: HashMap<u64, InCreation>,
    /// The Instance Spots one of this node's callers activates (from before its recovery
    /// root is written until its creation ended).
    activating: std::collections::HashSet<ObjectKey>,
    next_attempt: u64,
    /// What the limits check, kept as objects come and go.
    counts: Counts,
}

/// The objects the creation limits count, running and being created, kept up to date as
/// they come and go so a creation checks its limits in O(1) however many objects the
/// node holds.
#[derive(Default)]
struct Counts {
    /// Spots (the Entry Spot aside, once it runs).
    spots: usize,
    /// Objects by type.
    by_type: HashMap<StableType, usize>,
    /// Running here now, by kind (the Entry Spot aside): what `owned` answers.
    running_spots: usize,
    running_actors: usize,
}

impl Counts {
    /// Counts one more (`up`) or one fewer object of `stable_type`, a Spot when `spot`.
    fn step(&mut self, stable_type: &StableType, spot: bool, up: bool) {
        let step = |n: &mut usize| *n = if up { *n + 1 } else { n.saturating_sub(1) };
        if spot {
            step(&mut self.spots);
        }
        if up {
            step(self.by_type.entry(stable_type.clone()).or_default());
        } else if let Some(n) = self.by_type.get_mut(stable_type) {
            step(n);
            if *n == 0 {
                self.by_type.remove(stable_type);
            }
        }
    }

    fn running<L: Registered>(&mut self, live: &L, up: bool) {
        let spot = live.key().kind == ObjectKind::Spot && !live.is_entry();
        self.step(live.stable_type(), spot, up);
        let running = match live.key().kind {
            ObjectKind::Spot if live.is_entry() => return,
            ObjectKind::Spot => &mut self.running_spots,
            ObjectKind::Actor => &mut self.running_actors,
        };
        *running = if up {
            *running + 1
        } else {
            running.saturating_sub(1)
        };
    }

    fn of_type(&self, stable_type: &StableType) -> usize {
        self.by_type.get(stable_type).copied().unwrap_or(0)
    }
}

/// What this node knows of one of its creations in progress.
struct InCreation {
    key: ObjectKey,
    stable_type: StableType,
    /// Its ObjectGeneration, once its reservation is won.
    generation: Option<u64>,
}

impl From<ObjectKind> for ObjectClass {
    fn from(kind: ObjectKind) -> Self {
        match kind {
            ObjectKind::Spot => ObjectClass::Spot,
            ObjectKind::Actor => ObjectClass::Actor,
        }
    }
}

impl<L: Registered> ObjectRegistry<L> {
    /// A registry serving `types`, running at most `max_spots` Spots (0: no limit).
    pub(crate) fn new<'a>(types: impl IntoIterator<Item = &'a TypeDef>, max_spots: u32) -> Self {
        ObjectRegistry {
            types: types
                .into_iter()
                .map(|t| ((t.kind(), t.stable_type.clone()), Arc::new(t.clone())))
                .collect(),
            max_spots,
            activations: Semaphore::new(MAX_ACTIVATIONS),
            settled: tokio::sync::Notify::new(),
            meter: Arc::new(ObjectMeter::unregistered()),
            state: Mutex::new(State {
                live: super::KeyMap::default(),
                creating: HashMap::new(),
                activating: std::collections::HashSet::new(),
                next_attempt: 0,
                counts: Counts::default(),
            }),
        }
    }

    /// This registry, counting what it registers in `meter`.
    pub(crate) fn metered(mut self, meter: Arc<ObjectMeter>) -> Self {
        self.meter = meter;
        self
    }

    fn state(&self) -> MutexGuard<'_, State<L>> {
        self.state.lock_unpoisoned()
    }

    /// The registration of a type of `kind` this node serves.
    pub(crate) fn object_type(&self, kind: ObjectKind, stable_type: &str) -> Result<Arc<TypeDef>> {
        let name =
            StableType::new(stable_type).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        self.types.get(&(kind, name)).cloned().ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!("this node serves no {kind:?} type {stable_type:?}"),
            )
        })
    }

    /// The stable types of `kind` this node serves.
    pub(crate) fn type_names(&self, kind: ObjectKind) -> impl Iterator<Item = &str> {
        self.types
            .keys()
            .filter(move |(k, _)| *k == kind)
            .map(|(_, name)| name.as_str())
    }

    /// Whether this node serves `stable_type` of `kind`.
    /// The Instance Spot types this node serves.
    pub(crate) fn instance_spot_types(&self) -> impl Iterator<Item = &StableType> {
        self.types
            .values()
            .filter(|def| def.instance)
            .map(|def| &def.stable_type)
    }

    pub(crate) fn serves(&self, kind: ObjectKind, stable_type: &str) -> bool {
        StableType::new(stable_type)
            .ok()
            .is_some_and(|t| self.types.contains_key(&(kind, t)))
    }

    /// One of the activations this node runs at once; waits while all are taken.
    pub(crate) async fn activation(&self) -> Option<SemaphorePermit<'_>> {
        self.activations.acquire().await.ok()
    }

    /// The object `key` if it runs here.
    pub(crate) fn get(&self, key: &ObjectKey) -> Option<L> {
        self.state().live.get(key).cloned()
    }

    /// Whether the object `key` runs here.
    pub(crate) fn contains(&self, key: &ObjectKey) -> bool {
        self.state().live.contains_key(key)
    }

    /// Every object running here, at this moment.
    pub(crate) fn all(&self) -> Vec<L> {
        self.state().live.values().cloned().collect()
    }

    /// The objects of `kind` running here (the Entry Spot aside).
    pub(crate) fn owned(&self, kind: ObjectKind) -> usize {
        let state = self.state();
        match kind {
            ObjectKind::Spot => state.counts.running_spots,
            ObjectKind::Actor => state.counts.running_actors,
        }
    }

    /// Registers an object as running here. An older incarnation still registered under
    /// the ID (its close gave up waiting) is stopped: the authority names the new one.
    pub(crate) fn insert(&self, live: L) {
        let counted = (!live.is_entry()).then(|| ObjectClass::from(live.key().kind));
        let previous = {
            let mut state = self.state();
            state.counts.running(&live, true);
            let previous = state.live.insert(live.key().clone(), live);
            if let Some(previous) = &previous {
                state.counts.running(previous, false);
            }
            previous
        };
        match previous {
            Some(previous) => previous.stop_superseded(),
            None => counted.map_or((), |kind| self.meter.owned(kind, 1)),
        }
    }

    /// Removes exactly this registration (a newer incarnation under the ID stays).
    pub(crate) fn remove(&self, live: &L) {
        let mut state = self.state();
        if state.live.get(live.key()).is_some_and(|c| c.same(live)) {
            state.live.remove(live.key());
            state.counts.running(live, false);
            if !live.is_entry() {
                self.meter.owned(ObjectClass::from(live.key().kind), -1);
            }
        }
    }

    /// Forgets every object (the node stopped).
    pub(crate) fn clear(&self) {
        let cleared: Vec<L> = {
            let mut state = self.state();
            let cleared: Vec<L> = state.live.drain().map(|(_, live)| live).collect();
            for live in &cleared {
                state.counts.running(live, false);
            }
            cleared
        };
        for live in cleared.iter().filter(|live| !live.is_entry()) {
            self.meter.owned(ObjectClass::from(live.key().kind), -1);
        }
    }

    /// Takes a slot for a new object of `object_type` under this node's limits (for Spots
    /// the node-wide one, then the type's), counting those it runs and those being
    /// created; the slot is held until the returned guard is dropped. The check and the
    /// take are one step, so concurrent creations cannot overrun a limit.
    pub(crate) fn begin_creating(
        &self,
        key: &ObjectKey,
        object_type: &TypeDef,
    ) -> Result<Creating<'_, L>> {
        let mut state = self.state();
        let full = |limit: u32, used: usize| limit > 0 && used >= limit as usize;
        let spot = key.kind == ObjectKind::Spot;
        if spot && full(self.max_spots, state.counts.spots) {
            return Err(Error::new(
                ErrorKind::CapacityExceeded,
                format!("this node runs its limit of {} Spots", self.max_spots),
            ));
        }
        if full(
            object_type.max_per_node,
            state.counts.of_type(&object_type.stable_type),
        ) {
            return Err(Error::new(
                ErrorKind::CapacityExceeded,
                format!(
                    "this node runs its limit of {} Spots of type {}",
                    object_type.max_per_node, object_type.stable_type
                ),
            ));
        }
        state.counts.step(&object_type.stable_type, spot, true);
        let attempt = state.next_attempt;
        state.next_attempt += 1;
        state.creating.insert(
            attempt,
            InCreation {
                key: key.clone(),
                stable_type: object_type.stable_type.clone(),
                generation: None,
            },
        );
        Ok(Creating {
            registry: self,
            attempt,
        })
    }

    /// Waits until a creation of `key` running on this node ends (or `until` passes):
    /// at once when none is running. A caller that lost the race for a new ID waits here
    /// rather than polling the store.
    pub(crate) async fn creation_settled(&self, key: &ObjectKey, until: tokio::time::Instant) {
        let settled = self.settled.notified();
        tokio::pin!(settled);
        loop {
            // Registered before the check, so an end between the two is not missed.
            settled.as_mut().enable();
            let running = {
                let state = self.state();
                state.activating.contains(key) || state.creating.values().any(|c| c.key == *key)
            };
            if !running {
                return;
            }
            if tokio::time::timeout_at(until, settled.as_mut())
                .await
                .is_err()
            {
                return;
            }
            settled.set(self.settled.notified());
        }
    }

    /// Marks `key` as activated by one of this node's callers, until the returned mark is
    /// dropped; `None` when another caller here activates it already (then this one waits
    /// for it with [`creation_settled`](Self::creation_settled), rather than racing it
    /// through the store).
    pub(crate) fn lead_activation(&self, key: &ObjectKey) -> Option<LeadActivation<'_, L>> {
        self.state()
            .activating
            .insert(key.clone())
            .then(|| LeadActivation {
                registry: self,
                key: key.clone(),
            })
    }

    /// Whether a creation of this node is working on the Creating record of `generation`
    /// for `key` (or has yet to learn which generation its reservation got).
    pub(crate) fn is_creating(&self, key: &ObjectKey, generation: u64) -> bool {
        self.state()
            .creating
            .values()
            .any(|c| c.key == *key && c.generation.is_none_or(|g| g == generation))
    }
}

/// One creation in progress on this node, holding its capacity slot; it ends when dropped.
pub(crate) struct Creating<'a, L: Registered = Arc<LiveObject>> {
    registry: &'a ObjectRegistry<L>,
    attempt: u64,
}

impl<L: Registered> Creating<'_, L> {
    /// The reservation is won: the creation works on this ObjectGeneration.
    pub(crate) fn reserved(&self, generation: u64) {
        if let Some(c) = self.registry.state().creating.get_mut(&self.attempt) {
            c.generation = Some(generation);
        }
    }
}

impl<L: Registered> Drop for Creating<'_, L> {
    fn drop(&mut self) {
        {
            let mut state = self.registry.state();
            if let Some(ended) = state.creating.remove(&self.attempt) {
                let spot = ended.key.kind == ObjectKind::Spot;
                state.counts.step(&ended.stable_type, spot, false);
            }
        }
        self.registry.settled.notify_waiters();
    }
}

/// One caller's activation of an Instance Spot on this node; the callers behind it are
/// woken when it is dropped.
pub(crate) struct LeadActivation<'a, L: Registered = Arc<LiveObject>> {
    registry: &'a ObjectRegistry<L>,
    key: ObjectKey,
}

impl<L: Registered> Drop for LeadActivation<'_, L> {
    fn drop(&mut self) {
        self.registry.state().activating.remove(&self.key);
        self.registry.settled.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::address::{ActorId, SpotId};
    use crate::object::object_type::Factory;
    use crate::object::Relocation;

    /// A registered object as the registry sees it, without a turn loop.
    #[derive(Clone)]
    struct Fake {
        key: ObjectKey,
        stable_type: StableType,
        entry: bool,
        stopped: Arc<AtomicBool>,
    }

    impl Registered for Fake {
        fn key(&self) -> &ObjectKey {
            &self.key
        }
        fn stable_type(&self) -> &StableType {
            &self.stable_type
        }
        fn is_entry(&self) -> bool {
            self.entry
        }
        fn same(&self, other: &Self) -> bool {
            Arc::ptr_eq(&self.stopped, &other.stopped)
        }
        fn stop_superseded(&self) {
            self.stopped.store(true, Ordering::SeqCst);
        }
    }

    fn spot(id: &str, stable_type: &str) -> Fake {
        Fake {
            key: ObjectKey::from(&SpotId::new(id).unwrap()),
            stable_type: StableType::new(stable_type).unwrap(),
            entry: false,
            stopped: Arc::new(AtomicBool::new(false)),
        }
    }

    fn spot_type(name: &str, max_per_node: u32) -> TypeDef {
        let mut def = TypeDef::new(name, Vec::new(), Relocation::Disable, Factory::Entry).unwrap();
        def.max_per_node = max_per_node;
        def
    }

    fn actor_type(name: &str) -> TypeDef {
        let factory: Arc<crate::object::object_type::ActorFactory> =
            Arc::new(|_| unreachable!("the registry never makes an object"));
        TypeDef::new(
            name,
            Vec::new(),
            Relocation::Disable,
            Factory::Actor(factory),
        )
        .unwrap()
    }

    #[test]
    fn a_type_is_found_by_kind_and_name_and_a_bad_name_is_an_argument_error() {
        let (room, player) = (spot_type("room", 0), actor_type("player"));
        let registry = ObjectRegistry::<Fake>::new([&room, &player], 0);
        assert!(registry.serves(ObjectKind::Spot, "room"));
        assert!(registry.serves(ObjectKind::Actor, "player"));
        assert!(!registry.serves(ObjectKind::Actor, "room"));
        let missing = registry
            .object_type(ObjectKind::Spot, "player")
            .unwrap_err();
        assert!(missing.is(ErrorKind::NotFound), "{missing}");
        let bad = registry.object_type(ObjectKind::Spot, "").unwrap_err();
        assert!(matches!(bad, Error::InvalidArgument(_)), "{bad}");
    }

    #[test]
    fn the_node_spot_limit_counts_running_and_creating_spots_but_not_the_entry_spot() {
        let room = spot_type("room", 0);
        let registry = ObjectRegistry::<Fake>::new([&room], 2);
        let mut entry = spot("entry", "room");
        entry.entry = true;
        registry.insert(entry);
        registry.insert(spot("a", "room"));
        let creating = registry
            .begin_creating(&spot("b", "room").key, &room)
            .unwrap();
        let full = registry
            .begin_creating(&spot("c", "room").key, &room)
            .err()
            .expect("the third Spot is over the limit");
        assert!(full.is(ErrorKind::CapacityExceeded), "{full}");
        drop(creating);
        assert!(registry
            .begin_creating(&spot("c", "room").key, &room)
            .is_ok());
    }

    #[test]
    fn the_type_limit_holds_per_type_and_an_actor_is_not_a_spot() {
        let (room, hall) = (spot_type("room", 1), spot_type("hall", 0));
        let player = actor_type("player");
        let registry = ObjectRegistry::<Fake>::new([&room, &hall, &player], 1);
        registry.insert(spot("a", "room"));
        let over = registry.begin_creating(&spot("b", "room").key, &room).err();
        assert!(over.is_some_and(|e| e.is(ErrorKind::CapacityExceeded)));
        // The node's one Spot slot is taken too, but an Actor counts against neither.
        let actor = ObjectKey::from(&ActorId::new("p1").unwrap());
        assert!(registry.begin_creating(&actor, &player).is_ok());
    }

    #[test]
    fn a_slot_comes_back_when_its_object_leaves_its_creation_ends_or_the_node_clears() {
        let room = spot_type("room", 2);
        let registry = ObjectRegistry::<Fake>::new([&room], 0);
        let (a, b) = (spot("a", "room"), spot("b", "room"));
        registry.insert(a.clone());
        let creating = registry.begin_creating(&b.key, &room).unwrap();
        let full = registry.begin_creating(&spot("c", "room").key, &room).err();
        assert!(full.is_some_and(|e| e.is(ErrorKind::CapacityExceeded)));
        drop(creating);
        registry.insert(b.clone());
        // A newer incarnation of `b` takes its place: still two.
        registry.insert(spot("b", "room"));
        assert!(registry
            .begin_creating(&spot("c", "room").key, &room)
            .is_err());
        registry.remove(&a);
        assert!(registry
            .begin_creating(&spot("c", "room").key, &room)
            .is_ok());
        registry.clear();
        let (one, two) = (spot("d", "room"), spot("e", "room"));
        let _first = registry.begin_creating(&one.key, &room).unwrap();
        assert!(registry.begin_creating(&two.key, &room).is_ok());
    }

    #[test]
    fn a_creation_is_known_by_its_generation_once_reserved_and_forgotten_when_dropped() {
        let room = spot_type("room", 0);
        let registry = ObjectRegistry::<Fake>::new([&room], 0);
        let key = spot("a", "room").key;
        let creating = registry.begin_creating(&key, &room).unwrap();
        // Before its reservation is won it may be working on any generation.
        assert!(registry.is_creating(&key, 7));
        creating.reserved(3);
        assert!(registry.is_creating(&key, 3));
        assert!(!registry.is_creating(&key, 7));
        drop(creating);
        assert!(!registry.is_creating(&key, 3));
    }

    #[test]
    fn a_newer_incarnation_stops_the_older_and_removing_the_older_keeps_the_newer() {
        let room = spot_type("room", 0);
        let registry = ObjectRegistry::<Fake>::new([&room], 0);
        let (older, newer) = (spot("a", "room"), spot("a", "room"));
        registry.insert(older.clone());
        registry.insert(newer.clone());
        assert!(older.stopped.load(Ordering::SeqCst));
        registry.remove(&older);
        assert!(registry.get(&newer.key).is_some_and(|l| l.same(&newer)));
        registry.remove(&newer);
        assert!(!registry.contains(&newer.key));
        assert_eq!(registry.owned(ObjectKind::Spot), 0);
    }
}
