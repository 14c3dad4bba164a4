//! What an object's turn loop runs: its jobs, where a message's result goes, and what a
//! move's seal hands over and the loop resumes with.

use tokio::sync::{oneshot, OwnedMutexGuard};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::context::TurnName;
use super::instance::{Instance, TurnInfo};
use super::lifecycle::ClosingReason;
use super::mailbox::{Lane, Mailbox};
use super::membership::{JoinDecision, JoinOutcome, MemberEvent};
use super::timer::{TickInbox, TimerRecord, TimerTick, Timers};
use crate::address::{ObjectKind, SpotId};
use crate::call::BoxFuture;
use crate::handle::Handle;
use crate::mesh::PendingReply;
use crate::wire::trace_context::TraceContext;
use crate::wire::{Metadata, Payload};
use crate::{Error, Result};

/// Where a message's result goes: a waiting local caller, or the reply route of a request
/// (or the in-flight permit of a send) that came over the mesh.
pub(crate) enum ReplyTo {
    /// The caller on this node whose task runs the turn: the result is its call's own, and
    /// nothing waits elsewhere. Before the job can wait (queued, handed over, held by a
    /// move) it becomes [`Local`](Self::Local) ([`ReplyTo::wait_for_caller`]).
    Caller,
    /// A caller on this node, waiting on the other end under its own deadline (gone
    /// once it gave up).
    Local(oneshot::Sender<Result<Payload>>),
    Remote(PendingReply),
    /// A request relayed here from an object's old owner: its result is recorded in the
    /// Relocation Store as the reply leaves. (Boxed: only relayed requests carry it, and
    /// every job would otherwise be the size of the largest.)
    Recorded(Box<Recorded>),
}

/// Where a relayed request's result goes, and how it is recorded.
pub(crate) struct Recorded {
    pub(crate) pending: PendingReply,
    pub(crate) recorder: Box<dyn ResultRecorder>,
}

/// Records a relayed request's result where the node that relayed it can read it back if
/// its connection is lost before the reply (the Relocation Store's terminal records).
pub(crate) trait ResultRecorder: Send {
    /// Replies on `pending` with `result` and records it.
    fn reply_and_record(self: Box<Self>, pending: PendingReply, result: Result<bytes::Bytes>);
}

/// What a caller on this node waits on for a job that could not finish on its task.
pub(crate) type CallerWait = oneshot::Receiver<Result<Payload>>;

impl ReplyTo {
    /// A [`Caller`](Self::Caller) reply about to wait becomes a channel to the caller: the
    /// receiver it waits on. (`None`: the reply waits somewhere already, or is no caller's.)
    pub(crate) fn wait_for_caller(reply: &mut Option<ReplyTo>) -> Option<CallerWait> {
        if !matches!(reply, Some(ReplyTo::Caller)) {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        *reply = Some(ReplyTo::Local(tx));
        Some(rx)
    }

    /// The correlation of the remote request this answers (`None`: a caller on this node,
    /// or a send).
    pub(crate) fn remote_correlation(&self) -> Option<u64> {
        match self {
            ReplyTo::Remote(pending) => pending.correlation(),
            ReplyTo::Recorded(recorded) => recorded.pending.correlation(),
            ReplyTo::Caller | ReplyTo::Local(_) => None,
        }
    }

    /// Delivers the result, once.
    pub(crate) fn send(self, result: Result<Payload>) {
        match self {
            // The caller took the result from its own turn (or the job never ran: then
            // the caller was answered where it was refused).
            ReplyTo::Caller => {}
            // A caller that gave up (deadline, cancellation) has no entry any more: the
            // late result is discarded. The reply it waits for is the value itself.
            ReplyTo::Local(waiting) => {
                let _ = waiting.send(crate::mesh::as_replied(result));
            }
            ReplyTo::Remote(pending) => pending.finish(result.and_then(Payload::into_bytes)),
            ReplyTo::Recorded(recorded) => {
                let Recorded { pending, recorder } = *recorded;
                recorder.reply_and_record(pending, result.and_then(Payload::into_bytes))
            }
        }
    }
}

/// A handler's turn that owns the instance it runs on, and gives it back with the result.
pub(crate) type OwnedTurn = BoxFuture<'static, (Box<dyn Instance>, Result<Payload>)>;

/// A turn begun on a caller's task that its object's loop finishes.
pub(crate) enum HandedOver {
    /// The handler waits: the loop drives it on, then answers `reply`.
    Running {
        turn: OwnedTurn,
        reply: Option<ReplyTo>,
        held: Option<OwnedMutexGuard<()>>,
    },
    /// The handler ended (its caller has the result) and registered a Join, which runs
    /// before the next message.
    Ran {
        instance: Box<dyn Instance>,
        ended_normally: bool,
    },
}

impl HandedOver {
    /// A handed-over turn that will not run on (the object closed): its caller hears
    /// `error`.
    pub(crate) fn refuse(self, error: Error) {
        if let HandedOver::Running {
            reply: Some(reply), ..
        } = self
        {
            reply.send(Err(error));
        }
    }
}

/// An object's mailbox: its jobs, and its instance parked there while its loop waits.
pub(crate) type ObjectMailbox = Mailbox<ObjectJob, Box<dyn Instance>>;

/// One unit of work for an object's turn loop.
/// A message for a handler, as its object's queue holds it; a request carries where its
/// result goes.
pub(crate) struct HandlerMessage {
    /// The handler's position in its type's packets.
    pub(crate) handler: usize,
    pub(crate) packet: &'static str,
    pub(crate) payload: Payload,
    pub(crate) metadata: Metadata,
    pub(crate) deadline: Option<Instant>,
    pub(crate) reply: Option<ReplyTo>,
    /// The sender's operation identity (0: a call made on this node).
    pub(crate) operation: u64,
    /// When it was admitted, when the node times turns (a recorder is installed).
    pub(crate) queued_at: Option<std::time::Instant>,
}

/// A message taken apart for its turn: the handler's context, what it runs on, and the
/// reply capability, answered once the turn ended.
pub(crate) struct MessageTurn {
    pub(crate) ctx: TurnInfo,
    pub(crate) handler: usize,
    pub(crate) payload: Payload,
    pub(crate) reply: Option<ReplyTo>,
}

impl HandlerMessage {
    /// Its turn on the incarnation `generation` of an object of `kind`, a member of
    /// `membership` (an Actor's handlers may register a Join).
    #[inline]
    pub(crate) fn into_turn(
        self,
        handle: Handle,
        object: (ObjectKind, u64),
        membership: Option<SpotId>,
    ) -> MessageTurn {
        let HandlerMessage {
            handler,
            packet,
            payload,
            metadata,
            deadline,
            reply,
            operation,
            ..
        } = self;
        let mut ctx = TurnInfo::of_object(
            handle,
            object,
            Some(TurnName::Packet(packet)),
            (deadline, metadata),
            true,
            membership,
        );
        ctx.operation = operation;
        MessageTurn {
            ctx,
            handler,
            payload,
            reply,
        }
    }

    /// What it holds in memory until its handler ran: its payload's encoded size and its
    /// metadata.
    pub(crate) fn bytes(&mut self) -> Result<usize> {
        let metadata = self
            .metadata
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>();
        Ok(self.payload.encoded_len()? + metadata)
    }
}

pub(crate) enum ObjectJob {
    /// A message for a handler.
    Message(HandlerMessage),
    /// A timer's tick; `done` tells the timer the handler finished.
    Tick {
        tick: TimerTick,
        /// The trace context of the turn that started the timer.
        trace: Option<Box<TraceContext>>,
        done: oneshot::Sender<()>,
        /// The timer's token: a tick whose timer was cancelled while it waited never runs.
        cancelled: CancellationToken,
    },
    /// The last turn: `on_closing`, then the mailbox closes.
    Close {
        reason: ClosingReason,
        done: oneshot::Sender<()>,
    },
    /// A membership callback of a Spot that takes Actors; `done` gets its decision.
    Member {
        event: MemberEvent,
        done: oneshot::Sender<JoinDecision>,
    },
    /// The seal of a move, at a turn boundary: the loop holds new arrivals, hands its
    /// backlog, timers and state to `captured`, and waits on `resume` for the outcome.
    Relocate {
        order: Box<dyn SealOrder>,
        resume: oneshot::Receiver<Resume>,
    },
    /// A turn begun on a caller's task that goes on in the loop, ahead of everything
    /// queued (see the `inline_turn` module).
    HandedOver(HandedOver),
}

/// A move's order to seal its object at a turn boundary, as the object's loop takes it
/// (the move, in `relocation`, writes it).
pub(crate) trait SealOrder: Send {
    /// Seals the object: what arrives from now on waits in the move's hold, and its queue,
    /// timers and (`preserve`) state go to the move. Returns the timers it took, to resume
    /// if the move is cancelled; `None` when the move gave up before the seal (then
    /// nothing changed).
    fn seal(
        self: Box<Self>,
        timers: &Timers,
        instance: &mut Box<dyn Instance>,
    ) -> Option<Vec<TimerRecord>>;
}

/// What an object that arrived by a move starts with on its new node.
pub(crate) struct Arrived {
    /// Its timers, continued.
    pub(crate) timers: Vec<TimerRecord>,
    /// The outcome of the Join that moved it, heard before its first message here.
    pub(crate) joined: Option<JoinOutcome>,
}

/// How a move ended for the object's turn loop on the source.
pub(crate) enum Resume {
    /// Cancelled before relay-ready: the queue is back in order (the move put it back)
    /// and the object runs on here.
    Cancelled,
    /// Handed over: the loop ends without a closing hook (the object lives on elsewhere).
    Moved,
}

impl ObjectJob {
    /// [`ReplyTo::wait_for_caller`] for a message's reply.
    pub(crate) fn wait_for_caller(&mut self) -> Option<CallerWait> {
        match self {
            ObjectJob::Message(message) => ReplyTo::wait_for_caller(&mut message.reply),
            _ => None,
        }
    }

    /// Completes a job that will not run, exactly once, with `error`.
    pub(crate) fn refuse(self, error: Error) {
        match self {
            ObjectJob::Message(message) => {
                if let Some(reply) = message.reply {
                    reply.send(Err(error));
                }
            }
            ObjectJob::Close { done, .. } | ObjectJob::Tick { done, .. } => {
                let _ = done.send(());
            }
            // Dropping `done` tells the Join the Spot could not take it.
            ObjectJob::Member { .. } => {}
            // Dropping `captured` tells the move the object could not be sealed.
            ObjectJob::Relocate { .. } => {}
            ObjectJob::HandedOver(turn) => turn.refuse(error),
        }
    }
}

impl TickInbox for ObjectMailbox {
    fn admit_tick(
        &self,
        (tick, trace): (TimerTick, Option<Box<TraceContext>>),
        done: oneshot::Sender<()>,
        cancelled: CancellationToken,
    ) -> bool {
        let job = ObjectJob::Tick {
            tick,
            trace,
            done,
            cancelled,
        };
        self.admit(Lane::Application, job, 0).is_ok()
    }
}
