//! The Entry Spot of an Object Server node that serves Actor types: the framework's Spot
//! for one node lifecycle, in the reserved ID format, home of the node's new Actors.
//!
//! Its authority is claimed under the node's owner lease when the object layer starts; a
//! store that cannot take the claim then is tried again in the background, and until the
//! claim lands the node creates no Actor. It runs like a PerActor Spot: each member Actor
//! has a lane of its own, and the application's [`EntryHooks`] hear, on the Entry Spot's
//! lifecycle lane, which Actors were created in it, joined it and left it.

use std::sync::Mutex;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::watch;

use super::authority_store::Versioned;
use super::context::SpotContext;
use super::entry_hooks::{EntryHooks, EntryHooksFactory};
use super::instance::{Instance, TurnInfo};
use super::lifecycle::{ClosingReason, Relocation};
use super::membership::{Execution, JoinDecision, MemberEvent};
use super::object_type::{Factory, TypeDef};
use super::timer::TimerTick;
use crate::address::SpotId;
use crate::call::BoxFuture;
use crate::sync::LockUnpoisoned;
use crate::{Error, ErrorKind, Result};

/// The hooks an application registered none of.
struct NoHooks;

impl EntryHooks for NoHooks {}

/// The Entry Spot as its turn loop drives it.
struct EntryInstance {
    id: SpotId,
    hooks: Box<dyn EntryHooks>,
}

#[async_trait]
impl Instance for EntryInstance {
    fn handle(
        &mut self,
        _turn: TurnInfo,
        _handler: usize,
        _payload: crate::wire::Payload,
    ) -> BoxFuture<'_, Result<crate::wire::Payload>> {
        Box::pin(async {
            Err(Error::new(
                ErrorKind::NotFound,
                "an Entry Spot has no handlers",
            ))
        })
    }

    async fn on_initialize(&mut self, _turn: TurnInfo) -> Result<()> {
        Ok(())
    }

    async fn on_timer(&mut self, _turn: TurnInfo, _tick: TimerTick) -> Result<()> {
        Ok(())
    }

    async fn on_closing(&mut self, _turn: TurnInfo, _reason: ClosingReason) {}

    async fn on_member(&mut self, turn: TurnInfo, event: MemberEvent) -> JoinDecision {
        let ctx: SpotContext = turn.bare_context(self.id.clone());
        match event {
            MemberEvent::Created { actor } => self.hooks.on_create_actor(&ctx, &actor).await,
            MemberEvent::Joined { actor } => self.hooks.on_joined_actor(&ctx, &actor).await,
            MemberEvent::Left { actor } => self.hooks.on_leave_actor(&ctx, &actor).await,
            MemberEvent::Disconnected { actor } => {
                self.hooks.on_disconnect_actor(&ctx, &actor).await
            }
            // An Entry Spot admits every Actor of its node: it has no admission callback.
            MemberEvent::Join { .. } => {}
        }
        JoinDecision::Accept(Bytes::new())
    }
}

/// The registration an Entry Spot runs under.
fn entry_type() -> Result<TypeDef> {
    let mut entry = TypeDef::new(
        ENTRY_STABLE_TYPE,
        Vec::new(),
        Relocation::Disable,
        Factory::Entry,
    )?;
    entry.execution = Execution::PerActor;
    Ok(entry)
}

/// The stable type recorded for Entry Spots.
pub(crate) const ENTRY_STABLE_TYPE: &str = "zlink.entry";

/// One node's Entry Spot.
pub(crate) struct EntrySpot {
    pub(crate) id: SpotId,
    claimed: watch::Sender<Option<Versioned>>,
    hooks: Mutex<Option<Box<dyn EntryHooks>>>,
}

impl EntrySpot {
    pub(crate) fn new(id: SpotId, hooks: Option<&EntryHooksFactory>) -> Self {
        EntrySpot {
            id,
            claimed: watch::Sender::new(None),
            hooks: Mutex::new(Some(
                hooks.map_or_else(|| Box::new(NoHooks) as Box<dyn EntryHooks>, |make| make()),
            )),
        }
    }

    /// Its authority, once claimed.
    pub(crate) fn claimed(&self) -> Option<Versioned> {
        self.claimed.borrow().clone()
    }

    /// Changes when the claim lands.
    pub(crate) fn watch_claim(&self) -> watch::Receiver<Option<Versioned>> {
        self.claimed.subscribe()
    }

    /// Its ID, when the claim landed: new Actors may join it.
    pub(crate) fn ready(&self) -> Result<SpotId> {
        match self.claimed() {
            Some(_) => Ok(self.id.clone()),
            None => Err(Error::new(
                ErrorKind::Unavailable,
                "this node's Entry Spot is not claimed yet (the Location Store has not taken it)",
            )),
        }
    }

    /// What the claimed Entry Spot runs: its registration and its instance, the first
    /// time it is asked (`None` after).
    pub(crate) fn take_instance(&self) -> Option<Result<(TypeDef, Box<dyn Instance>)>> {
        let hooks = self.hooks.lock_unpoisoned().take()?;
        let instance = EntryInstance {
            id: self.id.clone(),
            hooks,
        };
        Some(entry_type().map(|def| (def, Box::new(instance) as Box<dyn Instance>)))
    }

    /// The claim landed as `ready`.
    pub(crate) fn claimed_as(&self, ready: Versioned) {
        self.claimed.send_replace(Some(ready));
    }
}
