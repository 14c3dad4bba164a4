//! What an object's lifecycle decides and hears, as values: whether a new Spot is
//! created ([`CreateDecision`]), why an object closes ([`ClosingReason`]), and what a move
//! does to a type's objects ([`Relocation`]).

use bytes::Bytes;

/// What `on_create` decides about a new Spot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateDecision {
    /// The Spot is created; the creator gets this reply (may be empty).
    Accept(Bytes),
    /// The Spot is not created: nothing stays in the store; the creator gets this reply.
    Reject(Bytes),
}

/// Why a Spot or Actor is closing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClosingReason {
    /// A Spot closed through `spots().close`.
    ExplicitClose,
    /// An Actor destroyed through `actors().destroy`.
    Destroyed,
    /// Its node is shutting down.
    HostShutdown,
    /// It moved to another node: this is the last turn of the instance it left behind (a
    /// Spot's; an Actor's instance ends without a hook).
    RelocationOut,
    /// An Instance Spot idle for the node's InstanceSpotIdleTimeout: it is evicted and its
    /// state is not kept.
    IdleEvicted,
}

/// What happens to a Spot of a type when it is moved to another node. Every type declares
/// exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Relocation {
    /// Never moved to another node.
    Disable,
    /// Moved by creating a fresh instance on the target (queued work still moves).
    Recreate,
    /// Moved with its state: the type's [`RelocationState`](crate::object::RelocationState)
    /// adapter captures it on the source and restores it on the target (queued work and
    /// timers move too).
    Preserve,
}
