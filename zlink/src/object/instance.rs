//! What the turn loop runs, whatever the object's kind: one internal trait the Spot and
//! Actor adapters implement, and what the loop knows of each turn.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::time::Instant;

use super::context::{Context, TurnName};
use super::lifecycle::ClosingReason;
use super::membership::{JoinDecision, JoinOutcome, JoinSlot, MemberEvent};
use super::timer::{TimerTick, Timers};
use crate::address::{Kind, ObjectKind, SpotId};
use crate::call::BoxFuture;
use crate::handle::Handle;
use crate::wire::{Metadata, Payload};
use crate::Result;

/// What the turn loop knows of one turn; an adapter adds what stays the same from turn
/// to turn (the object's typed ID, its timers and its Join slot, given once with
/// [`Instance::attach`]) to make the application's [`Context`](super::Context).
pub(crate) struct TurnInfo {
    pub(crate) handle: Handle,
    pub(crate) generation: u64,
    pub(crate) packet: Option<TurnName>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) metadata: Metadata,
    /// The message's operation identity (0: none, or a call made on this node).
    pub(crate) operation: u64,
    pub(crate) membership: Option<SpotId>,
    /// Whether the turn may register a Join (an Actor's handlers and timer ticks).
    pub(crate) may_join: bool,
}

impl TurnInfo {
    /// The context of a turn of the incarnation `generation` of an object of `kind`: an
    /// Actor's turn carries its membership, and may register a Join when `joins`.
    #[inline]
    pub(crate) fn of_object(
        handle: Handle,
        (kind, generation): (ObjectKind, u64),
        packet: Option<TurnName>,
        (deadline, metadata): (Option<Instant>, Metadata),
        joins: bool,
        membership: Option<SpotId>,
    ) -> TurnInfo {
        let is_actor = kind == ObjectKind::Actor;
        TurnInfo {
            handle,
            generation,
            packet,
            deadline,
            metadata,
            operation: 0,
            membership: membership.filter(|_| is_actor),
            may_join: is_actor && joins,
        }
    }

    /// The context of this turn for the object `id`, with no timers and no Join slot
    /// (the Entry Spot's: it starts no timers and joins nothing).
    pub(crate) fn bare_context<K: Kind>(self, id: K::Id) -> Context<K> {
        Context {
            handle: self.handle,
            id,
            generation: self.generation,
            packet: self.packet,
            deadline: self.deadline,
            metadata: self.metadata,
            operation: self.operation,
            timers: None,
            membership: self.membership,
            joins: None,
        }
    }
}

/// A running object's instance, as its turn loop drives it.
#[async_trait]
pub(crate) trait Instance: Send + 'static {
    /// Starts the handler at position `handler` on `payload`: the handler's own future,
    /// with no box of the adapter's around it. The turn's context stays in the instance
    /// until [`end_turn`](Self::end_turn).
    fn handle(
        &mut self,
        turn: TurnInfo,
        handler: usize,
        payload: Payload,
    ) -> BoxFuture<'_, Result<Payload>>;

    /// Drops the context of the turn that just ended (it holds the node's handle).
    fn end_turn(&mut self) {}

    /// The object's timers and Join slot, which every later turn's context carries; given
    /// once, by the loop that runs the instance.
    fn attach(&mut self, _timers: Arc<Timers>, _joins: Arc<JoinSlot>) {}

    async fn on_initialize(&mut self, turn: TurnInfo) -> Result<()>;
    async fn on_timer(&mut self, turn: TurnInfo, tick: TimerTick) -> Result<()>;
    async fn on_closing(&mut self, turn: TurnInfo, reason: ClosingReason);

    /// A membership callback (Spots that take Actors).
    async fn on_member(&mut self, _turn: TurnInfo, _event: MemberEvent) -> JoinDecision {
        JoinDecision::Accept(Bytes::new())
    }

    /// How a Join this Actor registered ended.
    async fn on_join_completed(&mut self, _turn: TurnInfo, _outcome: JoinOutcome) {}

    /// The object's state for a move (`relocation = preserve`); `None` when its type keeps
    /// no state across a move.
    fn capture_state(&mut self) -> Option<Result<Vec<u8>>> {
        None
    }

    /// Takes the state captured on the node the object came from.
    fn restore_state(&mut self, _state: &[u8]) -> Result<()> {
        Err(crate::Error::new(
            crate::ErrorKind::InvalidOperation,
            "this object's type has no state adapter",
        ))
    }
}

/// What a turn loop holds in place of its instance while the instance is parked in the
/// mailbox or lent to a caller's turn: every call fails, and none is made (the loop runs
/// a turn only with its instance back).
pub(crate) struct Vacant;

fn vacant() -> crate::Error {
    crate::Error::new(
        crate::ErrorKind::InternalFailure,
        "the object's instance is running a turn elsewhere",
    )
}

#[async_trait]
impl Instance for Vacant {
    fn handle(&mut self, _: TurnInfo, _: usize, _: Payload) -> BoxFuture<'_, Result<Payload>> {
        Box::pin(std::future::ready(Err(vacant())))
    }

    async fn on_initialize(&mut self, _: TurnInfo) -> Result<()> {
        Err(vacant())
    }

    async fn on_timer(&mut self, _: TurnInfo, _: TimerTick) -> Result<()> {
        Err(vacant())
    }

    async fn on_closing(&mut self, _: TurnInfo, _: ClosingReason) {}
}
