//! The Spot an application writes: a stateful object with a global ID, run one turn at a
//! time, and the type registration that creates it.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

use super::adapter::Hosted;
use super::context::SpotContext;
use super::membership::{Execution, JoinDecision, MemberEvent};
use super::object_type::{Factory, SpotType, TypeDef};
use super::timer::TimerTick;
use crate::address::ActorRef;
use crate::address::{SpotKind, StableType};
use crate::call::BoxFuture;
use crate::call::PacketKind;
use crate::wire::Payload;
use crate::Result;

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

    /// The state adapter of a type declared [`Relocation::Preserve`]: the macro returns
    /// `Some(self)` for `relocation = preserve` (and fails to compile unless the type
    /// implements [`RelocationState`](super::RelocationState)). Other types keep the
    /// default `None`.
    fn relocation_state(&mut self) -> Option<&mut dyn super::RelocationState> {
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
    /// Called only when the Spot type takes Actors ([`SpotType::takes_actors`]); runs
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

/// What happens to a Spot of a type when it is moved to another node. Every type declares
/// exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Relocation {
    /// Never moved to another node.
    Disable,
    /// Moved by creating a fresh instance on the target (queued work still moves).
    Recreate,
    /// Moved with its state: the type's [`RelocationState`](super::RelocationState)
    /// adapter captures it on the source and restores it on the target (queued work and
    /// timers move too).
    Preserve,
}

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
        let subscription = super::multicast::Subscription::new(&self.def, channel, topic, packet)?;
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

    fn relocation_state(&mut self) -> Option<&mut dyn super::RelocationState> {
        SpotHandlers::relocation_state(&mut **self)
    }
}
