//! The Entry Spot of an Object Server node that serves Actor types: the framework's Spot
//! for one node lifecycle, in the reserved ID format, home of the node's new Actors.
//!
//! Its authority is claimed under the node's owner lease when the object layer starts; a
//! store that cannot take the claim then is tried again in the background, and until the
//! claim lands the node creates no Actor.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::authority::ObjectShape;
use super::authority_store::{Draft, Fenced, Reserved, Versioned};
use super::id::{ObjectKey, SpotId};
use super::server::ObjectServer;
use crate::{Error, ErrorKind, Result};

/// The stable type recorded for Entry Spots.
pub(crate) const ENTRY_STABLE_TYPE: &str = "zlink.entry";

/// One node's Entry Spot.
pub(crate) struct EntrySpot {
    pub(crate) id: SpotId,
    claimed: Mutex<Option<Versioned>>,
}

impl EntrySpot {
    pub(crate) fn new(id: SpotId) -> Self {
        EntrySpot {
            id,
            claimed: Mutex::new(None),
        }
    }

    /// Its authority, once claimed.
    pub(crate) fn claimed(&self) -> Option<Versioned> {
        self.claimed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
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
        let cancel = server.cancel.clone();
        server.tracker.spawn(async move {
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

    async fn try_claim(&self, server: &ObjectServer) -> Result<()> {
        let key = ObjectKey::from(&self.id);
        let Some(owner) = server.lease.admitting_token() else {
            return Err(Error::new(
                ErrorKind::Unavailable,
                "the owner lease is not held",
            ));
        };
        let draft = Draft {
            shape: ObjectShape::EntrySpot,
            stable_type: ENTRY_STABLE_TYPE.to_string(),
            owner,
            route: server.route.clone(),
            membership: None,
            creation_request: Vec::new(),
        };
        let won = match server.authority.reserve(&key, draft).await? {
            Reserved::Won(won) => won,
            // A record of our own earlier attempt whose answer was lost: take it over.
            Reserved::Exists(existing) if existing.record.route == server.route => existing,
            Reserved::Exists(_) => {
                return Err(Error::new(
                    ErrorKind::AlreadyExists,
                    format!("Entry Spot ID {} is taken by another node", self.id),
                ))
            }
        };
        let ready = match won.record.state {
            super::authority::AuthorityState::Creating => {
                match server.authority.commit(&key, &won).await? {
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
        *self.claimed.lock().unwrap_or_else(|p| p.into_inner()) = Some(ready);
        Ok(())
    }
}
