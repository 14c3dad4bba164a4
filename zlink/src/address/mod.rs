//! How a Spot or an Actor is named and found: global IDs, the two kinds, the reference to
//! one incarnation, and what a creation did. Values only; the object layer acts on them.

mod creation;
mod id;
mod kind;
mod object_ref;

pub(crate) use creation::Outcome;
pub use creation::{ActorCreation, SpotCreation};
pub(crate) use id::uuid_v4;
pub use id::{is_entry_spot_id, ActorId, IdError, SpotId, StableType, MAX_OBJECT_ID_BYTES};
pub(crate) use id::{ObjectKey, ObjectKind};
pub use kind::{ActorKind, Kind, SpotKind};
pub(crate) use object_ref::Location;
pub use object_ref::{ActorRef, ObjectRef, SpotRef};
