//! Location snapshots of one incarnation: what `close` and `destroy` act on.

use super::kind::{ActorKind, Kind, SpotKind};

/// A Spot's or Actor's location snapshot: the exact incarnation `close` or `destroy`
/// acts on. Not a message target: messages go by ID.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectRef<K: Kind> {
    /// The object's ID.
    pub id: K::Id,
    /// Its ObjectGeneration.
    pub generation: u64,
    /// The MeshName of its owner.
    pub mesh_name: String,
    /// The RID of its owner.
    pub rid: String,
}

/// A Spot's location snapshot.
pub type SpotRef = ObjectRef<SpotKind>;

/// An Actor's location snapshot.
pub type ActorRef = ObjectRef<ActorKind>;

/// Where one incarnation is: what a reference holds besides the ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Location {
    pub(crate) generation: u64,
    pub(crate) mesh_name: String,
    pub(crate) rid: String,
}

impl<K: Kind> ObjectRef<K> {
    /// The reference to `id` at `location`.
    pub(crate) fn at(id: K::Id, location: Location) -> Self {
        ObjectRef {
            id,
            generation: location.generation,
            mesh_name: location.mesh_name,
            rid: location.rid,
        }
    }
}
