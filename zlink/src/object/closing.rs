//! Closing a Spot or destroying an Actor: exactly the incarnation a reference names, on
//! its owner (here, or through command 48 or 27 on the owning node).

use std::sync::Arc;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::authority::{AuthorityState, ObjectShape};
use super::authority_store::{Fenced, Versioned};
use super::core::ObjectCore;
use super::lifecycle::ClosingReason;
use super::live_object::LiveObject;
use super::object_job::ObjectJob;
use super::owner_link::ObjectCommand;
use super::registry::ObjectRegistry;
use super::remote::encode_generation;
use super::resolver::Resolver;
use crate::address::{ObjectKey, ObjectKind};
use crate::object::env::ObjectEnv;
use crate::telemetry::Happened;
use crate::{Error, ErrorKind, Result};

/// Closes (a Spot) or destroys (an Actor) exactly the incarnation `generation` of `key`
/// as its application asked. `false` when it is gone already.
pub(super) async fn close_as_asked(
    core: &ObjectCore,
    key: &ObjectKey,
    generation: u64,
) -> Result<bool> {
    let reason = match key.kind {
        ObjectKind::Spot => ClosingReason::ExplicitClose,
        ObjectKind::Actor => ClosingReason::Destroyed,
    };
    close(core, key, generation, reason).await
}

/// Closes exactly the incarnation `generation` of `key`. `false` when it is gone already.
pub(super) async fn close(
    core: &ObjectCore,
    key: &ObjectKey,
    generation: u64,
    reason: ClosingReason,
) -> Result<bool> {
    let Some(current) = core.env.authority().read(key).await.map_err(Error::from)? else {
        return Ok(false);
    };
    if current.record.shape == ObjectShape::EntrySpot {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{key} is an Entry Spot: it closes with its node"),
        ));
    }
    check_generation(key, &current, generation)?;
    if current.record.route.rid != core.env.route().rid {
        return close_remote(&core.env, key, &current, generation).await;
    }
    let live = core
        .registry
        .get(key)
        .filter(|live| live.generation() == generation);
    let Some(live) = live else {
        // A Closing record this lifecycle owns, whose Spot is gone already (the delete of
        // an earlier close failed): finish the release.
        if current.record.state == AuthorityState::Closing
            && current.record.route == *core.env.route()
        {
            core.env
                .authority()
                .delete(key, &current)
                .await
                .map_err(Error::from)?;
            return Ok(true);
        }
        return Err(Error::new(
            ErrorKind::Unavailable,
            format!("{key} is owned by this node's previous lifecycle"),
        ));
    };
    // An Actor is destroyed only from its Entry Spot (it leaves a User Spot first): the
    // store says where it is, even while a Join is under way.
    let entry = core.entry_spot().map(|id| id.as_str());
    if key.kind == ObjectKind::Actor && current.record.membership.as_deref() != entry {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{key} is a member of a User Spot: it leaves it (to its Entry Spot) before it is destroyed"),
        ));
    }
    // Never in the middle of a move: its owner change is fenced on the version it sealed.
    let _closing = live.transition()?;
    // A User Spot with member Actors stays (admission and authority kept). Once this
    // passes, no Join lands here until the close is over (or did not go through).
    if !live.close_if_empty() {
        return Ok(false);
    }
    let reopen = Reopen(Some(&live));
    let Some(closing) = begin_closing(&core.env, key, current, generation).await? else {
        return Ok(false);
    };
    reopen.disarm();
    live.set_authority(closing.clone());
    live.seal();
    last_turn(&core.env, &live, reason).await;
    release(&core.registry, &core.resolver, &core.env, &live, &closing).await
}

/// `InvalidOperation` unless `current` is the incarnation `generation` of `key`.
fn check_generation(key: &ObjectKey, current: &Versioned, generation: u64) -> Result<()> {
    let found = current.record.fence.object_generation;
    if found != generation {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{key} is generation {found}, not {generation}"),
        ));
    }
    Ok(())
}

/// The Closing record of `key` (written now from `current` when it is Ready); `None`
/// when there is nothing to close (gone, or still being created).
async fn begin_closing(
    env: &ObjectEnv,
    key: &ObjectKey,
    current: Versioned,
    generation: u64,
) -> Result<Option<Versioned>> {
    match current.record.state {
        AuthorityState::Closing => return Ok(Some(current)),
        AuthorityState::Creating => return Ok(None),
        AuthorityState::Ready => {}
    }
    let authority = env.authority();
    match authority
        .begin_close(key, &current)
        .await
        .map_err(Error::from)?
    {
        Fenced::Done(closing) => Ok(Some(closing)),
        // Something changed the record since it was read (a Join's membership write,
        // another close): say so rather than guess.
        Fenced::Moved => match authority.read(key).await.map_err(Error::from)? {
            None => Ok(None),
            Some(now) => {
                check_generation(key, &now, generation)?;
                Err(Error::new(
                    ErrorKind::Unavailable,
                    format!("{key} changed while it was being closed; close it again"),
                ))
            }
        },
    }
}

/// Runs `live`'s last turn (`on_closing(reason)`), after its current one; a handler that
/// never ends does not hold the close forever (the object is sealed and its record
/// released regardless).
async fn last_turn(env: &ObjectEnv, live: &LiveObject, reason: ClosingReason) {
    let key = &live.key;
    let (done, closed) = oneshot::channel();
    let close = ObjectJob::Close { reason, done };
    if live.try_deliver(close, 0).is_ok() {
        // The close waits for the current turn; a handler that never ends does not hold
        // the close forever (the Spot is sealed and its record released regardless).
        let patience = env.node().map_or(std::time::Duration::ZERO, |node| {
            node.settings().request_timeout
        });
        if tokio::time::timeout(patience, closed).await.is_err() {
            tracing::warn!(object = %key, "the last turn did not end in time; stopping it and releasing it");
            live.stop();
        }
    } else {
        live.stop();
    }
}

/// `live` leaves the registry and its Spot, and its Closing record is deleted: the ID
/// reads Missing.
async fn release(
    registry: &ObjectRegistry,
    resolver: &Resolver,
    env: &ObjectEnv,
    live: &Arc<LiveObject>,
    closing: &Versioned,
) -> Result<bool> {
    let key = &live.key;
    registry.remove(live);
    env.events().emit(|| Happened::ObjectClosed {
        kind: key.kind.into(),
        id: key.id.to_string(),
    });
    if let Some(spot) = live.membership() {
        if let Some(spot) = registry.get(&ObjectKey::from(&spot)) {
            spot.remove_member(&key.id);
        }
    }
    resolver.closed_here(key, &closing.record.fence);
    match env
        .authority()
        .delete(key, closing)
        .await
        .map_err(Error::from)?
    {
        Fenced::Done(()) | Fenced::Moved => Ok(true),
    }
}

/// Closes a Spot (command 48) or destroys an Actor (command 27) through its owner, with
/// the owner fence of the authority just read.
async fn close_remote(
    env: &ObjectEnv,
    key: &ObjectKey,
    current: &Versioned,
    generation: u64,
) -> Result<bool> {
    let out = &env.owner_link();
    let node = out.node()?;
    let settings = node.settings();
    let deadline = Instant::now() + settings.request_timeout;
    let admit_by = deadline.min(Instant::now() + settings.send_timeout);
    let link = out
        .peer(&current.record.route.rid, admit_by)
        .await
        .map_err(|e| {
            Error::new(
                ErrorKind::Unavailable,
                format!("the owner of {key} is not reachable: {e}"),
            )
        })?;
    let close = ObjectCommand::close(key, &current.record.fence, encode_generation(generation));
    let reply = out.request(&link, &close, deadline, admit_by).await?;
    crate::wire::cbor_decode(&reply)
}

/// Opens a Spot to Joins again when its close does not go through.
struct Reopen<'a>(Option<&'a super::live_object::LiveObject>);

impl Reopen<'_> {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Reopen<'_> {
    fn drop(&mut self) {
        if let Some(live) = self.0 {
            live.reopen();
        }
    }
}
