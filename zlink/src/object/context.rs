//! What a Spot's or Actor's handler can see about itself and the message it is handling.

use std::sync::Arc;

use tokio::time::Instant;

use super::membership::{JoinRequest, JoinSlot};
use super::timer::{TimerPolicy, Timers};
use crate::address::SpotId;
use crate::address::{ActorKind, Kind, SpotKind};
use crate::handle::Handle;
use crate::wire::Metadata;

/// What a turn is about: the packet of a handler's message (an interned name of its type),
/// or the name of a timer whose tick it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TurnName {
    Packet(&'static str),
    Timer(Arc<str>),
}

impl TurnName {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            TurnName::Packet(name) => name,
            TurnName::Timer(name) => name,
        }
    }
}

/// The context of one turn of a Spot or an Actor.
pub struct Context<K: Kind> {
    pub(crate) handle: Handle,
    pub(crate) id: K::Id,
    pub(crate) generation: u64,
    pub(crate) packet: Option<TurnName>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) metadata: Metadata,
    /// The message's operation identity (0: none).
    pub(crate) operation: u64,
    /// The object's timers; `None` while it is being created.
    pub(crate) timers: Option<Arc<Timers>>,
    /// An Actor's Spot (its Entry Spot or the User Spot it joined); `None` for Spots.
    pub(crate) membership: Option<SpotId>,
    /// Where an Actor handler registers its Join (`None` outside Actor handlers).
    pub(crate) joins: Option<Arc<JoinSlot>>,
}

/// The context of one Spot turn.
pub type SpotContext = Context<SpotKind>;

/// The context of one Actor turn.
pub type ActorContext = Context<ActorKind>;

impl Context<ActorKind> {
    /// The Spot this Actor belongs to now: its node's Entry Spot, or the User Spot it
    /// joined.
    pub fn spot(&self) -> Option<&SpotId> {
        self.membership.as_ref()
    }

    /// Registers a Join of the User Spot `spot` on this node, with `request` for its
    /// `on_actor_join` (at most 1 MiB). It runs when this handler ends normally (not if it
    /// fails), before the Actor's next message; the outcome arrives in
    /// [`Actor::on_join_completed`](super::Actor::on_join_completed). One Join per
    /// handler; lifecycle hooks cannot join (`InvalidOperation`).
    pub fn join_spot(&self, spot: &str, request: impl Into<bytes::Bytes>) -> crate::Result<()> {
        let spot = SpotId::new(spot).map_err(|e| crate::Error::InvalidArgument(e.to_string()))?;
        self.register_join(spot, request.into())
    }

    /// Registers a Join of this node's Entry Spot: leaving the User Spot the Actor is in.
    /// Runs like [`join_spot`](Self::join_spot).
    pub fn leave_spot(&self) -> crate::Result<()> {
        let entry = self
            .handle
            .node()
            .settings()
            .served_objects
            .entry_spot
            .as_deref()
            .and_then(|id| SpotId::new(id).ok())
            .ok_or_else(|| {
                crate::Error::new(
                    crate::ErrorKind::Unavailable,
                    "this node runs no Entry Spot",
                )
            })?;
        self.register_join(entry, bytes::Bytes::new())
    }

    /// Pushes `message` to the STREAM session bound to this Actor, as a Send packet to
    /// its client (the message must be JSON or Raw). It goes to the session owner the
    /// binding names, under this Actor's current generations; the session owner writes it
    /// only if the binding is still the session's. Done once the session owner's link
    /// took it. No binding: `InvalidOperation`.
    pub async fn push<M: crate::Message>(&self, message: &M) -> crate::Result<()> {
        let codec = M::STREAM_CODEC.ok_or_else(|| {
            crate::Error::new(
                crate::ErrorKind::InvalidOperation,
                format!(
                    "{} is not JSON or Raw, which is all a STREAM client reads",
                    M::PACKET_NAME
                ),
            )
        })?;
        let payload = message.encode()?;
        let key = crate::address::ObjectKey::from(&self.id);
        self.handle
            .objects()?
            .clone()
            .push_to_session(key, self.generation, codec, M::PACKET_NAME, payload)
            .await
    }

    fn register_join(&self, spot: SpotId, request: bytes::Bytes) -> crate::Result<()> {
        match &self.joins {
            Some(slot) => slot.register(JoinRequest { spot, request }),
            None => Err(crate::Error::new(
                crate::ErrorKind::InvalidOperation,
                "a Join is registered from an Actor's handler, not from a lifecycle hook",
            )),
        }
    }
}

impl<K: Kind> Context<K> {
    /// The object's global ID.
    pub fn id(&self) -> &K::Id {
        &self.id
    }

    /// Its ObjectGeneration: which incarnation of the ID this is.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Publishes `event` to `topic` on the RouteMesh channel `channel`, for the Spots that
    /// subscribe to it (see [`Multicast::publish`](crate::Multicast::publish)). Awaiting
    /// it keeps the turn only until every target had its turn, never until a subscriber
    /// ran: a Spot may publish to a topic it subscribes to itself.
    pub fn publish<'a, M: crate::wire::Message>(
        &'a self,
        channel: &'a str,
        topic: &'a str,
        event: &M,
    ) -> crate::MulticastPublish<'a> {
        self.handle.multicast().publish(channel, topic, event)
    }

    /// The handle of the node it runs on, for calls from the handler (an awaited call
    /// keeps the turn). It cannot stop the node.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// The packet name of the message being handled (`None` in lifecycle hooks).
    pub fn packet(&self) -> Option<&str> {
        self.packet.as_ref().map(TurnName::as_str)
    }

    /// When the caller stops waiting (requests only).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The message's metadata (empty in lifecycle hooks and ticks). It is never copied
    /// into the reply.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// The operation identity its sender gave the message being handled: the same on the
    /// owner it reached however many Message Follow relays or moves carried it, so a
    /// handler can tell a duplicate of work apart. Together with the sender's node it
    /// names one operation. `None` in hooks and ticks, and for a call made on this node.
    pub fn operation(&self) -> Option<u64> {
        (self.operation != 0).then_some(self.operation)
    }

    /// Starts the timer `name` (restarting it from now if it runs): every `period` a tick
    /// runs as a turn of this object ([`Spot::on_timer`](super::Spot::on_timer),
    /// [`Actor::on_timer`](super::Actor::on_timer)), behind what is queued already.
    /// `policy` says what happens when a tick's handler runs late. Timers start once the
    /// object is created (from `on_initialize` on), and stop when it closes.
    pub fn start_timer(
        &self,
        name: &str,
        period: std::time::Duration,
        policy: TimerPolicy,
    ) -> crate::Result<()> {
        match &self.timers {
            Some(timers) => timers.start(name, period, policy),
            None => Err(crate::Error::new(
                crate::ErrorKind::InvalidOperation,
                "timers start once the object is created: start them in on_initialize or a handler",
            )),
        }
    }

    /// Stops the timer `name`: no tick of it starts any more (one running finishes).
    /// `false` when no such timer runs.
    pub fn cancel_timer(&self, name: &str) -> bool {
        self.timers.as_ref().is_some_and(|t| t.cancel(name))
    }
}
