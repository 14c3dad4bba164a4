//! [`EntryHooks`]: what an application hears from its node's Entry Spot.

use async_trait::async_trait;

use super::context::SpotContext;
use crate::address::ActorRef;

/// What an application hears from its node's Entry Spot (register with
/// [`RuntimeBuilder::entry_hooks`](crate::RuntimeBuilder::entry_hooks)). The callbacks run
/// one at a time on the Entry Spot's lifecycle lane; the defaults do nothing.
#[async_trait]
pub trait EntryHooks: Send + 'static {
    /// A new Actor was created in this Entry Spot (its initial membership).
    async fn on_create_actor(&mut self, _ctx: &SpotContext, _actor: &ActorRef) {}

    /// An Actor came back to this Entry Spot from a User Spot.
    async fn on_joined_actor(&mut self, _ctx: &SpotContext, _actor: &ActorRef) {}

    /// An Actor left this Entry Spot for a User Spot.
    async fn on_leave_actor(&mut self, _ctx: &SpotContext, _actor: &ActorRef) {}

    /// The STREAM session bound to an Actor of this Entry Spot disconnected: once per
    /// binding.
    async fn on_disconnect_actor(&mut self, _ctx: &SpotContext, _actor: &ActorRef) {}
}

/// Makes the Entry Spot's hooks when the node starts.
pub(crate) type EntryHooksFactory = dyn Fn() -> Box<dyn EntryHooks> + Send + Sync;
