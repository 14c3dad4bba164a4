//! A Spot or Actor running on its owner node: its instance, owned by its turn loop (which
//! takes one turn at a time from the object's mailbox, and holds no task while idle), and
//! the authority it was admitted under.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use std::collections::HashSet;

use super::authority_store::Versioned;
use super::lost_sends::{LostReason, LostSends};
use super::mailbox::{Lane, Mailbox, Refused, LIFECYCLE_LANE};
use super::membership::{Execution, JoinSlot};
use super::object_job::{Arrived, ObjectJob, ObjectMailbox};
use super::object_type::{Factory, TypeDef};
use super::stop_list::Halt;
use super::turn_gate::{Gate, TurnGate};
use crate::address::{ObjectKey, ObjectKind, SpotId};
use crate::call::PacketKind;
use crate::handle::WeakHandle;
use crate::store::{LeaseToken, OwnerId};
use crate::sync::LockUnpoisoned;
use crate::wire::RouteFence;
use crate::{Error, ErrorKind};

/// What a turn starts from ([`LiveObject::turn_view`]).
pub(crate) struct TurnView {
    /// The gate its turn holds (locked only when other objects take it too).
    pub(crate) gate: TurnGate,
    pub(crate) membership: Option<SpotId>,
    /// Its ObjectGeneration.
    pub(crate) generation: u64,
    /// How many times its gate or Spot had changed when this was read.
    pub(crate) changes: u64,
}

/// A Spot's members on this node.
#[derive(Default)]
struct Members {
    actors: HashSet<Arc<str>>,
    closing: bool,
}

/// What a running object's owner changes while it runs (never held across an await).
struct ObjectState {
    /// The authority it runs under now.
    authority: Versioned,
    /// The gate its turns take now: its own, or a SpotWide Spot's for a member.
    gate: Arc<Gate>,
    /// An Actor's Spot; `None` for Spots.
    membership: Option<SpotId>,
    /// A Spot's member Actors on this node, and whether it is closing (then it takes
    /// none: a close and a Join never both succeed).
    members: Members,
    /// An object that arrived by a move: its timers continue, and `on_initialize` does not
    /// run again.
    arrived_with: Option<Arrived>,
}

/// A running Spot or Actor.
pub(crate) struct LiveObject {
    pub(crate) key: ObjectKey,
    pub(crate) object_type: Arc<TypeDef>,
    mailbox: Arc<ObjectMailbox>,
    /// Its node's handle, for the turns that run on a caller's task.
    handle: WeakHandle,
    /// Stops this object (and only it): its node stops, or its close gave up waiting.
    cancel: CancellationToken,
    /// Its own gate (a SpotWide Spot's members take its gate instead of theirs).
    own_gate: Arc<Gate>,
    /// What changes while it runs, behind one lock.
    state: Mutex<ObjectState>,
    /// Counts changes of its gate or Spot (a Join), so a view read before a turn began
    /// can be checked without the lock.
    view_changes: AtomicU64,
    /// The Join an Actor's running handler registered.
    joins: Arc<JoinSlot>,
    /// An Actor's session binding.
    bindings: super::actor_binding::ActorBindings,
    /// Its timers, once its turn loop runs (what idle eviction asks about).
    timers: std::sync::OnceLock<std::sync::Weak<super::timer::Timers>>,
    /// Where a queued one-way that never runs is counted.
    lost: Arc<LostSends>,
    /// Set (with a wake of the mailbox) when the object or its node stops: what the turn
    /// loop checks between turns, instead of polling its stop token.
    stopping: AtomicBool,
    /// Held by a move or a close while it runs (see [`LiveObject::transition`]).
    in_transition: AtomicBool,
}

/// A move or a close of one object under way; the next may start once it is dropped.
pub(crate) struct Transition<'a>(&'a AtomicBool);

impl Drop for Transition<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Halt for LiveObject {
    fn halt(&self) {
        self.stopping.store(true, Ordering::Release);
        self.mailbox.wake();
    }
}

impl LiveObject {
    /// A new running object of `object_type` under `authority`, with its mailbox, on the
    /// node `handle` reaches, stopped by `cancel`; a one-way it never runs counts in
    /// `lost`. (The `launch` module starts its turn loop.)
    pub(super) fn new(
        key: ObjectKey,
        object_type: Arc<TypeDef>,
        authority: Versioned,
        (handle, cancel, lost): (WeakHandle, CancellationToken, Arc<LostSends>),
        arrived_with: Option<Arrived>,
    ) -> Arc<LiveObject> {
        let mailbox = Mailbox::new(LIFECYCLE_LANE, object_type.queue);
        let membership = authority
            .record
            .membership
            .as_deref()
            .and_then(|spot| SpotId::new(spot).ok());
        let own_gate = Arc::new(Gate::new(()));
        Arc::new(LiveObject {
            key,
            object_type,

            mailbox,
            handle,
            cancel,
            state: Mutex::new(ObjectState {
                authority,
                gate: own_gate.clone(),
                membership,
                members: Members::default(),
                arrived_with,
            }),
            own_gate,
            view_changes: AtomicU64::new(0),
            joins: Arc::new(JoinSlot::default()),
            bindings: super::actor_binding::ActorBindings::default(),
            timers: std::sync::OnceLock::new(),
            lost,
            stopping: AtomicBool::new(false),
            in_transition: AtomicBool::new(false),
        })
    }

    /// Queues an Instance Spot's activating message before its loop exists: nothing, not
    /// even a tick `on_initialize` arms, can come before it. One that does not fit is
    /// refused, and the object never runs.
    pub(super) fn queue_first(&self, first: Option<(ObjectJob, usize)>) -> Result<(), Error> {
        let Some((job, bytes)) = first else {
            return Ok(());
        };
        let Err((refused, job)) = self.try_deliver(job, bytes) else {
            return Ok(());
        };
        let e = Error::new(
            ErrorKind::CapacityExceeded,
            format!(
                "{}'s first message does not fit its queue ({refused:?})",
                self.key
            ),
        );
        job.refuse(e.clone());
        self.refuse_queued(
            ErrorKind::Unavailable,
            "the object's creation did not commit",
        );
        Err(e)
    }

    /// Opens a sealed queue again after a cancelled move: `backlog` ahead, `held` after.
    pub(crate) fn reopen_after_move(
        &self,
        backlog: Vec<(ObjectJob, usize)>,
        held: Vec<(ObjectJob, usize)>,
    ) {
        self.mailbox.put_back(backlog, held);
    }

    /// Its mailbox.
    pub(super) fn mailbox(&self) -> &Arc<ObjectMailbox> {
        &self.mailbox
    }

    /// Its node's handle (weakly).
    pub(super) fn handle(&self) -> &WeakHandle {
        &self.handle
    }

    /// The token that stops this object.
    pub(super) fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Where an Actor's running handler registers its Join.
    pub(super) fn joins(&self) -> &Arc<JoinSlot> {
        &self.joins
    }

    /// What an object that arrived by a move brought along, taken once by its loop.
    pub(super) fn take_arrived(&self) -> Option<Arrived> {
        self.state().arrived_with.take()
    }

    /// The authority this object runs under now.
    pub(crate) fn authority(&self) -> Versioned {
        self.state().authority.clone()
    }

    /// Moves an Actor to `spot`'s gate (a SpotWide Spot's), or back to its own.
    pub(crate) fn use_gate_of(&self, spot: Option<&LiveObject>) {
        let gate = match spot {
            Some(spot) if spot.object_type.execution == Execution::SpotWide => {
                spot.own_gate.clone()
            }
            _ => self.own_gate.clone(),
        };
        self.state().gate = gate;
        self.view_changes.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn set_membership(&self, spot: Option<SpotId>) {
        // Every turn clones it: a copy of its own, not the count all members share.
        self.state().membership = spot.as_ref().map(SpotId::own_copy);
        self.view_changes.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether `view` still says what a turn starts from (no Join changed it since).
    pub(crate) fn view_holds(&self, view_changes: u64) -> bool {
        self.view_changes.load(Ordering::Acquire) == view_changes
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ObjectState> {
        self.state.lock_unpoisoned()
    }

    /// Counts `actor` as a member; `false` once the Spot is closing.
    pub(crate) fn add_member(&self, actor: &Arc<str>) -> bool {
        let mut state = self.state();
        if state.members.closing {
            return false;
        }
        state.members.actors.insert(actor.clone());
        true
    }

    /// This Spot's member Actors on this node, sorted.
    pub(crate) fn member_ids(&self) -> Vec<Arc<str>> {
        let mut ids: Vec<Arc<str>> = self.state().members.actors.iter().cloned().collect();
        ids.sort();
        ids
    }

    /// Takes no Join while it moves (whatever its members); [`reopen`](Self::reopen)
    /// undoes it.
    pub(crate) fn hold_joins(&self) {
        self.state().members.closing = true;
    }

    pub(crate) fn remove_member(&self, actor: &str) {
        self.state().members.actors.remove(actor);
    }

    /// Starts closing if no Actor is a member: from then on no Join lands here. `false`
    /// (nothing changed) while it has members.
    pub(crate) fn close_if_empty(&self) -> bool {
        let mut state = self.state();
        if !state.members.actors.is_empty() {
            return false;
        }
        state.members.closing = true;
        true
    }

    /// A close that did not go through: Joins may land again.
    pub(crate) fn reopen(&self) {
        self.state().members.closing = false;
    }

    /// Starts a move or a close of this object, unless one is under way already
    /// (`Unavailable`).
    /// Each ends in one fenced authority write, and a move's owner change is fenced on the
    /// version it sealed: a close's write in the middle of a move would make that commit
    /// fail past the point of no return and lose the object. So they take turns.
    pub(crate) fn transition(&self) -> Result<Transition<'_>, Error> {
        match self
            .in_transition
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Ok(Transition(&self.in_transition)),
            Err(_) => Err(Error::new(
                ErrorKind::Unavailable,
                format!(
                    "{} is being moved or closed already; try again once that ended",
                    self.key
                ),
            )),
        }
    }

    /// Whether a move or a close of the object is under way, or waits for its next
    /// boundary (a seal or a close in its lifecycle lane).
    pub(crate) fn move_or_close_waits(&self) -> bool {
        self.in_transition.load(Ordering::Acquire) || self.boundary_wanted()
    }

    /// Whether framework work (a move's seal, a close) waits for the object's next
    /// boundary.
    pub(crate) fn boundary_wanted(&self) -> bool {
        self.mailbox.lifecycle_waits()
    }

    /// Whether this is its node's Entry Spot.
    pub(crate) fn is_entry(&self) -> bool {
        matches!(self.object_type.factory, Factory::Entry)
    }

    /// Closes the mailbox and answers everything still queued (a one-way, which has no
    /// one to answer, is counted lost).
    pub(super) fn refuse_queued(&self, kind: ErrorKind, why: &str) {
        for job in self.mailbox.close() {
            let error = Error::new(kind, why);
            if let ObjectJob::Message(message) = &job {
                let (handler, packet) = (message.handler, message.packet);
                let one_way = self
                    .object_type
                    .packets
                    .get(handler)
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
    pub(super) fn fence(&self) -> super::authority::OwnerFence {
        self.state().authority.record.fence.clone()
    }

    pub(crate) fn set_authority(&self, authority: Versioned) {
        self.state().authority = authority;
    }

    /// An Actor's Spot now; `None` for Spots.
    pub(crate) fn membership(&self) -> Option<SpotId> {
        self.state().membership.clone()
    }

    /// The gate this object's turns take now.
    pub(crate) fn gate(&self) -> Arc<Gate> {
        self.state().gate.clone()
    }

    /// What a turn starts from, read under one lock: the gate it takes, whether another
    /// object may take it too (a Spot's own gate, which its SpotWide members share, or a
    /// SpotWide Spot's for a member; only a shared gate needs locking), and the Spot the
    /// object belongs to.
    pub(crate) fn turn_view(&self) -> TurnView {
        self.view_of(&self.state())
    }

    fn view_of(&self, state: &ObjectState) -> TurnView {
        let shared = self.key.kind == ObjectKind::Spot || !Arc::ptr_eq(&state.gate, &self.own_gate);
        TurnView {
            gate: if shared {
                TurnGate::Shared(state.gate.clone())
            } else {
                TurnGate::own(&state.gate)
            },
            membership: state.membership.clone(),
            generation: state.authority.record.fence.object_generation,
            changes: self.view_changes.load(Ordering::Acquire),
        }
    }

    /// Its ObjectGeneration.
    /// Lets idle eviction see `timers`, the turn loop's.
    pub(crate) fn watch_timers(&self, timers: &Arc<super::timer::Timers>) {
        let _ = self.timers.set(Arc::downgrade(timers));
    }

    /// Whether none of its accepted work runs or waits now (its timers may be armed).
    pub(crate) fn at_rest(&self) -> bool {
        self.mailbox.at_rest()
    }

    /// `Some(mark)` while the object is idle: nothing queued, running or lent, no timer
    /// armed. The same mark seen later means no work came in between.
    pub(crate) fn idle_mark(&self) -> Option<u64> {
        let armed = self
            .timers
            .get()
            .and_then(std::sync::Weak::upgrade)
            .is_some_and(|timers| timers.any_armed());
        if armed {
            return None;
        }
        self.mailbox.idle_mark()
    }

    pub(crate) fn bindings(&self) -> &super::actor_binding::ActorBindings {
        &self.bindings
    }

    pub(crate) fn generation(&self) -> u64 {
        self.state().authority.record.fence.object_generation
    }

    /// Whether a message resolved with `fence` may be admitted here: the owner change and
    /// the lease it names are this node's current ones (the ObjectGeneration is not
    /// compared: a Spot re-created on the same owner takes the message, seed 000 §2.6).
    pub(crate) fn admits(&self, fence: &RouteFence, lease: &LeaseToken) -> bool {
        Self::admitted(&self.state(), fence, &lease.owner, lease.generation)
    }

    /// [`admits`](Self::admits), for the claim `lease_generation` of `owner`.
    pub(crate) fn admits_under(
        &self,
        fence: &RouteFence,
        owner: &OwnerId,
        lease_generation: u64,
    ) -> bool {
        Self::admitted(&self.state(), fence, owner, lease_generation)
    }

    /// Under the lease claim `lease_generation` of `owner`.
    fn admitted(
        state: &ObjectState,
        fence: &RouteFence,
        owner: &OwnerId,
        lease_generation: u64,
    ) -> bool {
        let authority = &state.authority;
        authority.record.state == super::authority::AuthorityState::Ready
            && authority.record.fence.owner_generation == fence.owner_generation
            && authority.record.fence.lease_generation == fence.lease_generation
            && authority
                .record
                .fence
                .held_by_claim(owner, lease_generation)
    }

    /// [`admits`](Self::admits), and if so what the message's turn starts from
    /// ([`turn_view`](Self::turn_view)), under the one lock.
    pub(crate) fn admits_viewing(
        &self,
        fence: &RouteFence,
        owner: &OwnerId,
        lease_generation: u64,
    ) -> Option<TurnView> {
        let state = self.state();
        Self::admitted(&state, fence, owner, lease_generation).then(|| self.view_of(&state))
    }

    fn lane(job: &ObjectJob) -> Lane {
        match job {
            ObjectJob::Close { .. } | ObjectJob::Member { .. } | ObjectJob::Relocate { .. } => {
                Lane::Lifecycle
            }
            ObjectJob::Message(_) | ObjectJob::Tick { .. } | ObjectJob::HandedOver(_) => {
                Lane::Application
            }
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
        self.halt();
    }

    /// Whether the object (or its node) stopped: its turn loop runs nothing more.
    pub(super) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Stops admitting messages (a close has begun).
    pub(crate) fn seal(&self) {
        self.mailbox.seal();
    }
}
