//! What a Spot's or Actor's turn loop runs with ([`ObjectHost`]), and what it asks of the
//! object layer between turns ([`TurnServices`]). The layer implements the services and
//! the loop holds them weakly: the loop never reaches up into the layer's parts, and a
//! stopped layer is dropped.

use std::sync::{Arc, Weak};

use bytes::Bytes;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::instance::Instance;
use super::live_object::LiveObject;
use super::lost_sends::LostSends;
use super::membership::{JoinOutcome, JoinRequest, JoinStep};
use super::stop_list::StopList;
use super::timer::Timers;
use crate::address::SpotId;
use crate::call::BoxFuture;
use crate::handle::WeakHandle;
use crate::store::OwnerLease;

/// What an object's turn loop runs with: its node's handle (weakly), the layer's services,
/// the owner lease its ticks need, the task tracker and the token that stops it with its
/// node.
pub(crate) struct ObjectHost {
    pub(crate) handle: WeakHandle,
    /// The object layer, for Joins, moves and an Instance Spot's first message.
    pub(crate) services: Weak<dyn TurnServices>,
    pub(crate) lease: Arc<OwnerLease>,
    pub(crate) tracker: TaskTracker,
    pub(crate) cancel: CancellationToken,
    /// Where a queued one-way that never runs is counted.
    pub(crate) lost: Arc<LostSends>,
    /// The node's turn loops, which its stop halts.
    pub(crate) running: Arc<StopList>,
}

/// An Actor's Join to a Spot on another node: the Actor moves there.
pub(crate) struct JoinAcross<'a> {
    pub(crate) live: &'a Arc<LiveObject>,
    pub(crate) instance: &'a mut Box<dyn Instance>,
    pub(crate) timers: &'a Timers,
    pub(crate) spot: SpotId,
    pub(crate) request: Bytes,
    pub(crate) rid: &'a str,
}

/// What a turn loop asks of the object layer it runs in, between turns.
pub(crate) trait TurnServices: Send + Sync + 'static {
    /// An Instance Spot's activating message ran: its recovery pointer is cleared (before
    /// the loop takes its next job).
    fn first_message_ran<'a>(&'a self, live: &'a LiveObject) -> BoxFuture<'a, ()>;

    /// Runs the Join an Actor's handler registered, here or (`JoinStep::Across`) by a move.
    fn join<'a>(&'a self, actor: &'a Arc<LiveObject>, join: JoinRequest)
        -> BoxFuture<'a, JoinStep>;

    /// Moves the Actor to the node of the Spot it joins; `None` once it moved (the loop
    /// ends), else how the Join ended.
    fn join_across<'a>(&'a self, join: JoinAcross<'a>) -> BoxFuture<'a, Option<JoinOutcome>>;
}
