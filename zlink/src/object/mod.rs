//! Spots and Actors: stateful objects addressed by a global ID wherever they live.
//!
//! A node that registers a [`SpotType`] or an [`ActorType`] is an Object Server for it.
//! Objects are created through the Location Store (exactly one racing creation wins and
//! exactly one factory runs), run one turn at a time on their owner (`&mut self` handlers
//! over a bounded, two-lane mailbox), and take messages by ID from any node of the mesh:
//! the sender resolves the ID through its positive route cache or one store read, and the
//! owner admits the message only under the owner fence it was resolved with.
//!
//! A new Actor starts in its node's Entry Spot, the framework's Spot for one node
//! lifecycle. A running Actor moves to another node live (see [`RelocationState`]): its queue and
//! timers move with it, and messages that still arrive at the old owner follow it.

mod actor;
mod actor_binding;
mod actor_type;
mod adapter;
mod admission;
pub(crate) mod binding;
mod bound_routes;
mod closing;
mod context;
mod core;
pub(crate) mod creation;
mod direct;
mod entry;
mod entry_claim;
mod entry_hooks;
mod env;
pub(crate) mod follow;
mod handler_turn;
mod hosted;
mod hosting;
mod idle_eviction;
mod inbound;
mod inline_turn;
mod instance;
mod instance_spot;
mod joining;
mod launch;
mod lifecycle;
mod live_object;
mod lost_sends;
mod membership;
mod multicast;
mod object_job;
mod object_type;
mod owner_link;
pub(crate) mod placement;
mod port;
pub mod recovery;
mod registry;
mod release;
pub(crate) mod relocation;
mod relocation_faults;
mod relocation_state;
mod remote;
mod resolver;
mod sealed_wait;
mod server;
mod settings;
mod settled_notice;
mod spot;
mod spot_type;
mod stop_list;
mod subscription;
mod timer;
mod turn_gate;
mod turn_host;
mod turn_loop;
mod turn_start;

pub(crate) mod authority;
pub(crate) mod authority_store;
pub(crate) mod mailbox;
pub(crate) mod route_cache;
mod route_traffic;

pub use crate::address::{
    is_entry_spot_id, ActorCreation, ActorId, ActorKind, ActorRef, IdError, Kind, ObjectRef,
    SpotCreation, SpotId, SpotKind, SpotRef, StableType, MAX_OBJECT_ID_BYTES,
};
pub(crate) use crate::address::{uuid_v4 as id_uuid_v4, ObjectKind};
pub use actor::{Actor, ActorHandlers};
pub use context::{ActorContext, Context, SpotContext};
pub use entry_hooks::EntryHooks;
pub(crate) use entry_hooks::EntryHooksFactory;
pub use hosted::{HostedObject, HostedObjects, MAX_HOSTED_PAGE};
pub use lost_sends::LostOneWays;
pub use membership::{Execution, JoinDecision, JoinOutcome};
pub use multicast::MulticastCounts;
pub use object_type::{ActorType, ObjectType, SpotType};
pub use relocation::{BlockedObject, BlockedReason, RelocationReport};
pub use relocation_state::{RelocationState, MAX_CAPTURED_STATE_BYTES};
pub use route_cache::RouteCacheStatus;
pub(crate) use route_cache::{default_route_cache_capacity, DEFAULT_ROUTE_CACHE_MAX_AGE};
pub(crate) use settings::cache_follow_violation;

/// MessageFollowDuration's default: how long a moved object's old owner relays what still
/// arrives.
pub(crate) const MESSAGE_FOLLOW_DURATION: std::time::Duration = std::time::Duration::from_secs(30);
pub use lifecycle::{ClosingReason, CreateDecision, Relocation};
pub(crate) use server::ObjectServer;
pub(crate) use settings::ObjectSettings;
pub use spot::{Spot, SpotHandlers};
pub use timer::{TimerPolicy, TimerTick};

/// A map by object: every local call looks one up (the route cache, the registry), so it
/// hashes with foldhash (seeded per map) rather than SipHash.
pub(crate) type KeyMap<V> =
    std::collections::HashMap<crate::address::ObjectKey, V, foldhash::fast::RandomState>;
