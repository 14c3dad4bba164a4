//! The turn loop of one committed Spot or Actor: it owns the application's instance and
//! takes one turn at a time from the object's mailbox, behind the object's gate. Each
//! kind of job is one step: a message, a timer tick, a member event, a move's seal, a
//! close. After an Actor's handler or tick, the Join it registered runs before the next
//! message. The loop runs on a task only while it has work: an idle object's loop is
//! parked in its mailbox, and the arrival that gives it work spawns it again.

use std::sync::{Arc, Weak};

use tokio::sync::{oneshot, OwnedMutexGuard};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::context::TurnName;
use super::handler_turn::{answer, caught, handler_turn};
use super::instance::{Instance, TurnInfo, Vacant};
use super::lifecycle::ClosingReason;
use super::live_object::{LiveObject, TurnView};
use super::mailbox::{Next, ParkedLoop, Reclaimed, Turn};
use super::membership::{JoinOutcome, JoinStep, MemberEvent};
use super::object_job::{Arrived, HandedOver, HandlerMessage, ObjectJob, Resume, SealOrder};
use super::sealed_wait::{SealOutcome, Sealed};
use super::stop_list::Listed;
use super::timer::Timers;
use super::turn_gate::{self, Gate, TurnGate};
use super::turn_host::{JoinAcross, ObjectHost, TurnServices};
use super::turn_start::{Begin, InitializeFirst};
use crate::address::{ObjectKey, ObjectKind, SpotId};
use crate::handle::WeakHandle;
use crate::mesh::traced::InboundTrace;
use crate::wire::trace_context::TraceContext;
use crate::wire::Metadata;
use crate::{Error, ErrorKind};

/// How long `on_closing` may run when the object is stopped (its node stops, or its close
/// gave up waiting): a stuck hook never holds a node's shutdown.
const STOPPING_HOOK_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);
/// How long a loop whose mailbox ran empty keeps its task before it parks.
const LINGER: std::time::Duration = std::time::Duration::from_millis(1);

/// What a step leaves the loop to do.
enum Step {
    /// Take the next job.
    Next,
    /// A handler or tick ran; whether it ended normally (then its Join runs).
    Ran(bool),
    /// The loop ends here; what is still queued is refused with `refuse`, if given.
    End(Option<(ErrorKind, &'static str)>),
    /// The object was stopped: its last hook runs, then the loop ends.
    Stopped,
}

/// How a busy period of the loop ended.
enum Served {
    /// The mailbox is empty: the loop waits for work.
    Idle(Box<TurnLoop>),
    /// The loop ends.
    Ended,
}

/// The loop of one object and everything its steps share.
pub(super) struct TurnLoop {
    object: Arc<LiveObject>,
    /// The instance, or [`Vacant`] while it is parked in the mailbox or lent (`away`).
    instance: Box<dyn Instance>,
    away: bool,
    handle: WeakHandle,
    services: Weak<dyn TurnServices>,
    /// Its timers (stopped at its close, its move or its node's stop).
    timers: Arc<Timers>,
    cancel: CancellationToken,
    generation: u64,
    /// An Instance Spot whose activating message has yet to run: the recovery pointer is
    /// cleared right after that message's turn.
    pending_pointer: bool,
    /// Its creation (or arrival) committed: what its end answers queued work with.
    committed: bool,
    /// Where it runs while it has work.
    tracker: TaskTracker,
    runtime: tokio::runtime::Handle,
    /// Its place on the node's stop list, given up as the loop ends.
    _listed: Option<Listed>,
}

/// Whatever way the loop ends (a panic included), the mailbox closes and every queued job
/// gets its one answer.
impl Drop for TurnLoop {
    fn drop(&mut self) {
        if self.committed {
            self.object.refuse_queued(
                ErrorKind::ShuttingDown,
                "the object stopped before the message ran",
            );
        } else {
            self.object.refuse_queued(
                ErrorKind::Unavailable,
                "the object's creation did not commit",
            );
        }
    }
}

/// An idle loop, parked in its mailbox, goes back to work on a task of its own.
impl ParkedLoop for TurnLoop {
    fn resume(self: Box<Self>) {
        let (tracker, runtime) = (self.tracker.clone(), self.runtime.clone());
        tracker.spawn_on(self.serve_then_park(), &runtime);
    }
}

impl TurnLoop {
    /// The loop of `object`, on the node's stop list while `listed` lives.
    pub(super) fn new(
        object: Arc<LiveObject>,
        instance: Box<dyn Instance>,
        host: ObjectHost,
        listed: Option<Listed>,
    ) -> Self {
        let mailbox = Arc::downgrade(object.mailbox());
        let inbox: std::sync::Weak<dyn super::timer::TickInbox> = mailbox;
        let timers = Timers::new(
            inbox,
            host.lease,
            object.fence(),
            host.tracker.clone(),
            host.cancel.clone(),
        );
        object.watch_timers(&timers);
        TurnLoop {
            generation: object.generation(),
            object,
            instance,
            away: false,
            handle: host.handle,
            services: host.services,
            timers,
            cancel: host.cancel,
            pending_pointer: false,
            committed: false,
            tracker: host.tracker,
            runtime: tokio::runtime::Handle::current(),
            _listed: listed,
        }
    }

    fn key(&self) -> &ObjectKey {
        &self.object.key
    }

    /// What a hook or handler sees of this turn. Only an Actor's handlers and ticks may
    /// register a Join (`joins`).
    fn turn_info(
        &self,
        packet: Option<TurnName>,
        deadline: Option<Instant>,
        metadata: Metadata,
        joins: bool,
    ) -> Option<TurnInfo> {
        let membership = (self.key().kind == ObjectKind::Actor)
            .then(|| self.object.membership())
            .flatten();
        self.turn_info_in(packet, deadline, metadata, joins, membership)
    }

    /// [`turn_info`](Self::turn_info) with the object's Spot read already.
    fn turn_info_in(
        &self,
        packet: Option<TurnName>,
        deadline: Option<Instant>,
        metadata: Metadata,
        joins: bool,
        membership: Option<SpotId>,
    ) -> Option<TurnInfo> {
        let object = (self.key().kind, self.generation);
        let handle = self.handle.upgrade()?;
        Some(TurnInfo::of_object(
            handle,
            object,
            packet,
            (deadline, metadata),
            joins,
            membership,
        ))
    }

    /// The span and trace context of a turn with `ctx`.
    fn inbound_trace(&self, ctx: &TurnInfo) -> InboundTrace {
        let node = ctx.handle.node();
        let surface = match self.key().kind {
            ObjectKind::Spot => "spot",
            ObjectKind::Actor => "actor",
        };
        let packet = ctx.packet.as_ref().map_or("", TurnName::as_str);
        let propagation = node.settings().trace_propagation.as_deref();
        InboundTrace::of(node.identity(), propagation, surface, packet, &ctx.metadata)
    }

    /// The context of a lifecycle hook (no packet, no Join).
    fn hook_info(&self) -> Option<TurnInfo> {
        self.turn_info(None, None, Metadata::new(), false)
    }

    /// Runs the loop until the object closes, moves away or is stopped, from `begin`: a
    /// new object's `on_initialize` runs first, before its creation commits.
    ///
    /// While the object is idle no task runs it: the loop is parked in the mailbox, and
    /// the arrival of work resumes it on a task of its own, so a million idle objects do
    /// not each keep a task with room for their largest turn.
    pub(super) async fn run(mut self, begin: Begin) {
        let first = match begin {
            Begin::AfterCommit(commit) => {
                let go = tokio::select! {
                    biased;
                    _ = self.cancel.cancelled() => false,
                    go = commit => go.unwrap_or(false),
                };
                if !go {
                    return;
                }
                self.committed = true;
                None
            }
            Begin::InitializeFirst(first) => Some(first),
        };
        if self.hook_info().is_none() {
            return;
        }
        self.instance
            .attach(self.timers.clone(), self.object.joins().clone());
        if let Some(serving) = Box::pin(self.start(first)).await {
            Box::new(serving).serve_then_park().await;
        }
    }

    /// Busy periods until the loop ends or parks in its mailbox (work that arrived
    /// between its last look and the park keeps it going).
    async fn serve_then_park(self: Box<Self>) {
        let mut serving = self;
        loop {
            let Served::Idle(idle) = serving.serve().await else {
                return;
            };
            let mailbox = idle.object.mailbox().clone();
            // A busy object's next message tends to follow within a moment, and waking
            // a loop still on its task costs less than starting one.
            if mailbox.arrival_within(LINGER).await {
                serving = idle;
                continue;
            }
            match mailbox.park(idle) {
                Some(woken) => serving = woken,
                None => return,
            }
        }
    }

    /// `on_initialize`, then (with `first`) the wait for the creation's commit; the loop,
    /// when the object goes on to serve.
    async fn start(mut self, first: Option<InitializeFirst>) -> Option<Self> {
        if !self.initialize().await {
            match first {
                None => self.stop().await,
                // Never Ready: nothing was published, so no `on_closing` either.
                Some(_) => self.timers.stop(),
            }
            return None;
        }
        match first {
            Some(first) => self.committed(first).await.then_some(self),
            None => Some(self),
        }
    }

    /// Takes turns until the mailbox is empty (then [`Served::Idle`]) or the loop ends.
    async fn serve(mut self: Box<Self>) -> Served {
        // The turn that just ended: its room goes back as the next one is taken.
        let mut finished = None;
        loop {
            // A stopped object runs nothing more. A queued job is taken at once; an empty
            // mailbox is waited on alone: a stop (the object's or its node's) halts the
            // object, which wakes it.
            if self.object.is_stopping() {
                drop(finished);
                self.stop_when_back().await;
                return Served::Ended;
            }
            // The instance goes with the look: it comes back with a turn to run, or is
            // parked for a caller's turn while nothing is queued.
            let runner = (!self.away).then(|| self.lend_instance());
            let mut turn = match self.object.mailbox().next_for_loop(finished.take(), runner) {
                Next::Closed(runner) => {
                    self.instance_back(runner);
                    return Served::Ended;
                }
                Next::Wait => return Served::Idle(self),
                Next::Run(turn, runner) => {
                    self.instance_back(runner);
                    turn
                }
            };
            let Some(job) = turn.take_job() else { continue };
            let step = 'step: {
                // A turn a caller began holds its gate already.
                let job = match job {
                    ObjectJob::HandedOver(handed) => {
                        break 'step self.finish_handed_over(handed).await
                    }
                    job => job,
                };
                // One turn at a time among the objects sharing the gate: an Actor's own needs
                // no lock; an uncontended shared one is taken at once, with no future.
                let TurnView {
                    gate, membership, ..
                } = self.object.turn_view();
                let held = match gate.shared().map(|shared| shared.clone().try_lock_owned()) {
                    None => None,
                    Some(Ok(held)) => Some(held),
                    Some(Err(_)) => match gate.held_unless(&self.cancel).await {
                        Some(held) => Some(held),
                        None => {
                            self.stop_refusing(job).await;
                            return Served::Ended;
                        }
                    },
                };
                match job {
                    ObjectJob::Message(message) => {
                        match self.message(gate, held, message, membership).await {
                            Some(step) => step,
                            None => return Served::Ended,
                        }
                    }
                    ObjectJob::Tick {
                        tick,
                        trace,
                        done,
                        cancelled,
                    } => self.tick(&gate, held, (tick, trace), done, cancelled).await,
                    ObjectJob::Member { event, done } => {
                        self.member(&gate, held, event, done).await
                    }
                    ObjectJob::Relocate { order, resume } => {
                        self.relocate(held, order, resume).await
                    }
                    ObjectJob::Close { reason, done } => {
                        self.close(&gate, turn, held, reason, done).await;
                        return Served::Ended;
                    }
                    ObjectJob::HandedOver(handed) => self.finish_handed_over(handed).await,
                }
            };
            let step = self.followed_up(step).await;
            match self.after_step(step, turn) {
                Then::Next(turn) => finished = Some(turn),
                Then::Stop(turn) => {
                    // Its room goes back once the stop is over, as the loop ends.
                    let _ended = turn;
                    self.stop().await;
                    return Served::Ended;
                }
                Then::End => return Served::Ended,
            }
        }
    }

    /// `step`, followed up: after a handler ran, the Join it asked for (Actors only).
    async fn followed_up(&mut self, step: Step) -> Step {
        match step {
            Step::Ran(ended_normally) => self.after_handler(ended_normally).await,
            other => other,
        }
    }

    /// What the loop does after `step` of `turn` (a handler's step already followed up).
    #[inline]
    fn after_step(&mut self, step: Step, turn: LoopTurn) -> Then {
        match step {
            Step::Next | Step::Ran(_) => Then::Next(turn),
            Step::Stopped => Then::Stop(turn),
            Step::End(refuse) => {
                self.timers.stop();
                drop(turn);
                if let Some((kind, why)) = refuse {
                    self.object.refuse_queued(kind, why);
                }
                Then::End
            }
        }
    }

    /// The instance, out to the mailbox (a [`Vacant`] stays in its place).
    fn lend_instance(&mut self) -> Box<dyn Instance> {
        self.away = true;
        std::mem::replace(&mut self.instance, Box::new(Vacant))
    }

    fn instance_back(&mut self, runner: Option<Box<dyn Instance>>) {
        if let Some(instance) = runner {
            self.instance = instance;
            self.away = false;
        }
    }

    /// A turn a caller began on its own task, finished here: its instance comes back.
    async fn finish_handed_over(&mut self, handed: HandedOver) -> Step {
        match handed {
            HandedOver::Running { turn, reply, held } => {
                let (instance, result) = turn.await;
                self.instance_back(Some(instance));
                let ended_normally = result.is_ok();
                answer(self.key(), reply, result);
                drop(held);
                Step::Ran(ended_normally)
            }
            HandedOver::Ran {
                instance,
                ended_normally,
            } => {
                self.instance_back(Some(instance));
                Step::Ran(ended_normally)
            }
        }
    }

    /// A stopped object's end, once its instance is back from wherever it is.
    async fn stop_when_back(mut self) {
        while self.away {
            match self.object.mailbox().reclaim() {
                Reclaimed::Runner(instance) => self.instance_back(Some(instance)),
                Reclaimed::HandedOver(mut turn) => {
                    if let Some(ObjectJob::HandedOver(handed)) = turn.take_job() {
                        self.finish_handed_over(handed).await;
                    }
                }
                Reclaimed::Wait => self.object.mailbox().arrival().await,
                Reclaimed::Gone => break,
            }
        }
        self.stop().await
    }

    /// A created object whose `on_initialize` ended: says so, then waits for the Ready
    /// commit. `false` when it did not commit (nothing else runs).
    async fn committed(&mut self, first: InitializeFirst) -> bool {
        let _ = first.initialized.send(Ok(()));
        let go = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => false,
            go = first.commit => go.unwrap_or(false),
        };
        if !go {
            self.timers.stop();
            return false;
        }
        self.committed = true;
        // An Instance Spot's activating message runs first; its recovery pointer is
        // cleared between that turn and the next job (see `message`).
        self.pending_pointer = self.object.authority().record.activation.is_some();
        true
    }

    /// `on_initialize` for a new object; a moved one resumes its timers and completes the
    /// Join that moved it instead. `false` when the object was stopped first.
    async fn initialize(&mut self) -> bool {
        let arrived = self.object.take_arrived();
        let initialized = match arrived {
            // A moved object was initialised where it was created; a Join that moved it
            // completes before its first message here.
            Some(Arrived {
                timers: records,
                joined,
            }) => {
                if let Err(e) = self.timers.resume(&records) {
                    tracing::warn!(object = %self.key(), error = %e, "the moved timers did not resume");
                }
                if let Some(outcome) = joined {
                    self.complete_join(outcome).await;
                }
                Some(Ok(()))
            }
            None => {
                let Some(ctx) = self.hook_info() else {
                    return false;
                };
                tokio::select! {
                    biased;
                    _ = self.cancel.cancelled() => None,
                    result = caught(self.instance.on_initialize(ctx)) => Some(result.and_then(|r| r)),
                }
            }
        };
        match initialized {
            None => false,
            Some(Err(e)) => {
                tracing::warn!(object = %self.key(), error = %e, "on_initialize failed");
                true
            }
            Some(Ok(())) => true,
        }
    }

    /// A handler call; its result is the reply (requests) or is logged (one-ways).
    async fn message(
        &mut self,
        gate: TurnGate,
        held: Option<OwnedMutexGuard<()>>,
        message: HandlerMessage,
        membership: Option<SpotId>,
    ) -> Option<Step> {
        let handle = self.handle.upgrade()?;
        if let Some(turns) = &handle.node().instruments().turns {
            let kind = self.key().kind.into();
            turns.depth(kind, self.object.mailbox().queued());
            if let Some(queued_at) = message.queued_at {
                turns.waited(kind, queued_at);
            }
        }
        let turn = message.into_turn(handle, (self.key().kind, self.generation), membership);
        let result = handler_turn(
            &mut *self.instance,
            gate,
            &self.cancel,
            (self.object.key.kind, turn.ctx),
            turn.handler,
            turn.payload,
        )
        .await;
        let ended_normally = result.is_ok();
        answer(self.key(), turn.reply, result);
        if std::mem::take(&mut self.pending_pointer) {
            // Before this loop takes the next job (a move's seal above all, which is fenced
            // on the authority it reads). The caller need not wait for it: a pointer left
            // in a Ready authority never selects another node (seed 002 §10 item 11).
            if let Some(layer) = self.services.upgrade() {
                layer.first_message_ran(&self.object).await;
            }
        }
        drop(held);
        Some(Step::Ran(ended_normally))
    }

    /// A timer tick, unless its timer was cancelled after it was queued.
    async fn tick(
        &mut self,
        gate: &TurnGate,
        held: Option<OwnedMutexGuard<()>>,
        (tick, trace): (super::timer::TimerTick, Option<Box<TraceContext>>),
        done: oneshot::Sender<()>,
        cancelled: CancellationToken,
    ) -> Step {
        let mut ended_normally = false;
        if !cancelled.is_cancelled() {
            let name = tick.name.clone();
            // A tick carries on the trace of the turn that started its timer.
            let metadata = trace.map_or_else(Metadata::new, |t| t.carried());
            let Some(ctx) =
                self.turn_info(Some(TurnName::Timer(name.clone())), None, metadata, true)
            else {
                return Step::End(None);
            };
            let inbound = self.inbound_trace(&ctx);
            let ticking = turn_gate::scope(
                gate.clone(),
                caught(inbound.run(self.instance.on_timer(ctx, tick))),
            );
            let ticked = tokio::select! {
                biased;
                ticked = ticking => ticked.and_then(|r| r),
                _ = self.cancel.cancelled() => Ok(()),
            };
            ended_normally = ticked.is_ok();
            if let Err(e) = ticked {
                tracing::warn!(object = %self.key(), timer = %name, error = %e, "timer handler failed");
            }
        }
        let _ = done.send(());
        drop(held);
        Step::Ran(ended_normally)
    }

    /// A Spot decides on a member event (a Join or a leave of one of its Actors).
    async fn member(
        &mut self,
        gate: &TurnGate,
        held: Option<OwnedMutexGuard<()>>,
        event: MemberEvent,
        done: oneshot::Sender<super::membership::JoinDecision>,
    ) -> Step {
        let Some(ctx) = self.hook_info() else {
            return Step::End(None);
        };
        // A Join its Actor gave up on is not admitted any more.
        if matches!(event, MemberEvent::Join { .. }) && done.is_closed() {
            return Step::Next;
        }
        let deciding = turn_gate::scope(gate.clone(), caught(self.instance.on_member(ctx, event)));
        let decided = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => None,
            decided = deciding => decided.ok(),
        };
        // A panicking callback declines nothing: the Join sees the Spot fail.
        if let Some(decision) = decided {
            let _ = done.send(decision);
        }
        drop(held);
        Step::Next
    }

    /// A move seals the object at this turn boundary, then waits for its outcome: back to
    /// work after a cancelled move, the end of this loop after one that handed it over.
    async fn relocate(
        &mut self,
        held: Option<OwnedMutexGuard<()>>,
        order: Box<dyn SealOrder>,
        resume: oneshot::Receiver<Resume>,
    ) -> Step {
        let sealed = Sealed {
            key: &self.object.key,
            timers: &self.timers,
            instance: &mut self.instance,
            cancel: &self.cancel,
        };
        let outcome = sealed.wait(held, order, resume).await;
        match outcome {
            SealOutcome::Resumed => Step::Next,
            SealOutcome::Stopped => Step::Stopped,
            SealOutcome::Moved => {
                self.timers.stop();
                // The instance a Spot left behind hears its last turn.
                if self.key().kind == ObjectKind::Spot {
                    self.last_hook(&self.object.gate(), ClosingReason::RelocationOut)
                        .await;
                }
                Step::End(Some((
                    ErrorKind::Unavailable,
                    "the object moved to another node",
                )))
            }
        }
    }

    /// `on_closing`, then the end: what is still queued is refused, and the close hears
    /// it is done.
    async fn close(
        mut self,
        gate: &TurnGate,
        turn: Turn<ObjectJob, Box<dyn Instance>>,
        held: Option<OwnedMutexGuard<()>>,
        reason: ClosingReason,
        done: oneshot::Sender<()>,
    ) {
        self.timers.stop();
        if let Some(ctx) = self.hook_info() {
            // A close that gave up waiting stops the hook too.
            let closing =
                turn_gate::scope(gate.clone(), caught(self.instance.on_closing(ctx, reason)));
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {}
                _ = closing => {}
            }
        }
        drop(turn);
        drop(held);
        self.object.refuse_queued(
            ErrorKind::Unavailable,
            "the object closed before the message ran",
        );
        let _ = done.send(());
    }

    /// `on_closing(reason)` with the gate taken again (it was given up while sealed),
    /// both within the hook's time limit.
    async fn last_hook(&mut self, gate: &Arc<Gate>, reason: ClosingReason) {
        let Some(ctx) = self.hook_info() else { return };
        let key = self.key().clone();
        let instance = &mut self.instance;
        let last_turn = async {
            let _held = gate.lock().await;
            let marked = TurnGate::Shared(gate.clone());
            turn_gate::scope(marked, caught(instance.on_closing(ctx, reason))).await
        };
        if tokio::time::timeout(STOPPING_HOOK_LIMIT, last_turn)
            .await
            .is_err()
        {
            tracing::warn!(object = %key, ?reason, "on_closing did not end in time");
        }
    }

    /// Stops the object before `job` ran: its caller hears `ShuttingDown`.
    async fn stop_refusing(self, job: ObjectJob) {
        let stopped = "the object stopped before the message ran";
        job.refuse(Error::new(ErrorKind::ShuttingDown, stopped));
        self.stop().await
    }

    /// The end of a stopped object: `on_closing(HostShutdown)` runs once, bounded.
    async fn stop(mut self) {
        self.timers.stop();
        let gate = self.object.gate();
        self.last_hook(&gate, ClosingReason::HostShutdown).await;
    }

    /// After an Actor's handler or tick: the Join it registered runs (only if it ended
    /// normally), before the next message, and the Actor hears the outcome as a turn.
    /// Ends the loop when the Join moved the Actor to another node.
    async fn after_handler(&mut self, ended_normally: bool) -> Step {
        if self.key().kind != ObjectKind::Actor {
            return Step::Next;
        }
        let Some(join) = self.object.joins().take() else {
            return Step::Next;
        };
        let Some(layer) = self.services.upgrade().filter(|_| ended_normally) else {
            return Step::Next;
        };
        let step = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Step::Next,
            step = layer.join(&self.object, join) => step,
        };
        let outcome = match step {
            JoinStep::Done(outcome) => outcome,
            // A Spot on another node: the Join is a move of this Actor.
            JoinStep::Across { spot, request, rid } => {
                let across = layer.join_across(JoinAcross {
                    live: &self.object,
                    instance: &mut self.instance,
                    timers: &self.timers,
                    spot,
                    request,
                    rid: &rid,
                });
                let cancel = self.cancel.clone();
                match tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return Step::Next,
                    outcome = across => outcome,
                } {
                    Some(outcome) => outcome,
                    None => {
                        return Step::End(Some((
                            ErrorKind::Unavailable,
                            "the object moved to another node",
                        )))
                    }
                }
            }
        };
        drop(layer);
        self.complete_join(outcome).await;
        Step::Next
    }

    /// The Actor hears how its Join ended, as a turn.
    async fn complete_join(&mut self, outcome: JoinOutcome) {
        let gate = self.object.gate();
        let _held = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return,
            held = gate.lock() => held,
        };
        if let Some(turn) = self.hook_info() {
            let completed = turn_gate::scope(
                TurnGate::Shared(gate.clone()),
                caught(self.instance.on_join_completed(turn, outcome)),
            );
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {}
                _ = completed => {}
            }
        }
    }
}

/// A turn of the loop's object, with its instance lent out while it runs.
type LoopTurn = Turn<ObjectJob, Box<dyn Instance>>;

/// What the loop does after a turn.
enum Then {
    /// Takes the next job; the turn's room goes back as it does.
    Next(LoopTurn),
    /// Stops the object (its room goes back once the stop is over).
    Stop(LoopTurn),
    /// Has ended: closed, moved away, or the node is gone.
    End,
}

#[cfg(test)]
mod tests;
