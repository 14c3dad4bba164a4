//! The Spot an application writes: a stateful object with a global ID, run one turn at a
//! time (registered as a [`SpotType`](crate::object::SpotType)).

use async_trait::async_trait;
use bytes::Bytes;

use super::context::SpotContext;
use super::lifecycle::{ClosingReason, CreateDecision};
use super::membership::JoinDecision;
use super::relocation_state::RelocationState;
use super::timer::TimerTick;
use crate::address::ActorRef;
use crate::call::PacketKind;
use crate::wire::Payload;
use crate::Result;

/// A Spot's handlers: the packets it takes and the dispatch to them. The
/// `#[zlink::spot]` macro writes this from `#[handler]` methods; by hand, `packets` lists
/// the packet names in order and `handle` receives the position of the one that arrived.
#[async_trait]
pub trait SpotHandlers: Send + 'static {
    /// The packets this Spot type handles, in handler order. A name listed twice is an
    /// error when the type is registered.
    fn packets() -> Vec<(String, PacketKind)>
    where
        Self: Sized;

    /// Handles one message for the handler at position `handler` of
    /// [`packets`](Self::packets). For a request, `Ok(payload)` is the reply and an `Err`
    /// becomes an error reply; for a send, the payload is ignored. A message from a caller
    /// on this node may be the value itself ([`Payload::into_message`] reads either).
    async fn handle(
        &mut self,
        ctx: &SpotContext,
        handler: usize,
        payload: Payload,
    ) -> Result<Payload>;

    /// The state adapter of a type declared [`Relocation::Preserve`](crate::object::Relocation::Preserve): the macro returns
    /// `Some(self)` for `relocation = preserve` (and fails to compile unless the type
    /// implements [`RelocationState`]). Other types keep the
    /// default `None`.
    fn relocation_state(&mut self) -> Option<&mut dyn RelocationState> {
        None
    }

    /// The typed creation hook of a type declared with `create = Args`: the
    /// `#[zlink::spot]` macro writes it from an `#[on_create]` method, decoding the
    /// creator's request as `Args` (a request that does not decode is declined, saying
    /// why). `None`, the default, leaves the decision to [`Spot::on_create`].
    async fn on_create_typed(
        &mut self,
        _ctx: &SpotContext,
        _request: &Bytes,
    ) -> Option<CreateDecision> {
        None
    }

    /// An Actor of this node asks to join: accept or decline, with a reply for the Actor.
    /// Called only when the Spot type takes Actors ([`SpotType::takes_actors`](crate::object::SpotType::takes_actors)); runs
    /// on the Spot's lifecycle lane, before its queued messages. The `#[zlink::spot]`
    /// macro writes it from an `#[on_actor_join]` method.
    async fn on_actor_join(
        &mut self,
        _ctx: &SpotContext,
        _actor: &ActorRef,
        _request: Bytes,
    ) -> JoinDecision {
        JoinDecision::Accept(Bytes::new())
    }

    /// An Actor joined (its membership is committed). From `#[on_joined_actor]`.
    async fn on_joined_actor(&mut self, _ctx: &SpotContext, _actor: &ActorRef) {}

    /// An Actor left for another Spot (not when it is destroyed). From `#[on_leave_actor]`.
    async fn on_leave_actor(&mut self, _ctx: &SpotContext, _actor: &ActorRef) {}

    /// The STREAM session bound to a member Actor disconnected (its client closed or was
    /// closed, or the session called `notify_disconnected`): once per binding. From
    /// `#[on_disconnect_actor]`.
    async fn on_disconnect_actor(&mut self, _ctx: &SpotContext, _actor: &ActorRef) {}
}

/// A Spot: state plus handlers that run one at a time (`&mut self`). Two messages to one
/// Spot never run concurrently, and messages from one sender run in the order sent.
///
/// The lifecycle hooks have defaults; `impl Spot for Room {}` takes them all.
#[async_trait]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Spot",
    label = "not a Spot",
    note = "add `impl zlink::object::Spot for {Self} {{}}` (its lifecycle hooks all have defaults)"
)]
pub trait Spot: SpotHandlers {
    /// Decides whether a newly made Spot is created, from the creator's request.
    async fn on_create(&mut self, _ctx: &SpotContext, _request: Bytes) -> CreateDecision {
        CreateDecision::Accept(Bytes::new())
    }

    /// Finishes initialising an accepted Spot, before its first message.
    async fn on_initialize(&mut self, _ctx: &SpotContext) -> Result<()> {
        Ok(())
    }

    /// A tick of one of the Spot's timers (started with
    /// [`SpotContext::start_timer`]); `tick.name` says which. An `Err` is logged.
    async fn on_timer(&mut self, _ctx: &SpotContext, _tick: TimerTick) -> Result<()> {
        Ok(())
    }

    /// The Spot's last turn: its messages have stopped and it is about to go.
    async fn on_closing(&mut self, _ctx: &SpotContext, _reason: ClosingReason) {}
}
