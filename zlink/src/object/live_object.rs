//! A Spot or Actor running on its owner node: its instance, owned by one task that takes
//! one turn at a time from the object's mailbox, and the authority it was admitted under.

use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use futures::FutureExt;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use std::collections::HashSet;

use super::authority_store::Versioned;
use super::id::{ObjectKey, ObjectKind, SpotId};
use super::instance::{Instance, TurnInfo};
use super::lost_sends::{LostReason, LostSends};
use super::mailbox::{Lane, Mailbox, Refused, LIFECYCLE_LANE};
use super::membership::{
    self, Execution, JoinDecision, JoinOutcome, JoinSlot, JoinStep, MemberEvent,
};
use super::object_type::{Factory, TypeDef};
use super::relocation::Departure;
use super::server::ObjectServer;
use super::spot::ClosingReason;
use super::timer::{TimerRecord, TimerTick, Timers};
use crate::call::PendingTable;
use crate::handler::PacketKind;
use crate::mesh::{MeshNode, PendingReply};
use crate::store::{LeaseToken, OwnerLease};
use crate::sync::LockUnpoisoned;
use crate::wire::{Metadata, RouteFence};
use crate::{Error, ErrorKind, Result};

/// Where a message's result goes: a waiting local caller, or the reply route of a request
/// (or the in-flight permit of a send) that came over the mesh.
pub(crate) enum ReplyTo {
    /// A caller on this node, waiting in the node's local pending table.
    Pending {
        table: Arc<PendingTable>,
        correlation: u64,
    },
    Remote(PendingReply),
    /// A request relayed here from an object's old owner: its result is recorded in the
    /// Relocation Store as the reply leaves.
    Recorded {
        pending: PendingReply,
        recorder: super::relocation::Recorder,
    },
}

impl ReplyTo {
    /// Delivers the result, once.
    pub(crate) fn send(self, result: Result<Bytes>) {
        match self {
            // A caller that gave up (deadline, cancellation) has no entry any more: the
            // late result is discarded.
            ReplyTo::Pending { table, correlation } => {
                let result = crate::mesh::as_replied(result);
                table.complete(correlation, super::direct::LOCAL_CALLS, result);
            }
            ReplyTo::Remote(pending) => pending.finish(result),
            ReplyTo::Recorded { pending, recorder } => recorder.reply_and_record(pending, result),
        }
    }
}

/// One unit of work for an object's turn loop.
pub(crate) enum ObjectJob {
    /// A message for a handler; a request carries where its result goes.
    Message {
        handler: usize,
        packet: Arc<str>,
        payload: Bytes,
        metadata: Metadata,
        deadline: Option<Instant>,
        reply: Option<ReplyTo>,
    },
    /// A timer's tick; `done` tells the timer the handler finished.
    Tick {
        tick: TimerTick,
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
        captured: oneshot::Sender<Captured>,
        resume: oneshot::Receiver<Resume>,
    },
}

/// What an object's seal handed to its move.
pub(crate) struct Captured {
    /// The authority it was sealed under.
    pub(crate) authority: Versioned,
    /// Its queued application work, oldest first, with each job's bytes.
    pub(crate) backlog: Vec<(ObjectJob, usize)>,
    pub(crate) timers: Vec<TimerRecord>,
    /// The application's state (`preserve`), or `None`.
    pub(crate) state: Option<Result<Vec<u8>>>,
    /// Where what arrives after the seal waits.
    pub(crate) departure: Arc<Departure>,
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
    /// Completes a job that will not run, exactly once, with `error`.
    pub(crate) fn refuse(self, error: Error) {
        match self {
            ObjectJob::Message { reply, .. } => {
                if let Some(reply) = reply {
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
        }
    }
}

/// What an object's turn loop runs with: its node (weakly), the owner lease its ticks need,
/// the task tracker and the token that stops it with its node.
pub(crate) struct ObjectHost {
    pub(crate) node: Weak<MeshNode>,
    /// The object layer, for the Joins an Actor's handlers register.
    pub(crate) server: Weak<ObjectServer>,
    pub(crate) lease: Arc<OwnerLease>,
    pub(crate) tracker: TaskTracker,
    pub(crate) cancel: CancellationToken,
    /// Where a queued one-way that never runs is counted.
    pub(crate) lost: Arc<LostSends>,
}

/// Runs a hook or handler with panics contained: a panic is an `InternalFailure` for this
/// one call, and the object goes on.
async fn caught<T>(work: impl std::future::Future<Output = T>) -> Result<T> {
    std::panic::AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .map_err(|_| {
            tracing::error!("a handler or hook panicked; the object continues");
            Error::new(ErrorKind::InternalFailure, "the handler panicked")
        })
}

/// How long `on_closing` may run when the object is stopped (its node stops, or its close
/// gave up waiting): a stuck hook never holds a node's shutdown.
const STOPPING_HOOK_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The end of a stopped object: `on_closing(HostShutdown)` runs once, bounded.
async fn stopped(
    key: &ObjectKey,
    gate: Arc<Gate>,
    instance: &mut Box<dyn Instance>,
    turn: Option<TurnInfo>,
) {
    let Some(turn) = turn else { return };
    // Even the last hooks of a SpotWide Spot and its members take turns.
    let last_turn = async {
        let _held = gate.lock().await;
        TURN_GATE
            .scope(
                gate.clone(),
                caught(instance.on_closing(turn, ClosingReason::HostShutdown)),
            )
            .await
    };
    if tokio::time::timeout(STOPPING_HOOK_LIMIT, last_turn)
        .await
        .is_err()
    {
        tracing::warn!(object = %key, "on_closing did not end in time while stopping");
    }
}

/// Closes an object's mailbox when its turn loop ends for any reason (a panic included), so
/// no queued job is left without its answer.
struct CloseOnExit {
    object: Arc<LiveObject>,
    kind: ErrorKind,
    why: &'static str,
}

impl Drop for CloseOnExit {
    fn drop(&mut self) {
        self.object.refuse_queued(self.kind, self.why);
    }
}

/// A Spot's members on this node.
#[derive(Default)]
struct Members {
    actors: HashSet<Arc<str>>,
    closing: bool,
}

/// The execution gate: one turn at a time among the objects that share it (a SpotWide
/// Spot and its member Actors); every other object has a gate of its own.
pub(crate) type Gate = tokio::sync::Mutex<()>;

tokio::task_local! {
    /// The gate the running turn holds: a request from a handler to an object behind the
    /// same gate would wait for itself.
    static TURN_GATE: Arc<Gate>;
}

/// A running Spot or Actor.
pub(crate) struct LiveObject {
    pub(crate) key: ObjectKey,
    pub(crate) object_type: Arc<TypeDef>,
    authority: Mutex<Versioned>,
    mailbox: Arc<Mailbox<ObjectJob>>,
    /// Stops this object (and only it): its node stops, or its close gave up waiting.
    cancel: CancellationToken,
    /// Its own gate, and the one its turns take now (a SpotWide Spot's, for a member).
    own_gate: Arc<Gate>,
    gate: Mutex<Arc<Gate>>,
    /// An Actor's Spot; `None` for Spots.
    membership: Mutex<Option<SpotId>>,
    /// A Spot's member Actors on this node, and whether it is closing (then it takes
    /// none: a close and a Join never both succeed).
    members: Mutex<Members>,
    /// The Join an Actor's running handler registered.
    joins: Arc<JoinSlot>,
    /// An object that arrived by a move: its timers continue, and `on_initialize` does not
    /// run again.
    arrived_with: Mutex<Option<Arrived>>,
    /// Where a queued one-way that never runs is counted.
    lost: Arc<LostSends>,
}

impl LiveObject {
    /// Makes the object reachable and starts its turn loop. The loop waits for `go`: `true`
    /// once the creation committed (then `on_initialize` runs, then one message at a
    /// time until it closes or its node stops), `false` (or dropped) when it did not
    /// (then whatever was queued is refused and nothing ever runs). Registering before the
    /// commit means the owner admits messages from the moment the store says Ready.
    pub(crate) fn start(
        key: ObjectKey,
        object_type: Arc<TypeDef>,
        authority: Versioned,
        instance: Box<dyn Instance>,
        host: ObjectHost,
        go: oneshot::Receiver<bool>,
        arrived_with: Option<Arrived>,
    ) -> Arc<LiveObject> {
        let mailbox = Mailbox::new(LIFECYCLE_LANE, object_type.queue);
        let membership = authority
            .record
            .membership
            .as_deref()
            .and_then(|spot| SpotId::new(spot).ok());
        let own_gate = Arc::new(Gate::new(()));
        let live = Arc::new(LiveObject {
            key,
            object_type,
            authority: Mutex::new(authority),
            mailbox,
            cancel: host.cancel.clone(),
            gate: Mutex::new(own_gate.clone()),
            own_gate,
            membership: Mutex::new(membership),
            members: Mutex::new(Members::default()),
            joins: Arc::new(JoinSlot::default()),
            arrived_with: Mutex::new(arrived_with),
            lost: host.lost.clone(),
        });
        let object = live.clone();
        let tracker = host.tracker.clone();
        tracker.spawn(async move {
            let cancel = host.cancel.clone();
            let committed = tokio::select! {
                biased;
                _ = cancel.cancelled() => false,
                go = go => go.unwrap_or(false),
            };
            // Whatever way the loop ends, the mailbox closes and every queued job gets its
            // one answer.
            let closer = if committed {
                let closer = CloseOnExit {
                    object: object.clone(),
                    kind: ErrorKind::ShuttingDown,
                    why: "the object stopped before the message ran",
                };
                object.run(instance, host).await;
                closer
            } else {
                CloseOnExit {
                    object: object.clone(),
                    kind: ErrorKind::Unavailable,
                    why: "the object's creation did not commit",
                }
            };
            drop(closer);
        });
        live
    }

    /// The turn loop of a committed object.
    async fn run(self: &Arc<Self>, mut instance: Box<dyn Instance>, host: ObjectHost) {
        let ObjectHost {
            node,
            server,
            lease,
            tracker,
            cancel,
            lost: _,
        } = host;
        // Timers stop with the object: at its close or its node's stop.
        let timer_stop = cancel.child_token();
        let fence = self.fence();
        let timers = Timers::new(
            Arc::downgrade(&self.mailbox),
            lease,
            fence,
            tracker,
            timer_stop.clone(),
        );
        let generation = self.generation();
        let is_actor = self.key.kind == ObjectKind::Actor;
        // Only an Actor's handlers and ticks may register a Join.
        let handler_context = |packet: Option<Arc<str>>, deadline, metadata| {
            node.upgrade().map(|node| TurnInfo {
                node,
                generation,
                packet,
                deadline,
                metadata,
                timers: Some(timers.clone()),
                membership: if is_actor { self.membership() } else { None },
                joins: is_actor.then(|| self.joins.clone()),
            })
        };
        let context = |packet: Option<Arc<str>>, deadline, metadata| {
            handler_context(packet, deadline, metadata).map(|mut turn| {
                turn.joins = None;
                turn
            })
        };
        let Some(ctx) = context(None, None, Metadata::new()) else {
            return;
        };
        let arrived = self.arrived_with.lock_unpoisoned().take();
        let initialized = match arrived {
            // A moved object was initialised where it was created; a Join that moved it
            // completes before its first message here.
            Some(Arrived {
                timers: records,
                joined,
            }) => {
                if let Err(e) = timers.resume(&records) {
                    tracing::warn!(object = %self.key, error = %e, "the moved timers did not resume");
                }
                if let Some(outcome) = joined {
                    self.complete_join(&mut instance, &context, &cancel, outcome)
                        .await;
                }
                Some(Ok(()))
            }
            None => tokio::select! {
                biased;
                _ = cancel.cancelled() => None,
                result = caught(instance.on_initialize(ctx)) => Some(result.and_then(|r| r)),
            },
        };
        match initialized {
            None => {
                timer_stop.cancel();
                return stopped(
                    &self.key,
                    self.gate(),
                    &mut instance,
                    context(None, None, Metadata::new()),
                )
                .await;
            }
            Some(Err(e)) => tracing::warn!(object = %self.key, error = %e, "on_initialize failed"),
            Some(Ok(())) => {}
        }
        loop {
            let turn = tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    timer_stop.cancel();
                    return stopped(&self.key, self.gate(), &mut instance, context(None, None, Metadata::new())).await;
                }
                turn = self.mailbox.next_turn() => turn,
            };
            let Some(mut turn) = turn else { return };
            let Some(job) = turn.take_job() else { continue };
            // One turn at a time among the objects sharing the gate.
            let gate = self.gate();
            // An uncontended gate (every object but a busy SpotWide member) is taken at once.
            let held = match gate.try_lock() {
                Ok(held) => held,
                Err(_) => tokio::select! {
                    biased;
                    _ = cancel.cancelled() => {
                        job.refuse(Error::new(ErrorKind::ShuttingDown, "the object stopped before the message ran"));
                        timer_stop.cancel();
                        return stopped(&self.key, self.gate(), &mut instance, context(None, None, Metadata::new())).await;
                    }
                    held = gate.lock() => held,
                },
            };
            // A handler or tick that ran: whether it ended normally (its Join runs then).
            let ran = match job {
                ObjectJob::Message {
                    handler,
                    packet,
                    payload,
                    metadata,
                    deadline,
                    reply,
                } => {
                    let Some(ctx) = handler_context(Some(packet), deadline, metadata) else {
                        return;
                    };
                    // A handler stuck past shutdown is stopped: shutdown never waits on it.
                    let handled = TURN_GATE
                        .scope(gate.clone(), caught(instance.handle(ctx, handler, payload)));
                    // The handler goes first: one that finishes at once never polls the
                    // stop token; one that hangs is dropped when the token fires.
                    let result = tokio::select! {
                        biased;
                        result = handled => result.and_then(|r| r),
                        _ = cancel.cancelled() => Err(Error::new(
                            ErrorKind::ShuttingDown,
                            "the object was stopped during the handler",
                        )),
                    };
                    let joined = result.is_ok();
                    match reply {
                        Some(reply) => reply.send(result),
                        None => {
                            if let Err(e) = result {
                                tracing::warn!(object = %self.key, error = %e, "send handler failed");
                            }
                        }
                    }
                    drop(held);
                    Some(joined)
                }
                ObjectJob::Tick {
                    tick,
                    done,
                    cancelled,
                } => {
                    let mut joined = false;
                    if !cancelled.is_cancelled() {
                        let name = tick.name.clone();
                        let Some(ctx) = handler_context(Some(name.clone()), None, Metadata::new())
                        else {
                            return;
                        };
                        let ticking =
                            TURN_GATE.scope(gate.clone(), caught(instance.on_timer(ctx, tick)));
                        let ticked = tokio::select! {
                            biased;
                            ticked = ticking => ticked.and_then(|r| r),
                            _ = cancel.cancelled() => Ok(()),
                        };
                        joined = ticked.is_ok();
                        if let Err(e) = ticked {
                            tracing::warn!(object = %self.key, timer = %name, error = %e, "timer handler failed");
                        }
                    }
                    let _ = done.send(());
                    drop(held);
                    Some(joined)
                }
                ObjectJob::Member { event, done } => {
                    let Some(ctx) = context(None, None, Metadata::new()) else {
                        return;
                    };
                    // A Join its Actor gave up on is not admitted any more.
                    if matches!(event, MemberEvent::Join { .. }) && done.is_closed() {
                        continue;
                    }
                    let deciding =
                        TURN_GATE.scope(gate.clone(), caught(instance.on_member(ctx, event)));
                    let decided = tokio::select! {
                        biased;
                        _ = cancel.cancelled() => None,
                        decided = deciding => decided.ok(),
                    };
                    // A panicking callback declines nothing: the Join sees the Spot fail.
                    if let Some(decision) = decided {
                        let _ = done.send(decision);
                    }
                    None
                }
                ObjectJob::Relocate { captured, resume } => {
                    let Some(layer) = server.upgrade() else {
                        continue;
                    };
                    let sealed = self.seal_for_move(&layer, &timers, &mut instance);
                    drop(layer);
                    let records = sealed.timers.clone();
                    if let Err(sealed) = captured.send(sealed) {
                        // The move gave up before the seal: nothing changed.
                        self.cancel_departure(&server, sealed);
                        let _ = timers.resume(&records);
                        continue;
                    }
                    // A sealed object runs nothing: the others behind its gate (a SpotWide
                    // Spot and its members) go on, and may be sealed for the same move.
                    drop(held);
                    let resumed = tokio::select! {
                        biased;
                        _ = cancel.cancelled() => None,
                        resumed = resume => Some(resumed),
                    };
                    match resumed {
                        None => {
                            timer_stop.cancel();
                            return stopped(
                                &self.key,
                                self.gate(),
                                &mut instance,
                                context(None, None, Metadata::new()),
                            )
                            .await;
                        }
                        Some(Ok(Resume::Cancelled)) => {
                            if let Err(e) = timers.resume(&records) {
                                tracing::warn!(object = %self.key, error = %e, "timers did not resume after a cancelled move");
                            }
                        }
                        // A move that vanished without an outcome handed nothing over.
                        Some(Ok(Resume::Moved)) | Some(Err(_)) => {
                            timer_stop.cancel();
                            // The instance a Spot left behind hears its last turn.
                            if self.key.kind == ObjectKind::Spot {
                                if let Some(ctx) = context(None, None, Metadata::new()) {
                                    // The gate (given up while sealed) is taken again for
                                    // the hook, both within the hook's time limit.
                                    let closing =
                                        async {
                                            let _held = gate.lock().await;
                                            TURN_GATE
                                                .scope(
                                                    gate.clone(),
                                                    caught(instance.on_closing(
                                                        ctx,
                                                        ClosingReason::RelocationOut,
                                                    )),
                                                )
                                                .await
                                        };
                                    if tokio::time::timeout(STOPPING_HOOK_LIMIT, closing)
                                        .await
                                        .is_err()
                                    {
                                        tracing::warn!(object = %self.key, "on_closing did not end in time after a move");
                                    }
                                }
                            }
                            drop(turn);
                            self.refuse_queued(
                                ErrorKind::Unavailable,
                                "the object moved to another node",
                            );
                            return;
                        }
                    }
                    None
                }
                ObjectJob::Close { reason, done } => {
                    timer_stop.cancel();
                    if let Some(ctx) = context(None, None, Metadata::new()) {
                        // A close that gave up waiting stops the hook too.
                        let closing =
                            TURN_GATE.scope(gate.clone(), caught(instance.on_closing(ctx, reason)));
                        tokio::select! {
                            biased;
                            _ = cancel.cancelled() => {}
                            _ = closing => {}
                        }
                    }
                    drop(turn);
                    drop(held);
                    self.refuse_queued(
                        ErrorKind::Unavailable,
                        "the object closed before the message ran",
                    );
                    let _ = done.send(());
                    return;
                }
            };
            if let Some(ended_normally) = ran {
                let left = self
                    .after_handler(
                        ended_normally,
                        &server,
                        &mut instance,
                        &timers,
                        &context,
                        &cancel,
                    )
                    .await;
                if left {
                    timer_stop.cancel();
                    drop(turn);
                    self.refuse_queued(ErrorKind::Unavailable, "the object moved to another node");
                    return;
                }
            }
        }
    }

    /// After an Actor's handler or tick: the Join it registered runs (only if it ended
    /// normally), before the next message, and the Actor hears the outcome as a turn.
    /// `true` when the Join moved the Actor to another node (its loop here ends).
    async fn after_handler<C>(
        self: &Arc<Self>,
        ended_normally: bool,
        server: &Weak<ObjectServer>,
        instance: &mut Box<dyn Instance>,
        timers: &Timers,
        context: &C,
        cancel: &CancellationToken,
    ) -> bool
    where
        C: Fn(Option<Arc<str>>, Option<Instant>, Metadata) -> Option<TurnInfo>,
    {
        if self.key.kind != ObjectKind::Actor {
            return false;
        }
        let Some(join) = self.joins.take() else {
            return false;
        };
        if !ended_normally {
            return false;
        }
        let Some(server) = server.upgrade() else {
            return false;
        };
        let step = tokio::select! {
            biased;
            _ = cancel.cancelled() => return false,
            step = membership::join(&server, self, join) => step,
        };
        let outcome = match step {
            JoinStep::Done(outcome) => outcome,
            // A Spot on another node: the Join is a move of this Actor.
            JoinStep::Across { spot, request, rid } => {
                let across = super::relocation::join_across(
                    &server, self, instance, timers, spot, request, &rid,
                );
                match tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return false,
                    outcome = across => outcome,
                } {
                    Some(outcome) => outcome,
                    None => return true,
                }
            }
        };
        drop(server);
        self.complete_join(instance, context, cancel, outcome).await;
        false
    }

    /// The Actor hears how its Join ended, as a turn.
    async fn complete_join<C>(
        &self,
        instance: &mut Box<dyn Instance>,
        context: &C,
        cancel: &CancellationToken,
        outcome: JoinOutcome,
    ) where
        C: Fn(Option<Arc<str>>, Option<Instant>, Metadata) -> Option<TurnInfo>,
    {
        let gate = self.gate();
        let _held = tokio::select! {
            biased;
            _ = cancel.cancelled() => return,
            held = gate.lock() => held,
        };
        if let Some(turn) = context(None, None, Metadata::new()) {
            let completed = TURN_GATE.scope(
                gate.clone(),
                caught(instance.on_join_completed(turn, outcome)),
            );
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {}
                _ = completed => {}
            }
        }
    }

    /// Seals this object for a move at a turn boundary: what arrives from now on waits in
    /// its hold; its queue, timers and (`preserve`) state are taken out.
    pub(crate) fn seal_for_move(
        &self,
        layer: &ObjectServer,
        timers: &Timers,
        instance: &mut Box<dyn Instance>,
    ) -> Captured {
        let authority = self.authority();
        // Held from here on: what arrives after the seal waits for the outcome.
        let departure = layer.departures.hold(
            &self.key,
            authority.record.fence.clone(),
            authority.record.route.clone(),
        );
        self.mailbox.seal();
        let backlog = self.mailbox.take_application_backlog();
        let timers = timers.capture();
        // Only `preserve` carries the application's state across.
        let state = match self.object_type.relocation {
            super::spot::Relocation::Preserve => instance.capture_state(),
            _ => None,
        };
        Captured {
            authority,
            backlog,
            timers,
            state,
            departure,
        }
    }

    /// Undoes a seal whose move went away before taking it.
    fn cancel_departure(&self, server: &Weak<ObjectServer>, sealed: Captured) {
        sealed.departure.cancel(self, sealed.backlog);
        if let Some(layer) = server.upgrade() {
            layer.departures.remove(&sealed.departure);
        }
    }

    /// Opens a sealed queue again after a cancelled move: `backlog` ahead, `held` after.
    pub(crate) fn reopen_after_move(
        &self,
        backlog: Vec<(ObjectJob, usize)>,
        held: Vec<(ObjectJob, usize)>,
    ) {
        self.mailbox.put_back(backlog, held);
    }

    /// Whether the running turn holds this object's gate: a request to it from there
    /// would wait for itself.
    pub(crate) fn gate_held_by_caller(&self) -> bool {
        let gate = self.gate();
        TURN_GATE
            .try_with(|held| Arc::ptr_eq(held, &gate))
            .unwrap_or(false)
    }

    /// The authority this object runs under now.
    pub(crate) fn authority(&self) -> Versioned {
        self.authority.lock_unpoisoned().clone()
    }

    /// Moves an Actor to `spot`'s gate (a SpotWide Spot's), or back to its own.
    pub(crate) fn use_gate_of(&self, spot: Option<&LiveObject>) {
        let gate = match spot {
            Some(spot) if spot.object_type.execution == Execution::SpotWide => {
                spot.own_gate.clone()
            }
            _ => self.own_gate.clone(),
        };
        *self.gate.lock_unpoisoned() = gate;
    }

    pub(crate) fn set_membership(&self, spot: Option<SpotId>) {
        *self.membership.lock_unpoisoned() = spot;
    }

    fn members(&self) -> std::sync::MutexGuard<'_, Members> {
        self.members.lock_unpoisoned()
    }

    /// Counts `actor` as a member; `false` once the Spot is closing.
    pub(crate) fn add_member(&self, actor: &Arc<str>) -> bool {
        let mut members = self.members();
        if members.closing {
            return false;
        }
        members.actors.insert(actor.clone());
        true
    }

    /// This Spot's member Actors on this node, sorted.
    pub(crate) fn member_ids(&self) -> Vec<Arc<str>> {
        let mut ids: Vec<Arc<str>> = self.members().actors.iter().cloned().collect();
        ids.sort();
        ids
    }

    /// Takes no Join while it moves (whatever its members); [`reopen`](Self::reopen)
    /// undoes it.
    pub(crate) fn hold_joins(&self) {
        self.members().closing = true;
    }

    pub(crate) fn remove_member(&self, actor: &str) {
        self.members().actors.remove(actor);
    }

    /// Starts closing if no Actor is a member: from then on no Join lands here. `false`
    /// (nothing changed) while it has members.
    pub(crate) fn close_if_empty(&self) -> bool {
        let mut members = self.members();
        if !members.actors.is_empty() {
            return false;
        }
        members.closing = true;
        true
    }

    /// A close that did not go through: Joins may land again.
    pub(crate) fn reopen(&self) {
        self.members().closing = false;
    }

    /// Whether this is its node's Entry Spot.
    pub(crate) fn is_entry(&self) -> bool {
        matches!(self.object_type.factory, Factory::Entry)
    }

    /// Closes the mailbox and answers everything still queued (a one-way, which has no
    /// one to answer, is counted lost).
    fn refuse_queued(&self, kind: ErrorKind, why: &str) {
        for job in self.mailbox.close() {
            let error = Error::new(kind, why);
            if let ObjectJob::Message {
                handler, packet, ..
            } = &job
            {
                let one_way = self
                    .object_type
                    .packets
                    .get(*handler)
                    .is_some_and(|(_, kind)| *kind == PacketKind::Send);
                if one_way {
                    self.lost
                        .record(&self.key, packet, LostReason::Stopped, &error);
                }
            }
            job.refuse(error);
        }
    }

    /// The owner fence this object runs under.
    fn fence(&self) -> super::authority::OwnerFence {
        self.authority.lock_unpoisoned().record.fence.clone()
    }

    pub(crate) fn set_authority(&self, authority: Versioned) {
        *self.authority.lock_unpoisoned() = authority;
    }

    /// An Actor's Spot now; `None` for Spots.
    pub(crate) fn membership(&self) -> Option<SpotId> {
        self.membership.lock_unpoisoned().clone()
    }

    /// The gate this object's turns take now.
    pub(crate) fn gate(&self) -> Arc<Gate> {
        self.gate.lock_unpoisoned().clone()
    }

    /// Its ObjectGeneration.
    pub(crate) fn generation(&self) -> u64 {
        self.authority
            .lock_unpoisoned()
            .record
            .fence
            .object_generation
    }

    /// Whether a message resolved with `fence` may be admitted here: the owner change and
    /// the lease it names are this node's current ones (the ObjectGeneration is not
    /// compared: a Spot re-created on the same owner takes the message, seed 000 §2.6).
    pub(crate) fn admits(&self, fence: &RouteFence, lease: &LeaseToken) -> bool {
        let authority = self.authority.lock_unpoisoned();
        authority.record.state == super::authority::AuthorityState::Ready
            && authority.record.fence.owner_generation == fence.owner_generation
            && authority.record.fence.lease_generation == fence.lease_generation
            && authority.record.fence.held_by(lease)
    }

    fn lane(job: &ObjectJob) -> Lane {
        match job {
            ObjectJob::Close { .. } | ObjectJob::Member { .. } | ObjectJob::Relocate { .. } => {
                Lane::Lifecycle
            }
            ObjectJob::Message { .. } | ObjectJob::Tick { .. } => Lane::Application,
        }
    }

    /// Queues a framework notice on the lifecycle lane, past its bound; `false` once the
    /// object is closed.
    pub(crate) fn deliver_notice(&self, job: ObjectJob) -> bool {
        match self.mailbox.admit_notice(Lane::Lifecycle, job) {
            Ok(()) => true,
            Err((_, job)) => {
                job.refuse(Error::new(ErrorKind::Unavailable, "the object is closed"));
                false
            }
        }
    }

    /// Queues a job if there is room now; a refused job comes back (whole, so its caller
    /// answers it with the reason).
    #[allow(clippy::result_large_err)]
    pub(crate) fn try_deliver(
        &self,
        job: ObjectJob,
        bytes: usize,
    ) -> std::result::Result<(), (Refused, ObjectJob)> {
        self.mailbox.admit(Self::lane(&job), job, bytes)
    }

    /// Queues a job, waiting for room until `by` (a local send's send timeout).
    #[allow(clippy::result_large_err)]
    pub(crate) async fn deliver_by(
        &self,
        job: ObjectJob,
        bytes: usize,
        by: Instant,
    ) -> std::result::Result<(), (Refused, ObjectJob)> {
        self.mailbox
            .admit_by(Self::lane(&job), job, bytes, by)
            .await
    }

    /// Stops this Spot now: the running handler or hook is dropped, `on_closing` runs
    /// (bounded) unless it was running, and everything queued is refused.
    pub(crate) fn stop(&self) {
        self.mailbox.seal();
        self.cancel.cancel();
    }

    /// Stops admitting messages (a close has begun).
    pub(crate) fn seal(&self) {
        self.mailbox.seal();
    }
}
