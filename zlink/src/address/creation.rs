//! What a create or get-or-create did.

use bytes::Bytes;

use super::object_ref::{ActorRef, Location, SpotRef};

/// The outcome of a create or get-or-create of a Spot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpotCreation {
    /// The Spot existed already (no factory ran, no reply).
    Existing(SpotRef),
    /// This call created it; `on_create` accepted with this reply.
    Created(SpotRef, Bytes),
    /// This call's attempt was declined by `on_create`, with this reply; nothing stays.
    Rejected(Bytes),
}

/// The outcome of an Actor's get-or-create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActorCreation {
    /// The Actor existed already (no factory ran).
    Existing(ActorRef),
    /// This call created it, in its node's Entry Spot.
    Created(ActorRef),
}

/// What a creation did, whatever the object's kind.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// The object existed already.
    Existing(Location),
    /// This call created it, with the `on_create` reply (empty for Actors).
    Created(Location, Bytes),
    /// `on_create` declined, with this reply.
    Rejected(Bytes),
}
