//! The Actor an application writes: a stateful object with a global ID that belongs to
//! one Spot at a time, run one turn at a time, and the type registration that creates it.

use std::sync::Arc;

use async_trait::async_trait;

use super::adapter::Hosted;
use super::context::ActorContext;
use super::membership::JoinOutcome;
use super::object_type::{ActorType, Factory, TypeDef};
use super::relocation::RelocationState;
use super::spot::{ClosingReason, Relocation};
use super::timer::TimerTick;
use crate::address::ActorKind;
use crate::call::BoxFuture;
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

    /// The state adapter of a type declared [`Relocation::Preserve`]: the macro returns
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

impl ActorType {
    /// An Actor type named `stable_type` (1..=255 bytes) whose Actors are made by
    /// `factory` and moved per `relocation`. The `#[zlink::actor]` macro generates
    /// `Player::actor_type(factory)` calling this. A packet listed twice is an error. A
    /// node that registers one ([`RuntimeBuilder::actor_type`](crate::RuntimeBuilder::actor_type))
    /// runs an Entry Spot, the home of its new Actors.
    pub fn new<A, F>(stable_type: &str, relocation: Relocation, factory: F) -> Result<Self>
    where
        A: Actor,
        F: Fn(&ActorContext) -> A + Send + Sync + 'static,
    {
        let factory = Factory::Actor(Arc::new(move |ctx| Box::new(factory(ctx))));
        TypeDef::new(stable_type, A::packets(), relocation, factory).map(ActorType::of)
    }

    /// The most Actors of this type one node runs: [`max_per_node`](Self::max_per_node).
    pub fn max_actors(self, limit: u32) -> Self {
        self.max_per_node(limit)
    }
}

/// An Actor as the turn loop's adapter calls it.
impl Hosted<ActorKind> for Box<dyn Actor> {
    const NOUN: &'static str = "Actor";

    fn handle<'a>(
        &'a mut self,
        ctx: &'a ActorContext,
        handler: usize,
        payload: Payload,
    ) -> BoxFuture<'a, Result<Payload>> {
        ActorHandlers::handle(&mut **self, ctx, handler, payload)
    }

    fn on_initialize<'a>(&'a mut self, ctx: &'a ActorContext) -> BoxFuture<'a, Result<()>> {
        Actor::on_initialize(&mut **self, ctx)
    }

    fn on_timer<'a>(
        &'a mut self,
        ctx: &'a ActorContext,
        tick: TimerTick,
    ) -> BoxFuture<'a, Result<()>> {
        Actor::on_timer(&mut **self, ctx, tick)
    }

    fn on_closing<'a>(
        &'a mut self,
        ctx: &'a ActorContext,
        reason: ClosingReason,
    ) -> BoxFuture<'a, ()> {
        Actor::on_closing(&mut **self, ctx, reason)
    }

    fn on_join_completed<'a>(
        &'a mut self,
        ctx: &'a ActorContext,
        outcome: JoinOutcome,
    ) -> BoxFuture<'a, ()> {
        Actor::on_join_completed(&mut **self, ctx, outcome)
    }

    fn relocation_state(&mut self) -> Option<&mut dyn RelocationState> {
        ActorHandlers::relocation_state(&mut **self)
    }
}
