//! Actor membership on one node (digest §4.2–4.5): an Actor belongs to exactly one Spot —
//! its node's Entry Spot, or a User Spot it joined — and moves between Spots of its own
//! node with a Join registered from one of its handlers.
//!
//! The Join runs after the handler that registered it ended normally, before the Actor's
//! next message (messages that arrive meanwhile wait behind it): the target Spot admits it
//! (`on_actor_join`), the Actor's authority records the new membership (fenced on its exact
//! authority), the target hears `on_joined_actor`, the Spot left hears `on_leave_actor`
//! (one-way), and the Actor learns the outcome (`on_join_completed`). A Join to a Spot on
//! another node moves the Actor there (a relocation).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::authority_store::{Fenced, Versioned};
use super::core::ObjectCore;
use super::live_object::LiveObject;
use super::membership::{
    JoinDecision, JoinOutcome, JoinRequest, JoinStep, MemberEvent, JOIN_TIMEOUT,
};
use super::object_job::ObjectJob;
use super::registry::ObjectRegistry;
use crate::address::ActorRef;
use crate::address::{ObjectKey, SpotId};
use crate::object::env::ObjectEnv;
use crate::{Error, ErrorKind};

fn failed(kind: ErrorKind, why: impl Into<String>) -> JoinOutcome {
    JoinOutcome::Failed(Error::new(kind, why))
}

/// Runs a membership callback on `spot`'s lifecycle lane; `None` when the Spot could not
/// take it (closed, stopped) or did not answer within the Join's time.
async fn on_spot(spot: &LiveObject, event: MemberEvent) -> Option<JoinDecision> {
    let (done, answer) = oneshot::channel();
    if !spot.deliver_notice(ObjectJob::Member { event, done }) {
        return None;
    }
    tokio::time::timeout(JOIN_TIMEOUT, answer).await.ok()?.ok()
}

/// Runs the Join `join` of `actor` (a Ready Actor this node owns).
pub(crate) async fn join(
    core: &ObjectCore,
    actor: &Arc<LiveObject>,
    join: JoinRequest,
) -> JoinStep {
    let JoinRequest { spot, request } = join;
    let live = core.registry.get(&ObjectKey::from(&spot));
    let to_entry = core.entry_spot() == Some(&spot);
    if live.is_none() && !to_entry && actor.membership().as_ref() != Some(&spot) {
        return match elsewhere(&core.env, &spot).await {
            Ok(rid) => JoinStep::Across { spot, request, rid },
            Err(outcome) => JoinStep::Done(outcome),
        };
    }
    JoinStep::Done(join_here(core, actor, spot, request, live).await)
}

/// A Join to a Spot of this node (or the Entry Spot).
async fn join_here(
    core: &ObjectCore,
    actor: &Arc<LiveObject>,
    spot: SpotId,
    request: Bytes,
    live: Option<Arc<LiveObject>>,
) -> JoinOutcome {
    let source = actor.membership();
    if source.as_ref() == Some(&spot) {
        return JoinOutcome::Accepted {
            spot,
            reply: Bytes::new(),
        };
    }
    let (target, to_entry) = match join_target(core.entry_spot(), actor, &spot, live) {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    let Ok(actor_id) = crate::address::ActorId::new(&actor.key.id) else {
        return failed(ErrorKind::InternalFailure, "an Actor with an invalid ID");
    };
    let authority = actor.authority();
    let actor_ref = ActorRef::at(actor_id, authority.location());
    // An Entry Spot admits every Actor of its node: no admission callback.
    let reply = match to_entry {
        true => Bytes::new(),
        false => match spot_admission(&target, &spot, actor_ref.clone(), request).await {
            Ok(reply) => reply,
            Err(outcome) => return outcome,
        },
    };
    // The seat is taken before the write: a Spot that began closing takes no one, and a
    // Join cancelled midway gives it back.
    if !target.add_member(&actor.key.id) {
        return failed(ErrorKind::Unavailable, format!("Spot {spot} is closing"));
    }
    let seat = Seat {
        spot: &target,
        actor: &actor.key.id,
        taken: true,
    };
    let written = match write_membership(&core.env, actor, &authority, &spot).await {
        Ok(written) => written,
        Err(e) => return JoinOutcome::Failed(e),
    };
    // Committed: the node's view follows at once, with no await in between.
    seat.keep();
    actor.set_authority(written);
    actor.set_membership(Some(spot.clone()));
    let previous = source
        .as_ref()
        .and_then(|s| core.registry.get(&ObjectKey::from(s)));
    if let Some(previous) = &previous {
        previous.remove_member(&actor.key.id);
    }
    actor.use_gate_of(Some(&target));
    let _ = on_spot(
        &target,
        MemberEvent::Joined {
            actor: actor_ref.clone(),
        },
    )
    .await;
    // The Spot left hears it one-way: its answer does not hold the Actor.
    if let Some(previous) = previous {
        notify(&previous, MemberEvent::Left { actor: actor_ref });
    }
    JoinOutcome::Accepted { spot, reply }
}

/// The Spot `spot` a Join of `actor` lands in on this node (`live`, or this node's Entry
/// Spot), and whether it is the Entry Spot; the failed outcome when there is none or it
/// takes no Actors of `actor`'s type.
fn join_target(
    entry: Option<&SpotId>,
    actor: &LiveObject,
    spot: &SpotId,
    live: Option<Arc<LiveObject>>,
) -> std::result::Result<(Arc<LiveObject>, bool), JoinOutcome> {
    let Some(entry) = entry else {
        return Err(failed(
            ErrorKind::Unavailable,
            "this node runs no Entry Spot",
        ));
    };
    let to_entry = spot == entry;
    let not_here = || {
        failed(
            ErrorKind::Unavailable,
            format!("Spot {spot} is not running here"),
        )
    };
    // (The Entry Spot runs here once claimed; until then nobody joins it.)
    let target = live.ok_or_else(not_here)?;
    if !to_entry && target.object_type.members.as_ref() != Some(&actor.object_type.stable_type) {
        return Err(failed(
            ErrorKind::InvalidOperation,
            format!(
                "Spot {spot} (type {}) takes no Actors of type {}",
                target.object_type.stable_type, actor.object_type.stable_type
            ),
        ));
    }
    Ok((target, to_entry))
}

/// The User Spot `target`'s admission of `actor` (`on_actor_join`): its reply, or the
/// outcome a rejection (or a Spot that could not answer) gives the Join.
async fn spot_admission(
    target: &LiveObject,
    spot: &SpotId,
    actor: ActorRef,
    request: Bytes,
) -> std::result::Result<Bytes, JoinOutcome> {
    match on_spot(target, MemberEvent::Join { actor, request }).await {
        Some(JoinDecision::Accept(reply)) => Ok(reply),
        Some(JoinDecision::Reject(reply)) => Err(JoinOutcome::Rejected { reply }),
        None => Err(failed(
            ErrorKind::Unavailable,
            format!("Spot {spot} did not admit the Join (closing, full or too slow)"),
        )),
    }
}

/// The membership change as one fenced write on `actor`'s exact `authority`; an answer
/// that was lost is read back until the store answers, never guessed. On failure the
/// Actor stays where the store says it is, at its current version.
async fn write_membership(
    env: &ObjectEnv,
    actor: &LiveObject,
    authority: &Versioned,
    spot: &SpotId,
) -> crate::Result<Versioned> {
    let lost = match env
        .authority()
        .set_membership(&actor.key, authority, spot.as_str())
        .await
    {
        Ok(Fenced::Done(written)) => return Ok(written),
        Ok(Fenced::Moved) => None,
        Err(lost) => Some(lost),
    };
    let current = settle_lost_write(env, actor, authority).await;
    let landed = current
        .as_ref()
        .is_some_and(|current| current.record.membership.as_deref() == Some(spot.as_str()));
    match current {
        Some(current) if landed => Ok(current),
        other => {
            if let Some(current) = other {
                actor.set_authority(current);
            }
            Err(match lost {
                Some(lost) => Error::from(lost),
                None => Error::new(
                    ErrorKind::Unavailable,
                    "the Actor's authority changed during the Join",
                ),
            })
        }
    }
}

/// A member seat taken on a Spot for a Join under way; given back unless kept.
struct Seat<'a> {
    spot: &'a LiveObject,
    actor: &'a Arc<str>,
    taken: bool,
}

impl Seat<'_> {
    fn keep(mut self) {
        self.taken = false;
    }
}

impl Drop for Seat<'_> {
    fn drop(&mut self) {
        if self.taken {
            self.spot.remove_member(self.actor);
        }
    }
}

/// The Actor's authority after a membership write whose answer was lost or that missed:
/// read until the store answers (or the Join's time is up). `None` when it is gone or is
/// another incarnation now.
async fn settle_lost_write(
    env: &ObjectEnv,
    actor: &LiveObject,
    admitted: &Versioned,
) -> Option<Versioned> {
    let deadline = tokio::time::Instant::now() + JOIN_TIMEOUT;
    let mut backoff = Duration::from_millis(20);
    loop {
        match env.authority().read(&actor.key).await {
            Ok(current) => {
                return current.filter(|c| c.record.fence == admitted.record.fence);
            }
            Err(e) => {
                tracing::warn!(object = %actor.key, error = %e, "cannot learn whether a membership write landed; reading again");
            }
        }
        if tokio::time::Instant::now() + backoff > deadline {
            return None;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_millis(500));
    }
}

/// Tells `spot` that `actor` left it (one-way).
pub(crate) fn notify_left(spot: &LiveObject, actor: ActorRef) -> bool {
    notify(spot, MemberEvent::Left { actor })
}

/// Tells `spot` that the session bound to `actor` disconnected (one-way).
pub(crate) fn notify_disconnected(spot: &LiveObject, actor: ActorRef) -> bool {
    notify(spot, MemberEvent::Disconnected { actor })
}

/// Runs `on_joined_actor` of `spot` for `actor`, waiting for it (bounded).
pub(crate) async fn joined(spot: &LiveObject, actor: ActorRef) {
    let _ = on_spot(spot, MemberEvent::Joined { actor }).await;
}

/// Asks `spot` to admit `actor` (`on_actor_join`); `None` when it could not answer.
pub(crate) async fn admit(
    spot: &LiveObject,
    actor: ActorRef,
    request: Bytes,
) -> Option<JoinDecision> {
    on_spot(spot, MemberEvent::Join { actor, request }).await
}

/// A one-way membership notice: framework work, admitted past the lane's bound so no
/// callback is lost to a burst (one per Actor event, so it stays bounded by the Actors).
fn notify(spot: &LiveObject, event: MemberEvent) -> bool {
    let (done, _) = oneshot::channel();
    spot.deliver_notice(ObjectJob::Member { event, done })
}

/// A Join target this node does not run: the node it is Ready on, or why it cannot be
/// joined (missing, not Ready, the store cannot say).
async fn elsewhere(env: &ObjectEnv, spot: &SpotId) -> Result<String, JoinOutcome> {
    match env.authority().read(&ObjectKey::from(spot)).await {
        Ok(None) => Err(failed(
            ErrorKind::NotFound,
            format!("there is no Spot {spot}"),
        )),
        Ok(Some(current))
            if current.record.route.rid != env.route().rid
                && current.record.state == super::authority::AuthorityState::Ready =>
        {
            Ok(current.record.route.rid)
        }
        Ok(Some(_)) => Err(failed(
            ErrorKind::Unavailable,
            format!("Spot {spot} is not running here"),
        )),
        Err(e) => Err(JoinOutcome::Failed(Error::from(e))),
    }
}

/// Tells this node's Entry Spot that `actor` was created in it (one-way, on its lifecycle
/// lane, ahead of the Actor's first turn).
pub(crate) fn created_in_entry(
    registry: &ObjectRegistry,
    entry: Option<&SpotId>,
    actor: &LiveObject,
    ready: &Versioned,
) {
    let Some(entry) = entry else {
        return;
    };
    let Some(entry_spot) = registry.get(&ObjectKey::from(entry)) else {
        return;
    };
    let Ok(id) = crate::address::ActorId::new(&actor.key.id) else {
        return;
    };
    if !entry_spot.add_member(&actor.key.id) {
        return;
    }
    let created = MemberEvent::Created {
        actor: ActorRef::at(id, ready.location()),
    };
    if !notify(&entry_spot, created) {
        entry_spot.remove_member(&actor.key.id);
    }
}
