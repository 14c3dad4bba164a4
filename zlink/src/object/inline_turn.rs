//! A turn on the caller's task: a call on this node to an object with nothing queued or
//! running runs the handler right where the call was made, instead of queueing the
//! message, waking the object's turn loop on another task and waiting for it to answer.
//!
//! Everything a turn guarantees holds as in the loop: the object's instance is lent by its
//! mailbox only while the mailbox is open, empty and idle (so no queued message is
//! overtaken, and no two turns overlap), the lane's room is held for the turn, the gate
//! is taken, panics are contained and a stop ends the handler. What cannot finish on the
//! caller's task goes to the loop as its very next turn:
//! - a handler that waits (its first poll is pending) goes on there, so a caller that gives
//!   up never cancels it, and a one-way's sender is never held up by it;
//! - an Actor handler that registered a Join: the Join runs there before the next message.
//!
//! Turns nest (a handler calling another idle object runs that one too) up to
//! [`MAX_DEPTH`]; deeper calls queue as usual.

use std::cell::Cell;
use std::sync::Arc;

use super::handler_turn::{answer, handler_turn};
use super::live_object::{LiveObject, TurnView};
use super::object_job::{CallerWait, HandedOver, MessageTurn, ObjectJob, OwnedTurn, ReplyTo};
use crate::address::ObjectKind;
use crate::mesh::poll_once;
use crate::wire::Payload;
use crate::Result;

/// How many turns may run inside one another on one thread.
pub(crate) const MAX_DEPTH: u8 = 4;

thread_local! {
    static DEPTH: Cell<u8> = const { Cell::new(0) };
}

/// How a call fared on the caller's task.
pub(crate) enum Inline {
    /// The handler ran here: a request's result as a remote caller would get it; a
    /// one-way's `Ok` (its handler's error is logged, as the loop does).
    Ran(Result<Payload>),
    /// The turn began here and goes on in the loop, which answers the job's reply (a
    /// caller on this node waits on the receiver).
    HandedOver(Option<CallerWait>),
    /// Not run here (the object is busy, closing, moving, or the calls nest too deep):
    /// the job comes back to be queued.
    Declined(ObjectJob),
}

/// Runs `job` (a message of `bytes`) on the caller's task if `live` is idle; `view` is
/// what its turn starts from, read as the message was admitted.
pub(crate) fn run(live: &Arc<LiveObject>, view: TurnView, job: ObjectJob, bytes: usize) -> Inline {
    let depth = DEPTH.with(Cell::get);
    let is_message = matches!(job, ObjectJob::Message(_));
    if depth >= MAX_DEPTH || live.is_stopping() || !is_message {
        return Inline::Declined(job);
    }
    let TurnView {
        gate,
        membership,
        generation,
        changes,
    } = view;
    // A gate other objects take too is locked for the turn, if it is free now.
    let held = match gate.shared().map(|shared| shared.clone().try_lock_owned()) {
        None => None,
        Some(Ok(held)) => Some(held),
        Some(Err(_)) => return Inline::Declined(job),
    };
    let Some(handle) = live.handle().upgrade() else {
        return Inline::Declined(job);
    };
    let Some(lent) = live.mailbox().lend(bytes) else {
        return Inline::Declined(job);
    };
    // A Join may have moved the object behind another gate since the view was read (in
    // a turn of its loop, before this lend): then the loop runs this one.
    if !live.view_holds(changes) {
        live.mailbox().take_back(lent.runner, lent.room);
        return Inline::Declined(job);
    }
    let ObjectJob::Message(message) = job else {
        // (Checked above: only a message gets this far.)
        live.mailbox().take_back(lent.runner, lent.room);
        return Inline::Declined(job);
    };
    let is_actor = live.key.kind == ObjectKind::Actor;
    if let Some(turns) = &handle.node().instruments().turns {
        // A turn taken here found the mailbox empty: its depth is 0, as it is recorded.
        turns.depth(live.key.kind.into(), 0);
        if let Some(queued_at) = message.queued_at {
            turns.waited(live.key.kind.into(), queued_at);
        }
    }
    let MessageTurn {
        ctx,
        handler,
        payload,
        reply,
    } = message.into_turn(handle, (live.key.kind, generation), membership);
    let object = live.clone();
    let mut instance = lent.runner;
    let mut turn: OwnedTurn = Box::pin(async move {
        let cancel = object.cancel_token();
        let kind = object.key.kind;
        let result =
            handler_turn(&mut *instance, gate, cancel, (kind, ctx), handler, payload).await;
        (instance, result)
    });
    DEPTH.with(|d| d.set(depth + 1));
    let polled = poll_once(&mut turn);
    DEPTH.with(|d| d.set(depth));
    let Some((instance, result)) = polled else {
        let mut reply = reply;
        let waiting = ReplyTo::wait_for_caller(&mut reply);
        live.mailbox().hand_over(
            ObjectJob::HandedOver(HandedOver::Running { turn, reply, held }),
            lent.room,
        );
        return Inline::HandedOver(waiting);
    };
    drop(held);
    let ended_normally = result.is_ok();
    if is_actor && live.joins().is_registered() {
        live.mailbox().hand_over(
            ObjectJob::HandedOver(HandedOver::Ran {
                instance,
                ended_normally,
            }),
            lent.room,
        );
    } else {
        live.mailbox().take_back(instance, lent.room);
    }
    match reply {
        // The caller has the result itself; nothing waits on the other end.
        Some(_) => Inline::Ran(crate::mesh::as_replied(result)),
        None => {
            answer(&live.key, None, result);
            Inline::Ran(Ok(Payload::default()))
        }
    }
}
