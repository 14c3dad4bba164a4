//! A Spot type as a node registers it ([`SpotType`]'s builder) and as the turn loop's
//! adapter calls its Spots.

use std::sync::Arc;

use bytes::Bytes;

use super::adapter::Hosted;
use super::context::SpotContext;
use super::lifecycle::{ClosingReason, Relocation};
use super::membership::{Execution, JoinDecision, MemberEvent};
use super::object_type::{Factory, SpotType, TypeDef};
use super::relocation_state::RelocationState;
use super::spot::{Spot, SpotHandlers};
use super::subscription::Subscription;
use super::timer::TimerTick;
use crate::address::{SpotKind, StableType};
use crate::call::{BoxFuture, PacketKind};
use crate::wire::Payload;
use crate::Result;

impl SpotType {
    /// A Spot type named `stable_type` (1..=255 bytes) whose Spots are made by `factory`
    /// and moved per `relocation`. The `#[zlink::spot]` macro generates
    /// `Room::spot_type(factory)` calling this. A packet listed twice is an error.
    pub fn new<S, F>(stable_type: &str, relocation: Relocation, factory: F) -> Result<Self>
    where
        S: Spot,
        F: Fn(&SpotContext) -> S + Send + Sync + 'static,
    {
        let factory = Factory::Spot(Arc::new(move |ctx| Box::new(factory(ctx))));
        TypeDef::new(stable_type, S::packets(), relocation, factory).map(SpotType::of)
    }

    /// The most Spots of this type one node runs: [`max_per_node`](Self::max_per_node).
    pub fn max_spots(self, limit: u32) -> Self {
        self.max_per_node(limit)
    }

    /// Makes Spots of this type take Actors of `actor_type` as members: its membership
    /// callbacks run, and Actors of that type may join it. The `#[zlink::spot]` macro's
    /// `actors = Player` key calls this.
    pub fn takes_actors(mut self, actor_type: &str) -> Result<Self> {
        if self.def.instance {
            return Err(self.no_members_on_instance());
        }
        let actor_type = StableType::new(actor_type)
            .map_err(|e| crate::Error::InvalidArgument(e.to_string()))?;
        self.def.members = Some(actor_type);
        Ok(self)
    }

    /// How its Spots run their turns and their member Actors' (default
    /// [`Execution::SpotWide`]). [`Execution::PerActor`] needs the `recreate` relocation
    /// policy: such a Spot is a stateless shell.
    pub fn execution(mut self, execution: Execution) -> Result<Self> {
        if execution == Execution::PerActor && self.def.instance {
            return Err(self.no_members_on_instance());
        }
        if execution == Execution::PerActor && self.def.relocation != Relocation::Recreate {
            return Err(crate::Error::InvalidArgument(format!(
                "Spot type {} runs PerActor, so its Spot is a stateless shell: its relocation policy must be `recreate`",
                self.def.stable_type
            )));
        }
        self.def.execution = execution;
        Ok(self)
    }

    /// Makes this an Instance Spot type: its Spots are never created by
    /// [`Spots::create`](crate::handle::Spots::create); a Spot-direct call with Instance
    /// intent to an ID that has no Spot activates one on a node serving the type, and that
    /// call's message is its first handler call. An Instance Spot takes no Actors and runs
    /// SpotWide. The `#[zlink::spot(instance, ..)]` macro key calls this.
    pub fn instance(mut self) -> Result<Self> {
        if self.def.members.is_some() || self.def.execution == Execution::PerActor {
            return Err(self.no_members_on_instance());
        }
        self.def.instance = true;
        Ok(self)
    }

    /// Subscribes Spots of this type to Logical Multicast events of `topic` on the
    /// RouteMesh channel `channel`: an event published there with the packet name
    /// `packet` runs that one-way handler on every Spot of this type on each receiving
    /// node. A node serving the type must be a Server member of `channel`
    /// ([`RuntimeBuilder::multicast_channel`](crate::RuntimeBuilder::multicast_channel)
    /// or a channel server). The macro's `#[subscribe(channel = "..", topic = "..")]` on a
    /// handler calls this. Names are 1..=255 bytes; `packet` must be a one-way handler of
    /// the type, subscribed once per channel and topic.
    pub fn subscribe(mut self, channel: &str, topic: &str, packet: &str) -> Result<Self> {
        let subscription = Subscription::new(channel, topic, packet)?;
        if self.def.handler(packet, PacketKind::Send).is_none() {
            return Err(crate::Error::InvalidArgument(format!(
                "Spot type {} subscribes {packet:?} to topic {topic:?}, but has no one-way handler for it",
                self.def.stable_type
            )));
        }
        if self.def.subscriptions.contains(&subscription) {
            return Err(crate::Error::InvalidArgument(format!(
                "Spot type {} subscribes {packet:?} to topic {topic:?} of channel {channel:?} twice",
                self.def.stable_type
            )));
        }
        self.def.subscriptions.push(subscription);
        Ok(self)
    }

    fn no_members_on_instance(&self) -> crate::Error {
        crate::Error::InvalidArgument(format!(
            "Spot type {} is an Instance Spot type: it takes no Actors (no `actors =`, no PerActor execution)",
            self.def.stable_type
        ))
    }
}

/// A Spot as the turn loop's adapter calls it.
impl Hosted<SpotKind> for Box<dyn Spot> {
    const NOUN: &'static str = "Spot";

    fn handle<'a>(
        &'a mut self,
        ctx: &'a SpotContext,
        handler: usize,
        payload: Payload,
    ) -> BoxFuture<'a, Result<Payload>> {
        SpotHandlers::handle(&mut **self, ctx, handler, payload)
    }

    fn on_initialize<'a>(&'a mut self, ctx: &'a SpotContext) -> BoxFuture<'a, Result<()>> {
        Spot::on_initialize(&mut **self, ctx)
    }

    fn on_timer<'a>(
        &'a mut self,
        ctx: &'a SpotContext,
        tick: TimerTick,
    ) -> BoxFuture<'a, Result<()>> {
        Spot::on_timer(&mut **self, ctx, tick)
    }

    fn on_closing<'a>(
        &'a mut self,
        ctx: &'a SpotContext,
        reason: ClosingReason,
    ) -> BoxFuture<'a, ()> {
        Spot::on_closing(&mut **self, ctx, reason)
    }

    fn on_member<'a>(
        &'a mut self,
        ctx: &'a SpotContext,
        event: MemberEvent,
    ) -> BoxFuture<'a, JoinDecision> {
        Box::pin(async move {
            match event {
                MemberEvent::Join { actor, request } => {
                    self.on_actor_join(ctx, &actor, request).await
                }
                MemberEvent::Created { .. } => JoinDecision::Accept(Bytes::new()),
                MemberEvent::Joined { actor } => {
                    self.on_joined_actor(ctx, &actor).await;
                    JoinDecision::Accept(Bytes::new())
                }
                MemberEvent::Left { actor } => {
                    self.on_leave_actor(ctx, &actor).await;
                    JoinDecision::Accept(Bytes::new())
                }
                MemberEvent::Disconnected { actor } => {
                    self.on_disconnect_actor(ctx, &actor).await;
                    JoinDecision::Accept(Bytes::new())
                }
            }
        })
    }

    fn relocation_state(&mut self) -> Option<&mut dyn RelocationState> {
        SpotHandlers::relocation_state(&mut **self)
    }
}
