//! [`ObjectCore`]: the components every message path of the object layer shares — the
//! [`ObjectEnv`] it runs in, the [`ObjectRegistry`] of what it serves and runs, the
//! [`Resolver`] that routes by ID and the [`Departures`] of objects leaving — below
//! everything that composes them (creation, moves, bindings, multicast and the server).

use std::sync::{Arc, Weak};

use super::entry::EntrySpot;
use super::env::ObjectEnv;
use super::follow::Departures;
use super::hosting::Hosting;
use super::registry::ObjectRegistry;
use super::relocation_faults::RelocationFaults;
use super::resolver::Resolver;
use super::settings::ObjectSettings;
use super::turn_host::{ObjectHost, TurnServices};
use crate::address::SpotId;

/// The shared components of one node's object layer.
pub(crate) struct ObjectCore {
    /// The node, its handle and store, the lease and what ends with the node.
    pub(crate) env: ObjectEnv,
    /// The types it serves, the objects it runs and the creations under way.
    pub(crate) registry: ObjectRegistry,
    /// Routing: where each ID's owner is (route cache and per-ID lanes).
    pub(crate) resolver: Arc<Resolver>,
    /// Objects leaving this node: their holds, relays and Message Follow routes.
    pub(crate) departures: Arc<Departures>,
    /// This node's Entry Spot, when it serves Actor types.
    pub(crate) entry: Option<Arc<EntrySpot>>,
    /// This node's placement weight for new objects.
    pub(crate) placement_weight: u32,
    /// The Relocation Store, and whether the node is draining.
    pub(crate) hosting: Hosting,
    /// The faults a test injects into creations and moves.
    pub(crate) faults: RelocationFaults,
    /// What the objects' turn loops call back into (Joins, moves, first messages).
    services: Weak<dyn TurnServices>,
    /// Itself, for the rare step that outlives the call which began it (a route switch's
    /// barrier, the idle sweep): a call borrows the core and takes no reference of its own.
    me: Weak<ObjectCore>,
}

impl ObjectCore {
    /// The core of these components, for a node started with `settings` that places new
    /// objects with `placement_weight`; its turn loops call back into `services`.
    pub(crate) fn new(
        env: ObjectEnv,
        registry: ObjectRegistry,
        resolver: Arc<Resolver>,
        departures: Arc<Departures>,
        settings: &ObjectSettings,
        placement_weight: u32,
        services: Weak<dyn TurnServices>,
    ) -> Arc<Self> {
        let entry = settings
            .entry_spot
            .clone()
            .map(|id| Arc::new(EntrySpot::new(id, settings.entry_hooks.as_deref())));
        Arc::new_cyclic(|me| ObjectCore {
            services,
            env,
            registry,
            resolver,
            departures,
            entry,
            placement_weight,
            hosting: Hosting::new(settings.relocation_store.clone()),
            faults: settings.faults,
            me: me.clone(),
        })
    }

    /// This node's Entry Spot ID, when it serves Actor types.
    pub(crate) fn entry_spot(&self) -> Option<&SpotId> {
        self.entry.as_ref().map(|entry| &entry.id)
    }

    /// What a Spot or Actor this node starts runs with.
    pub(crate) fn object_host(&self) -> ObjectHost {
        ObjectHost {
            handle: self.env.weak_handle().clone(),
            services: self.services.clone(),
            lease: self.env.lease().clone(),
            tracker: self.env.tracker().clone(),
            cancel: self.env.cancel().child_token(),
            lost: self.env.lost_sends().clone(),
            running: self.env.running().clone(),
        }
    }

    /// The core itself, while the node runs.
    pub(crate) fn arc(&self) -> Option<Arc<ObjectCore>> {
        self.me.upgrade()
    }
}
