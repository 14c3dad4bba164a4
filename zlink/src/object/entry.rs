//! The Entry Spot of an Object Server node that serves Actor types: the framework's Spot
//! for one node lifecycle, in the reserved ID format, home of the node's new Actors.
//!
//! Its authority is claimed under the node's owner lease when the object layer starts; a
//! store that cannot take the claim then is tried again in the background, and until the
//! claim lands the node creates no Actor. It runs like a PerActor Spot: each member Actor
//! has a lane of its own, and the application's [`EntryHooks`] hear, on the Entry Spot's
//! lifecycle lane, which Actors were created in it, joined it and left it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::{oneshot, watch};

use super::authority::ObjectShape;
use super::authority_store::{Draft, Fenced, Reserved, Versioned};
use super::context::SpotContext;
use super::entry_hooks::{EntryHooks, EntryHooksFactory};
use super::instance::{Instance, TurnInfo};
use super::lifecycle::{ClosingReason, Relocation};
use super::membership::{Execution, JoinDecision, MemberEvent};
use super::object_type::{Factory, TypeDef};
use super::server::ObjectServer;
use super::timer::TimerTick;
use crate::address::{ObjectKey, SpotId};
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

    /// Claims the Entry Spot now, or keeps trying in the background.
    pub(crate) async fn claim(self: &Arc<Self>, server: &Arc<ObjectServer>) {
        match self.try_claim(server).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(entry = %self.id, error = %e, "cannot claim the Entry Spot yet; retrying")
            }
        }
        let (entry, weak) = (self.clone(), Arc::downgrade(server));
        let cancel = server.env.cancel().clone();
        server.env.tracker().spawn(async move {
            let mut backoff = Duration::from_millis(100);
            loop {
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                let Some(server) = weak.upgrade() else { return };
                match entry.try_claim(&server).await {
                    Ok(()) => return,
                    Err(e) => {
                        tracing::debug!(entry = %entry.id, error = %e, "Entry Spot claim failed")
                    }
                }
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
        });
    }

    async fn try_claim(&self, server: &Arc<ObjectServer>) -> Result<()> {
        let key = ObjectKey::from(&self.id);
        let Some(owner) = server.env.lease().admitting_token() else {
            return Err(Error::new(
                ErrorKind::Unavailable,
                "the owner lease is not held",
            ));
        };
        let draft = Draft {
            shape: ObjectShape::EntrySpot,
            stable_type: ENTRY_STABLE_TYPE.to_string(),
            owner,
            route: server.env.route().clone(),
            membership: None,
            creation_request: Vec::new(),
            activation: None,
            reclaim_on_owner_lost: false,
        };
        let won = match server.env.authority().reserve(&key, draft).await? {
            Reserved::Won(won) => won,
            // A record of our own earlier attempt whose answer was lost: take it over.
            Reserved::Exists(existing) if existing.record.route == *server.env.route() => existing,
            Reserved::Exists(_) => {
                return Err(Error::new(
                    ErrorKind::AlreadyExists,
                    format!("Entry Spot ID {} is taken by another node", self.id),
                ))
            }
        };
        let ready = match won.record.state {
            super::authority::AuthorityState::Creating => {
                match server.env.authority().commit(&key, &won).await? {
                    Fenced::Done(ready) => ready,
                    Fenced::Moved => {
                        return Err(Error::new(
                            ErrorKind::Unavailable,
                            "the Entry Spot claim was replaced before it committed",
                        ))
                    }
                }
            }
            _ => won,
        };
        tracing::info!(entry = %self.id, "Entry Spot claimed");
        self.run(server, key, ready.clone())?;
        self.claimed.send_replace(Some(ready));
        Ok(())
    }

    /// Starts the claimed Entry Spot's turn loop on this node.
    fn run(&self, server: &Arc<ObjectServer>, key: ObjectKey, ready: Versioned) -> Result<()> {
        let Some(hooks) = self.hooks.lock_unpoisoned().take() else {
            return Ok(());
        };
        let instance = EntryInstance {
            id: self.id.clone(),
            hooks,
        };
        let (go, wait) = oneshot::channel();
        let live = crate::object::launch::start(
            key,
            Arc::new(entry_type()?),
            ready,
            Box::new(instance),
            server.object_host(),
            wait.into(),
            None,
        );
        server.registry.insert(live);
        let _ = go.send(true);
        Ok(())
    }
}
