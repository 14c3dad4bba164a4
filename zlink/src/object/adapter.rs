//! [`Adapted`]: an application's Spot or Actor as its turn loop drives it. One adapter
//! serves both kinds; [`Hosted`] says what each kind does at each of the loop's calls.

use std::sync::Arc;

use async_trait::async_trait;

use super::context::Context;
use super::instance::{Instance, TurnInfo};
use super::lifecycle::ClosingReason;
use super::membership::{JoinDecision, JoinOutcome, JoinSlot, MemberEvent};
use super::relocation_state::RelocationState;
use super::timer::{TimerTick, Timers};
use crate::address::Kind;
use crate::call::BoxFuture;
use crate::wire::Payload;
use crate::{Error, ErrorKind, Result};

/// An application object of kind `K`, as the adapter calls it: the `Spot` and `Actor`
/// traits' hooks under one set of names.
pub(crate) trait Hosted<K: Kind>: Send + 'static {
    /// What errors call an object of this kind ("Spot", "Actor").
    const NOUN: &'static str;

    fn handle<'a>(
        &'a mut self,
        ctx: &'a Context<K>,
        handler: usize,
        payload: Payload,
    ) -> BoxFuture<'a, Result<Payload>>;

    fn on_initialize<'a>(&'a mut self, ctx: &'a Context<K>) -> BoxFuture<'a, Result<()>>;

    fn on_timer<'a>(
        &'a mut self,
        ctx: &'a Context<K>,
        tick: TimerTick,
    ) -> BoxFuture<'a, Result<()>>;

    fn on_closing<'a>(
        &'a mut self,
        ctx: &'a Context<K>,
        reason: ClosingReason,
    ) -> BoxFuture<'a, ()>;

    /// A membership event (a Spot that takes Actors); others accept at once.
    fn on_member<'a>(
        &'a mut self,
        _ctx: &'a Context<K>,
        _event: MemberEvent,
    ) -> BoxFuture<'a, JoinDecision> {
        Box::pin(async { JoinDecision::Accept(bytes::Bytes::new()) })
    }

    /// How a Join the object registered ended (Actors).
    fn on_join_completed<'a>(
        &'a mut self,
        _ctx: &'a Context<K>,
        _outcome: JoinOutcome,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn relocation_state(&mut self) -> Option<&mut dyn RelocationState>;
}

/// A Spot or Actor with its ID, as its turn loop drives it.
///
/// What every context carries and no turn changes (the ID, the timers, the Join slot)
/// moves into a handler's context for its turn and back at the turn's end: a message
/// turn copies none of it.
pub(crate) struct Adapted<K: Kind, O> {
    object: O,
    /// The object's ID and (once attached) its timers and Join slot: what rebuilds `kept`.
    id: K::Id,
    attached: Option<(Arc<Timers>, Arc<JoinSlot>)>,
    /// The ID and the timers while no turn holds them.
    kept: Option<(K::Id, Option<Arc<Timers>>)>,
    /// The Join slot while no turn holds it.
    joins: Option<Arc<JoinSlot>>,
    /// The context of the running handler (from its start to the end of its turn).
    turn: Option<Context<K>>,
}

impl<K: Kind, O: Hosted<K>> Adapted<K, O> {
    pub(crate) fn new(id: K::Id, object: O) -> Self {
        Adapted {
            object,
            id,
            attached: None,
            kept: None,
            joins: None,
            turn: None,
        }
    }

    /// The ID and timers, out of their slot: from the last turn's context if it is still
    /// open, and made anew the first time.
    fn take_kept(&mut self) -> (K::Id, Option<Arc<Timers>>) {
        self.end_turn();
        self.kept.take().unwrap_or_else(|| {
            let timers = self.attached.as_ref().map(|(timers, _)| timers.clone());
            (self.id.clone(), timers)
        })
    }

    /// The context of a turn whose context the adapter does not keep (a hook's: no hot
    /// path): the kept parts copied.
    fn context(&mut self, turn: TurnInfo) -> Context<K> {
        let (id, timers) = self.take_kept();
        let ctx = Context {
            handle: turn.handle,
            id: id.clone(),
            generation: turn.generation,
            packet: turn.packet,
            deadline: turn.deadline,
            metadata: turn.metadata,
            operation: turn.operation,
            timers: timers.clone(),
            membership: turn.membership,
            joins: self.joins.clone().filter(|_| turn.may_join),
        };
        self.kept = Some((id, timers));
        ctx
    }
}

#[async_trait]
impl<K: Kind, O: Hosted<K>> Instance for Adapted<K, O> {
    fn handle(
        &mut self,
        turn: TurnInfo,
        handler: usize,
        payload: Payload,
    ) -> BoxFuture<'_, Result<Payload>> {
        let (id, timers) = self.take_kept();
        let joins = if turn.may_join {
            self.joins.take()
        } else {
            None
        };
        let ctx = self.turn.insert(Context {
            handle: turn.handle,
            id,
            generation: turn.generation,
            packet: turn.packet,
            deadline: turn.deadline,
            metadata: turn.metadata,
            operation: turn.operation,
            timers,
            membership: turn.membership,
            joins,
        });
        self.object.handle(ctx, handler, payload)
    }

    fn end_turn(&mut self) {
        if let Some(ctx) = self.turn.take() {
            self.kept = Some((ctx.id, ctx.timers));
            if ctx.joins.is_some() {
                self.joins = ctx.joins;
            }
        }
    }

    fn attach(&mut self, timers: Arc<Timers>, joins: Arc<JoinSlot>) {
        self.attached = Some((timers, joins.clone()));
        self.kept = None;
        self.joins = Some(joins);
    }

    async fn on_initialize(&mut self, turn: TurnInfo) -> Result<()> {
        let ctx = self.context(turn);
        self.object.on_initialize(&ctx).await
    }

    async fn on_timer(&mut self, turn: TurnInfo, tick: TimerTick) -> Result<()> {
        let ctx = self.context(turn);
        self.object.on_timer(&ctx, tick).await
    }

    async fn on_closing(&mut self, turn: TurnInfo, reason: ClosingReason) {
        let ctx = self.context(turn);
        self.object.on_closing(&ctx, reason).await
    }

    async fn on_member(&mut self, turn: TurnInfo, event: MemberEvent) -> JoinDecision {
        let ctx = self.context(turn);
        self.object.on_member(&ctx, event).await
    }

    async fn on_join_completed(&mut self, turn: TurnInfo, outcome: JoinOutcome) {
        let ctx = self.context(turn);
        self.object.on_join_completed(&ctx, outcome).await
    }

    fn capture_state(&mut self) -> Option<Result<Vec<u8>>> {
        Some(match self.object.relocation_state() {
            Some(state) => state.capture(),
            None => Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "{} {} is declared relocation = preserve but its type returns no state adapter",
                    O::NOUN,
                    self.id
                ),
            )),
        })
    }

    fn restore_state(&mut self, state: &[u8]) -> Result<()> {
        match self.object.relocation_state() {
            Some(adapter) => adapter.restore(state),
            None => Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "{} {} has no state adapter to restore into",
                    O::NOUN,
                    self.id
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::address::{ActorId, ActorKind};
    use crate::handle::Handle;
    use crate::object::context::TurnName;
    use crate::wire::Metadata;

    /// An Actor-kind object that records what it was called with.
    #[derive(Default)]
    struct Recorder {
        heard: Arc<Mutex<Vec<String>>>,
    }

    impl Hosted<ActorKind> for Recorder {
        const NOUN: &'static str = "Actor";

        fn handle<'a>(
            &'a mut self,
            ctx: &'a Context<ActorKind>,
            handler: usize,
            payload: Payload,
        ) -> BoxFuture<'a, Result<Payload>> {
            let line = format!("handle {handler} for {} ({:?})", ctx.id(), ctx.packet());
            self.heard.lock().unwrap().push(line);
            Box::pin(async move { Ok(payload) })
        }

        fn on_initialize<'a>(
            &'a mut self,
            ctx: &'a Context<ActorKind>,
        ) -> BoxFuture<'a, Result<()>> {
            self.heard
                .lock()
                .unwrap()
                .push(format!("initialize {}", ctx.id()));
            Box::pin(async { Ok(()) })
        }

        fn on_timer<'a>(
            &'a mut self,
            _ctx: &'a Context<ActorKind>,
            tick: TimerTick,
        ) -> BoxFuture<'a, Result<()>> {
            self.heard
                .lock()
                .unwrap()
                .push(format!("timer {}", tick.name));
            Box::pin(async { Ok(()) })
        }

        fn on_closing<'a>(
            &'a mut self,
            _ctx: &'a Context<ActorKind>,
            reason: ClosingReason,
        ) -> BoxFuture<'a, ()> {
            self.heard
                .lock()
                .unwrap()
                .push(format!("closing {reason:?}"));
            Box::pin(async {})
        }

        fn relocation_state(&mut self) -> Option<&mut dyn RelocationState> {
            None
        }
    }

    fn turn(handle: &Handle, packet: Option<&'static str>) -> TurnInfo {
        TurnInfo {
            handle: handle.clone(),
            generation: 3,
            packet: packet.map(TurnName::Packet),
            deadline: None,
            metadata: Metadata::new(),
            operation: 0,
            membership: None,
            may_join: false,
        }
    }

    fn handle() -> Handle {
        Handle::unstarted()
    }

    #[tokio::test]
    async fn each_call_reaches_the_object_with_a_context_for_its_id() {
        let recorder = Recorder::default();
        let heard = recorder.heard.clone();
        let id = ActorId::new("p1").unwrap();
        let mut adapted = Adapted::new(id, recorder);
        let handle = handle();
        adapted.on_initialize(turn(&handle, None)).await.unwrap();
        let reply = adapted
            .handle(turn(&handle, Some("Echo")), 2, Payload::encoded("x".into()))
            .await
            .unwrap();
        assert_eq!(&reply.into_bytes().unwrap()[..], b"x");
        assert!(
            adapted.turn.is_some(),
            "the handler's context lives until its turn ends"
        );
        adapted.end_turn();
        assert!(adapted.turn.is_none());
        adapted
            .on_closing(turn(&handle, None), ClosingReason::Destroyed)
            .await;
        let heard = heard.lock().unwrap().clone();
        assert_eq!(
            heard,
            [
                "initialize p1",
                "handle 2 for p1 (Some(\"Echo\"))",
                "closing Destroyed"
            ]
        );
    }

    #[tokio::test]
    async fn a_kind_without_its_own_membership_hooks_accepts_and_moves_no_state() {
        let mut adapted = Adapted::new(ActorId::new("p2").unwrap(), Recorder::default());
        let handle = handle();
        let event = MemberEvent::Created {
            actor: crate::address::ActorRef {
                id: ActorId::new("a").unwrap(),
                generation: 1,
                mesh_name: "m".into(),
                rid: "n1".into(),
            },
        };
        let decision = adapted.on_member(turn(&handle, None), event).await;
        assert!(matches!(decision, JoinDecision::Accept(_)));
        let captured = adapted.capture_state().expect("an answer").unwrap_err();
        assert!(captured.is(ErrorKind::InvalidOperation), "{captured}");
        assert!(captured.to_string().contains("Actor p2"), "{captured}");
        let restored = adapted.restore_state(b"").unwrap_err();
        assert!(restored.to_string().contains("Actor p2"), "{restored}");
    }

    fn timers() -> Arc<Timers> {
        use crate::store::{OwnerLease, OwnerLeaseSettings};
        Timers::new(
            std::sync::Weak::<crate::object::object_job::ObjectMailbox>::new(),
            OwnerLease::new(OwnerLeaseSettings::default()),
            crate::object::authority::OwnerFence {
                object_generation: 1,
                owner_generation: 1,
                owner: "n1".into(),
                lease_generation: 1,
            },
            tokio_util::task::TaskTracker::new(),
            tokio_util::sync::CancellationToken::new(),
        )
    }

    #[tokio::test]
    async fn what_no_turn_changes_moves_into_each_context_and_back() {
        let mut adapted = Adapted::new(ActorId::new("p3").unwrap(), Recorder::default());
        let handle = handle();
        let (timers, joins) = (timers(), Arc::new(JoinSlot::default()));
        adapted.attach(timers.clone(), joins.clone());
        for packet in ["first", "second"] {
            let mut turn = turn(&handle, Some(packet));
            turn.may_join = true;
            adapted.handle(turn, 0, Payload::default()).await.unwrap();
            let ctx = adapted.turn.as_ref().expect("the turn's context");
            assert!(ctx.timers.as_ref().is_some_and(|t| Arc::ptr_eq(t, &timers)));
            assert!(ctx.joins.as_ref().is_some_and(|j| Arc::ptr_eq(j, &joins)));
            adapted.end_turn();
        }
        // A turn that may not join gets no slot, and the slot is still there after it.
        adapted
            .handle(turn(&handle, Some("no join")), 0, Payload::default())
            .await
            .unwrap();
        assert!(adapted.turn.as_ref().is_some_and(|ctx| ctx.joins.is_none()));
        adapted.end_turn();
        let hook = adapted.context(TurnInfo {
            may_join: true,
            ..turn(&handle, None)
        });
        assert_eq!(hook.id().as_str(), "p3");
        assert!(hook.timers.is_some() && hook.joins.is_some());
        // Only the object's own references remain besides the test's and the adapter's.
        drop(hook);
        assert_eq!(
            Arc::strong_count(&timers),
            3,
            "test, attached copy, kept copy"
        );
    }
}
