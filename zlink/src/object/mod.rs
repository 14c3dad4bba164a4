//! Spots and Actors: stateful objects addressed by a global ID wherever they live.
//!
//! The object layer is being built in steps. What is here so far is the foundation the
//! managers and the resolver build on: Spot and Actor IDs and stable types (public); the
//! authority record with its fenced, one-batch transitions in the Location Store; the
//! positive route cache; and the bounded two-lane mailbox (internal).

mod id;

// The managers that drive these land next; until then only their tests use them.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) mod authority;
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) mod authority_store;
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) mod mailbox;
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) mod route_cache;

pub use id::{is_entry_spot_id, ActorId, IdError, SpotId, StableType, MAX_OBJECT_ID_BYTES};
