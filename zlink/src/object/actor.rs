//! The Actor an application writes: a stateful object with a global ID that belongs to
//! one Spot at a time, run one turn at a time (registered as an [`ActorType`](crate::object::ActorType)).

use async_trait::async_trait;

use super::context::ActorContext;
use super::lifecycle::ClosingReason;
use super::membership::JoinOutcome;
use super::relocation_state::RelocationState;
use super::timer::TimerTick;
use crate::call::PacketKind;
use crate::wire::Payload;
use crate::Result;

/// An Actor's handlers: the packets it takes and the dispatch to them. The
/// `#[zlink::actor]` macro writes this from `#[handler]` methods; by hand, `packets`
/// lists the packet names in order and `handle` receives the position of the one that
/// arrived.
#[async_trait]
pub trait ActorHandlers: Send + 'static {
    /// The packets this Actor type handles, in handler order. A name listed twice is an
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
        ctx: &ActorContext,
        handler: usize,
        payload: Payload,
    ) -> Result<Payload>;

    /// The state adapter of a type declared [`Relocation::Preserve`](crate::object::Relocation::Preserve): the macro returns
    /// `Some(self)` for `relocation = preserve` (and fails to compile unless the type
    /// implements [`RelocationState`]). Other types keep the default `None`.
    fn relocation_state(&mut self) -> Option<&mut dyn RelocationState> {
        None
    }
}

/// An Actor: state plus handlers that run one at a time (`&mut self`). Two messages to
/// one Actor never run concurrently, and messages from one sender run in the order sent.
/// An Actor owns only its own state: to change its Spot's, it sends the Spot a message.
///
/// The lifecycle hooks have defaults; `impl Actor for Player {}` takes them all.
#[async_trait]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an Actor",
    label = "not an Actor",
    note = "add `impl zlink::object::Actor for {Self} {{}}` (its lifecycle hooks all have defaults)"
)]
pub trait Actor: ActorHandlers {
    /// Finishes initialising a new Actor, before its first message.
    async fn on_initialize(&mut self, _ctx: &ActorContext) -> Result<()> {
        Ok(())
    }

    /// A tick of one of the Actor's timers (started with
    /// [`Context::start_timer`](super::Context::start_timer)). An `Err` is logged.
    async fn on_timer(&mut self, _ctx: &ActorContext, _tick: TimerTick) -> Result<()> {
        Ok(())
    }

    /// How a Join this Actor registered ([`Context::join_spot`](super::Context::join_spot))
    /// ended; it runs before any message that arrived after the Join's handler.
    async fn on_join_completed(&mut self, _ctx: &ActorContext, _outcome: JoinOutcome) {}

    /// The Actor's last turn: destroyed ([`ClosingReason::Destroyed`]) or its node is
    /// stopping.
    async fn on_closing(&mut self, _ctx: &ActorContext, _reason: ClosingReason) {}
}
