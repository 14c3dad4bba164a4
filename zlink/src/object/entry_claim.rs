//! Claiming a node's Entry Spot: its authority reserved and committed under the node's
//! owner lease when the object layer starts, tried again in the background while the
//! Location Store does not take it, then its turn loop started.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use super::authority::{AuthorityState, ObjectShape};
use super::authority_store::{Draft, Fenced, Reserved, Versioned};
use super::core::ObjectCore;
use super::entry::{EntrySpot, ENTRY_STABLE_TYPE};
use crate::address::ObjectKey;
use crate::{Error, ErrorKind, Result};

/// Claims the Entry Spot now, or keeps trying in the background.
pub(crate) async fn claim(entry: &Arc<EntrySpot>, core: &Arc<ObjectCore>) {
    match try_claim(entry, core).await {
        Ok(()) => return,
        Err(e) => {
            tracing::warn!(entry = %entry.id, error = %e, "cannot claim the Entry Spot yet; retrying")
        }
    }
    let (entry, weak) = (entry.clone(), Arc::downgrade(core));
    let cancel = core.env.cancel().clone();
    core.env.tracker().spawn(async move {
        let mut backoff = Duration::from_millis(100);
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            let Some(core) = weak.upgrade() else { return };
            match try_claim(&entry, &core).await {
                Ok(()) => return,
                Err(e) => {
                    tracing::debug!(entry = %entry.id, error = %e, "Entry Spot claim failed")
                }
            }
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    });
}

async fn try_claim(entry: &EntrySpot, core: &ObjectCore) -> Result<()> {
    let key = ObjectKey::from(&entry.id);
    let Some(owner) = core.env.lease().admitting_token() else {
        return Err(Error::new(
            ErrorKind::Unavailable,
            "the owner lease is not held",
        ));
    };
    let draft = Draft {
        shape: ObjectShape::EntrySpot,
        stable_type: ENTRY_STABLE_TYPE.to_string(),
        owner,
        route: core.env.route().clone(),
        membership: None,
        creation_request: Vec::new(),
        activation: None,
        reclaim_on_owner_lost: false,
    };
    let won = match core.env.authority().reserve(&key, draft).await? {
        Reserved::Won(won) => won,
        // A record of our own earlier attempt whose answer was lost: take it over.
        Reserved::Exists(existing) if existing.record.route == *core.env.route() => existing,
        Reserved::Exists(_) => {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!("Entry Spot ID {} is taken by another node", entry.id),
            ))
        }
    };
    let ready = match won.record.state {
        AuthorityState::Creating => match core.env.authority().commit(&key, &won).await? {
            Fenced::Done(ready) => ready,
            Fenced::Moved => {
                return Err(Error::new(
                    ErrorKind::Unavailable,
                    "the Entry Spot claim was replaced before it committed",
                ))
            }
        },
        _ => won,
    };
    tracing::info!(entry = %entry.id, "Entry Spot claimed");
    run(entry, core, key, ready.clone())?;
    entry.claimed_as(ready);
    Ok(())
}

/// Starts the claimed Entry Spot's turn loop on this node.
fn run(entry: &EntrySpot, core: &ObjectCore, key: ObjectKey, ready: Versioned) -> Result<()> {
    let Some(runs) = entry.take_instance() else {
        return Ok(());
    };
    let (def, instance) = runs?;
    let (go, wait) = oneshot::channel();
    let live = crate::object::launch::start(
        key,
        Arc::new(def),
        ready,
        instance,
        core.object_host(),
        wait.into(),
        None,
    );
    core.registry.insert(live);
    let _ = go.send(true);
    Ok(())
}
