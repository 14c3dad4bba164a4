//! Who owns a handed-over object when the answer that would say it was lost: the
//! cutover's answer (did the target commit?) and relay-ready (may the source run on?).
//! The Location Store decides, fenced on the exact version the source sealed.

use bytes::Bytes;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::record::RelayReady;
use super::CUTOVER_FALLBACK;
use crate::address::ObjectKey;
use crate::object::authority_store::{Fenced, Versioned};
use crate::object::env::ObjectEnv;
use crate::object::relocation::Moving;
use crate::store::StoreVersion;
use crate::Result;

/// Whether the target committed: the cutover's answer, or (refused or lost) what the
/// store says. `sealed_at` is the version the target's owner change is fenced on.
pub(super) async fn committed(
    server: &Moving,
    key: &ObjectKey,
    ready: &RelayReady,
    sealed_at: &StoreVersion,
    cutover: oneshot::Receiver<Result<Bytes>>,
    deadline: Instant,
) -> bool {
    match tokio::time::timeout_at(deadline, cutover).await {
        Ok(Ok(Ok(_))) => true,
        _ => confirm_commit(&server.env, key, ready, sealed_at, deadline).await,
    }
}

/// How a move whose restore got no relay-ready ended for the object.
pub(super) enum Reclaimed {
    /// The source keeps it, under this re-fenced authority: no target can commit it now.
    Kept(Versioned),
    /// The target committed it already (its answer was what got lost): relay to it.
    Taken(RelayReady),
    /// The node stops, or the record changed in another way: the object runs on here.
    Stopped,
}

/// A restore that did not answer relay-ready may still have built the object on the
/// target, which then commits it by itself (its answer may be what was lost). So before
/// the object runs on here, its authority is re-fenced: rewritten unchanged, so the
/// target's owner change, fenced on the sealed version, can no longer apply. If the
/// target was first, the object is the target's. Dispatch stays closed while the store
/// does not answer.
pub(super) async fn reclaim(env: &ObjectEnv, key: &ObjectKey, sealed: &Versioned) -> Reclaimed {
    let mut pause = std::time::Duration::from_millis(50);
    loop {
        let found = match env.authority().refence(key, sealed).await {
            Ok(Fenced::Done(kept)) => return Reclaimed::Kept(kept),
            Ok(Fenced::Moved) => env.authority().read(key).await,
            Err(e) => Err(e),
        };
        match found {
            Ok(Some(current)) => {
                let (was, now) = (&sealed.record.fence, &current.record.fence);
                let taken = now.object_generation == was.object_generation
                    && now.owner_generation == was.owner_generation + 1
                    && current.record.route.rid != env.route().rid;
                if !taken {
                    tracing::warn!(object = %key, "the authority changed under a move in another way");
                    return Reclaimed::Stopped;
                }
                tracing::warn!(object = %key, owner = %current.record.route.rid, "the target took the object although its relay-ready was lost: handing over");
                return Reclaimed::Taken(RelayReady {
                    target_fence: current.record.fence,
                    target_route: current.record.route,
                    members: Vec::new(),
                });
            }
            Ok(None) => return Reclaimed::Stopped,
            Err(e) => {
                tracing::warn!(object = %key, error = %e, "the store did not take the re-fence of a move that got no relay-ready; asking again");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = env.cancel().cancelled() => return Reclaimed::Stopped,
        }
        pause = (pause * 2).min(std::time::Duration::from_secs(1));
    }
}

/// Reads the authority until the store answers whether the target committed.
async fn confirm_commit(
    env: &ObjectEnv,
    key: &ObjectKey,
    ready: &RelayReady,
    sealed_at: &StoreVersion,
    deadline: Instant,
) -> bool {
    // The target commits by itself 1000 ms after relay-ready at the latest.
    tokio::time::sleep(CUTOVER_FALLBACK).await;
    let mut pause = std::time::Duration::from_millis(50);
    loop {
        match env.authority().read(key).await {
            Ok(Some(Versioned { record, version })) => {
                if record.fence == ready.target_fence {
                    return true;
                }
                // The record moved on from the sealed version without the target's owner
                // change: that change, fenced on the sealed version, can never apply now.
                if version != *sealed_at {
                    tracing::warn!(object = %key, "the authority changed under a move past relay-ready: the target cannot commit");
                    return false;
                }
                // A target whose lease is gone can no longer commit (it checks its lease
                // right before the owner change).
                if Instant::now() >= deadline || !target_lease_alive(env, ready).await {
                    return false;
                }
            }
            Ok(None) => return false,
            Err(e) => {
                tracing::warn!(object = %key, error = %e, "the store did not say whether the move committed; reading again");
                if Instant::now() >= deadline {
                    return false;
                }
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(std::time::Duration::from_secs(1));
    }
}

/// Whether the target still holds the lease it would commit under; `true` when the
/// store cannot say (the caller keeps asking).
async fn target_lease_alive(env: &ObjectEnv, ready: &RelayReady) -> bool {
    let owner = crate::store::OwnerId(ready.target_fence.owner.clone());
    match env.store().read_lease(&owner).await {
        Ok(grant) => grant.is_some_and(|g| g.token == ready.target_fence.lease()),
        Err(_) => true,
    }
}
