//! An Actor type as a node registers it ([`ActorType`]'s builder) and as the turn loop's
//! adapter calls its Actors.

use std::sync::Arc;

use super::actor::{Actor, ActorHandlers};
use super::adapter::Hosted;
use super::context::ActorContext;
use super::lifecycle::{ClosingReason, Relocation};
use super::membership::JoinOutcome;
use super::object_type::{ActorType, Factory, TypeDef};
use super::relocation_state::RelocationState;
use super::timer::TimerTick;
use crate::address::ActorKind;
use crate::call::BoxFuture;
use crate::wire::Payload;
use crate::Result;

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
