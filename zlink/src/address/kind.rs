//! The two kinds of global object, as types: what a [`Context`](super::Context) is for.

use std::fmt::{Debug, Display};

use super::id::{ActorId, SpotId};

mod sealed {
    pub trait Sealed {}
}

/// A kind of global object: [`SpotKind`] or [`ActorKind`]. Sealed.
pub trait Kind: sealed::Sealed + Send + Sync + 'static {
    /// The kind's ID type.
    type Id: Clone + Debug + Display + Eq + std::hash::Hash + Send + Sync + 'static;
}

/// Spots: objects that hold shared state and Actors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpotKind {}

/// Actors: objects that belong to one Spot at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActorKind {}

impl sealed::Sealed for SpotKind {}
impl sealed::Sealed for ActorKind {}

impl Kind for SpotKind {
    type Id = SpotId;
}

impl Kind for ActorKind {
    type Id = ActorId;
}
