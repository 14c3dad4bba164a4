//! Creating Spots and Actors: the get-or-create loop against the authority, placement onto
//! the nodes serving a type, one creation attempt (reserve, stage, commit) here or on the
//! placed node, and the cancellation of a creation its crashed owner left behind.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::Instrument;

use super::authority::{AuthorityState, ObjectShape};
use super::authority_store::{Draft, Fenced, Reserved, Versioned};
use super::core::ObjectCore;
use super::entry::EntrySpot;
use super::hosting::Hosting;
use super::instance::Instance;
use super::launch::Go;
use super::lifecycle::CreateDecision;
use super::object_type::TypeDef;
use super::owner_link::node_stopping;
use super::placement;
use super::registry::ObjectRegistry;
use crate::address::Location;
use crate::address::Outcome;
use crate::address::{ObjectKey, ObjectKind, SpotId, StableType};
use crate::object::env::ObjectEnv;
use crate::telemetry::{CreationOutcome, Happened};
use crate::{Error, ErrorKind, Result};

mod placed;
mod ready;
mod stage;

pub(crate) use placed::candidates;
use placed::create_remote;
pub use ready::TypePlacement;
pub(crate) use ready::{placement, ready_nodes, wait_ready};
pub(crate) use stage::stage;

/// The message that activates an Instance Spot (seed 002 §4.3): its first handler call,
/// queued before anything else can reach the Spot, and the Relocation Store reference of
/// the envelope it came in (the recovery pointer the reservation carries).
pub(crate) struct FirstMessage {
    pub(crate) job: super::object_job::ObjectJob,
    pub(crate) bytes: usize,
    pub(crate) root: String,
}

/// First pause while another attempt's Creating record settles; doubles up to 500 ms.
const CREATING_BACKOFF: Duration = Duration::from_millis(20);
/// How long a creation keeps trying nodes that refused it as unavailable for now.
const UNAVAILABLE_PATIENCE: Duration = Duration::from_secs(2);

/// Whether `current`'s type reclaims on owner loss, its owner's claim is dead, and it was
/// released (or changed meanwhile): then the caller reads the authority again.
pub(crate) async fn owner_lost_and_reclaimed(
    env: &ObjectEnv,
    key: &ObjectKey,
    current: &Versioned,
) -> Result<bool> {
    super::recovery::reclaim::reclaim_if_owner_lost(
        env.store().as_ref(),
        env.authority(),
        key,
        current,
    )
    .await
    .map_err(Error::from)
}

/// The authority shape of objects in `kind`'s namespace that applications create.
fn created_shape(kind: ObjectKind) -> ObjectShape {
    match kind {
        ObjectKind::Spot => ObjectShape::UserSpot,
        ObjectKind::Actor => ObjectShape::Actor,
    }
}

/// Creates the object `key` of `stable_type` unless it exists (`get_or_create`), or fails
/// `AlreadyExists` when it does (`create`).
pub(super) async fn create(
    server: &Arc<ObjectCore>,
    key: ObjectKey,
    stable_type: &str,
    request: Bytes,
    timeout: Duration,
    must_be_new: bool,
) -> Result<Outcome> {
    let name = StableType::new(stable_type).map_err(|e| Error::InvalidArgument(e.to_string()))?;
    let deadline = Instant::now() + timeout;
    let id = &key;
    let mut backoff = CREATING_BACKOFF;
    let mut tries = Tries::default();
    loop {
        if Instant::now() >= deadline {
            return Err(Error::new(
                ErrorKind::DeadlineExceeded,
                format!("{id} was not created within {timeout:?}"),
            ));
        }
        match server
            .env
            .authority()
            .read(&key)
            .await
            .map_err(Error::from)?
        {
            Some(current) => {
                if owner_lost_and_reclaimed(&server.env, &key, &current).await? {
                    continue;
                }
                if current.record.shape != created_shape(key.kind)
                    || current.record.stable_type != name.as_str()
                {
                    return Err(Error::new(
                        ErrorKind::TypeMismatch,
                        format!(
                            "{id} exists as {:?} of type {:?}",
                            current.record.shape, current.record.stable_type
                        ),
                    ));
                }
                if must_be_new {
                    return Err(Error::new(ErrorKind::AlreadyExists, format!("{id} exists")));
                }
                match current.record.state {
                    AuthorityState::Ready => return Ok(Outcome::Existing(current.location())),
                    AuthorityState::Creating => {
                        settle_creating(
                            &server.env,
                            &server.registry,
                            &server.hosting,
                            &key,
                            &current,
                        )
                        .await?;
                    }
                    AuthorityState::Closing => {}
                }
                tokio::time::sleep(backoff.min(deadline.saturating_duration_since(Instant::now())))
                    .await;
                backoff = (backoff * 2).min(Duration::from_millis(500));
            }
            None => {
                let candidates = candidates(server, key.kind, stable_type);
                let Some(target) = placement::pick(&candidates, &tries.excluded).cloned() else {
                    if tries.again_after_unavailable(deadline).await {
                        continue;
                    }
                    return Err(tries.exhausted(server, id, stable_type));
                };
                let attempt = if target.local {
                    try_create(server, &key, &request, stable_type, deadline, None).await
                } else {
                    create_remote(
                        &server.env,
                        &target.rid,
                        &key,
                        stable_type,
                        &request,
                        must_be_new,
                        deadline,
                    )
                    .await
                };
                match attempt {
                    Ok(Some(outcome)) => return Ok(outcome),
                    Ok(None) => {}
                    Err(e) => tries.refused(id, target, e)?,
                }
            }
        }
    }
}

/// The placement targets a creation tried, and why they refused.
#[derive(Default)]
struct Tries {
    /// The nodes not to pick again.
    excluded: Vec<String>,
    /// Why each excluded node refused (its RID, its refusal), for the error that ends
    /// the tries.
    refusals: Vec<(String, String)>,
    /// How many were at their limit.
    full: usize,
    /// The excluded nodes that were unavailable for now (one starting, whose Entry Spot is
    /// not claimed yet, or one between leases), and when trying them again began.
    unavailable: Vec<String>,
    patient_since: Option<Instant>,
}

impl Tries {
    /// `target` refused `id` with `e`: a node at its limit (it refuses before reserving)
    /// or a placed node that cannot take it leaves the others to try (the loop reads the
    /// authority again first); anything else is the creation's error.
    fn refused(&mut self, id: &ObjectKey, target: placement::Candidate, e: Error) -> Result<()> {
        if e.is(ErrorKind::CapacityExceeded) {
            self.full += 1;
        } else if !target.local && (e.is(ErrorKind::Unavailable) || e.is(ErrorKind::NotFound)) {
            tracing::debug!(object = %id, target = %target.rid, error = %e, "placement target refused; trying another");
            self.refusals
                .push((target.rid.clone(), format!("{}: {e}", target.rid)));
            if e.is(ErrorKind::Unavailable) {
                self.unavailable.push(target.rid.clone());
            }
        } else {
            return Err(e);
        }
        self.excluded.push(target.rid);
        Ok(())
    }

    /// With no candidate left, the nodes that were only unavailable for now are tried again
    /// after a pause, for [`UNAVAILABLE_PATIENCE`] at most (and never past `deadline`): a
    /// node that placement calls ready may still be claiming its Entry Spot. `false` when
    /// there is none to try again, or the patience is spent.
    async fn again_after_unavailable(&mut self, deadline: Instant) -> bool {
        if self.unavailable.is_empty() {
            return false;
        }
        let since = *self.patient_since.get_or_insert_with(Instant::now);
        let until = deadline.min(since + UNAVAILABLE_PATIENCE);
        let pause = CREATING_BACKOFF.min(until.saturating_duration_since(Instant::now()));
        if pause.is_zero() {
            return false;
        }
        tokio::time::sleep(pause).await;
        let unavailable = std::mem::take(&mut self.unavailable);
        self.excluded.retain(|rid| !unavailable.contains(rid));
        self.refusals.retain(|(rid, _)| !unavailable.contains(rid));
        true
    }

    /// The error of a creation of `id` that has no candidate left to try.
    fn exhausted(&self, server: &ObjectCore, id: &ObjectKey, stable_type: &str) -> Error {
        let kind = id.kind;
        if self.full > 0 {
            Error::new(
                ErrorKind::CapacityExceeded,
                format!("every Object Server of {kind:?} type {stable_type:?} is at its limit"),
            )
        } else if self.excluded.is_empty() {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "no ready Object Server serves {kind:?} type {stable_type:?} ({}; \
                     wait for one with `spots().ready` or `actors().ready`)",
                    ready::explain(server, kind, stable_type, &[])
                ),
            )
        } else {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "every Object Server of {kind:?} type {stable_type:?} refused {id} ({})",
                    self.refusals
                        .iter()
                        .map(|(_, refusal)| refusal.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            )
        }
    }
}

/// A Creating record whose owner is gone was left by a crash mid-creation: it is
/// cancelled, exactly that record (seed 002 §4.3–4.4), and `true` says so. A live owner is
/// still working: the caller waits (`false`). A Ready record is never settled here, even
/// one whose recovery pointer remains: that pointer never selects another owner (seed 002
/// §10 item 11).
pub(super) async fn settle_creating(
    env: &ObjectEnv,
    registry: &ObjectRegistry,
    hosting: &Hosting,
    key: &ObjectKey,
    creating: &Versioned,
) -> Result<bool> {
    if creating.record.state != AuthorityState::Creating {
        return Ok(false);
    }
    // A record this very node lifecycle left, with no attempt of it running any more (its
    // abort failed, say), is cancelled at once.
    if creating.record.route == *env.route() {
        let generation = creating.record.fence.object_generation;
        if registry.is_creating(key, generation) {
            return Ok(false);
        }
        tracing::info!(object = %key, "cancelling a creation this node abandoned");
        cancel_creating(env, hosting, key, creating).await?;
        return Ok(true);
    }
    let owner = creating.record.fence.lease();
    let alive = env
        .store()
        .read_lease(&owner.owner)
        .await
        .map_err(Error::from)?
        .is_some_and(|grant| grant.token == owner);
    if alive {
        return Ok(false);
    }
    tracing::info!(
        object = %key,
        generation = creating.record.fence.object_generation,
        "cancelling a creation its crashed owner left behind"
    );
    cancel_creating(env, hosting, key, creating).await?;
    Ok(true)
}

/// Removes exactly the Creating record `creating`, and an Instance Spot's recovery root
/// with it (the Spot is Missing again; the message it kept is not run).
async fn cancel_creating(
    env: &ObjectEnv,
    hosting: &Hosting,
    key: &ObjectKey,
    creating: &Versioned,
) -> Result<()> {
    env.authority()
        .delete(key, creating)
        .await
        .map_err(Error::from)?;
    let root = creating.record.activation.as_deref();
    if let (Some(root), Some(store)) = (root, hosting.relocation_store()) {
        if let Ok(reference) = crate::store::PayloadRef::new(root) {
            if let Err(e) = store.delete(&reference).await {
                tracing::warn!(object = %key, error = %e, "a cancelled activation's root stays until its retention ends");
            }
        }
    }
    Ok(())
}

/// One creation attempt: reserve, stage, commit. `None` when another attempt won the
/// reservation (the caller reads again).
///
/// The attempt runs on its own task: a caller that gives up (its deadline passed, its
/// future was dropped) never leaves a half-made record behind; the attempt always ends in
/// a commit or an abort, within the request timeout. The caller waits until `wait_until`.
pub(super) async fn try_create(
    server: &Arc<ObjectCore>,
    key: &ObjectKey,
    request: &Bytes,
    stable_type: &str,
    wait_until: Instant,
    first: Option<FirstMessage>,
) -> Result<Option<Outcome>> {
    let attempt = {
        let (server, key, request, stable_type) = (
            server.clone(),
            key.clone(),
            request.clone(),
            stable_type.to_string(),
        );
        let route = server.env.route();
        let span = tracing::debug_span!(
            "zlink.create",
            mesh = %route.mesh_name,
            rid = %route.rid,
            object = %key,
            stable_type = %stable_type,
        );
        let started = std::time::Instant::now();
        server.env.tracker().clone().spawn(async move {
            let attempted = attempt(&server, &key, &request, &stable_type, first)
                .instrument(span)
                .await;
            if let (Ok(Some(Outcome::Created(..))), Some(turns)) = (&attempted, server.env.turns())
            {
                turns.activated(key.kind.into(), started);
            }
            let outcome = match &attempted {
                Ok(Some(Outcome::Created(..))) => CreationOutcome::Created,
                Ok(Some(Outcome::Rejected(_))) => CreationOutcome::Rejected,
                Ok(Some(Outcome::Existing(_)) | None) | Err(_) => CreationOutcome::NotCreated,
            };
            server.env.meter().created(key.kind.into(), outcome);
            if let Ok(Some(Outcome::Created(location, _))) = &attempted {
                server.env.events().emit(|| Happened::ObjectCreated {
                    kind: key.kind.into(),
                    id: key.id.to_string(),
                    generation: location.generation,
                });
            }
            attempted
        })
    };
    match tokio::time::timeout_at(wait_until, attempt).await {
        Ok(joined) => joined.unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::ShuttingDown,
                "the node stopped during the creation",
            ))
        }),
        Err(_) => Err(Error::new(
            ErrorKind::DeadlineExceeded,
            format!("the creation of {key} did not finish within the caller's deadline; it goes on and settles by itself"),
        )),
    }
}

async fn attempt(
    server: &Arc<ObjectCore>,
    key: &ObjectKey,
    request: &Bytes,
    stable_type: &str,
    first: Option<FirstMessage>,
) -> Result<Option<Outcome>> {
    let object_type = &server.registry.object_type(key.kind, stable_type)?;
    let membership = creatable(
        &server.hosting,
        server.entry.as_deref(),
        key,
        object_type,
        first.is_some(),
    )?;
    let node = server.env.owner_link().node()?;
    let deadline = Instant::now() + node.settings().request_timeout;
    let too_slow = || {
        Error::new(
            ErrorKind::DeadlineExceeded,
            format!("the creation of {key} did not finish in time"),
        )
    };
    let _permit = tokio::select! {
        permit = tokio::time::timeout_at(deadline, server.registry.activation()) => permit
            .map_err(|_| too_slow())?
            .ok_or_else(node_stopping)?,
        _ = server.env.cancel().cancelled() => {
            return Err(node_stopping());
        }
    };
    let creating = server.registry.begin_creating(key, object_type)?;
    let draft = draft(
        &server.env,
        key,
        object_type,
        request,
        &first,
        membership.as_ref(),
    )?;
    let Some(won) = reserve(&server.env, key, draft).await? else {
        return Ok(None);
    };
    creating.reserved(won.record.fence.object_generation);
    if first.is_some() && server.faults.holds_activation_after_reserve() {
        tracing::debug!(object = %key, "an activation held after its reservation (test fault)");
        server.env.cancel().cancelled().await;
        return Err(node_stopping());
    }
    let generation = won.record.fence.object_generation;
    let handle = server.env.handle()?;
    let staging = stage(
        object_type,
        key,
        &handle,
        generation,
        membership,
        deadline,
        // An Instance Spot has no creation request and no `on_create`.
        first.is_none().then_some(request),
    );
    let staged = tokio::select! {
        staged = tokio::time::timeout_at(deadline, staging) => {
            staged.map_err(|_| too_slow()).and_then(|staged| staged)
        }
        // The node stops: the record stays Creating, as after a crash, and the next
        // operation on the ID cancels it once this lease is gone.
        _ = server.env.cancel().cancelled() => {
            return Err(Error::new(ErrorKind::ShuttingDown, "the node stopped during the creation"));
        }
    };
    let (instance, decision) = match staged {
        Ok(staged) => staged,
        Err(e) => {
            abort(&server.env, key, &won).await;
            return Err(e);
        }
    };
    let reply = match decision {
        CreateDecision::Reject(reply) => {
            abort(&server.env, key, &won).await;
            return Ok(Some(Outcome::Rejected(reply)));
        }
        CreateDecision::Accept(reply) => reply,
    };
    let made = Made {
        key,
        object_type,
        won: &won,
        instance,
        first,
        deadline,
    };
    let ready = initialize_then_commit(server, made).await?;
    Ok(Some(Outcome::Created(ready.location(), reply)))
}

/// Whether this node may create `key` of `object_type` now (`instance`: from its first
/// message), and the Entry Spot a new Actor starts in.
fn creatable(
    hosting: &Hosting,
    entry: Option<&EntrySpot>,
    key: &ObjectKey,
    object_type: &TypeDef,
    instance: bool,
) -> Result<Option<SpotId>> {
    // An Instance Spot comes only from its first message; a manager create never makes one.
    if object_type.instance != instance {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            match instance {
                false => format!(
                    "{} is an Instance Spot type: its Spots are activated by a call with Instance intent, never created",
                    object_type.stable_type
                ),
                true => format!("{} is not an Instance Spot type", object_type.stable_type),
            },
        ));
    }
    if hosting.is_draining() {
        return Err(Error::new(
            ErrorKind::Unavailable,
            "this node is relocating its objects away and takes no new ones",
        ));
    }
    match key.kind {
        ObjectKind::Spot => Ok(None),
        ObjectKind::Actor => entry
            .ok_or_else(|| Error::new(ErrorKind::NotFound, "this node serves no Actor type"))?
            .ready()
            .map(Some),
    }
}

/// The reservation of `key` this node writes, under the owner lease's token now (taken
/// after the activation permit: it must be current when the reservation is written).
fn draft(
    env: &ObjectEnv,
    key: &ObjectKey,
    object_type: &TypeDef,
    request: &Bytes,
    first: &Option<FirstMessage>,
    membership: Option<&SpotId>,
) -> Result<Draft> {
    let Some(token) = env.lease().admitting_token() else {
        return Err(Error::new(
            ErrorKind::Unavailable,
            "this node's owner lease admits no new work (the Location Store is unreachable)",
        ));
    };
    Ok(Draft {
        shape: match first {
            Some(_) => ObjectShape::InstanceSpot,
            None => created_shape(key.kind),
        },
        stable_type: object_type.stable_type.as_str().to_string(),
        owner: token,
        route: env.route().clone(),
        membership: membership.map(|spot| spot.as_str().to_string()),
        creation_request: request.to_vec(),
        activation: first.as_ref().map(|first| first.root.clone()),
        reclaim_on_owner_lost: object_type.reclaim_on_owner_lost,
    })
}

/// Writes the reservation `draft` of `key`; `None` when another attempt holds it.
async fn reserve(env: &ObjectEnv, key: &ObjectKey, draft: Draft) -> Result<Option<Versioned>> {
    match env
        .authority()
        .reserve(key, draft)
        .await
        .map_err(Error::from)?
    {
        Reserved::Won(won) => Ok(Some(won)),
        Reserved::Exists(_) => Ok(None),
    }
}

/// A creation whose factory ran: what its commit needs.
struct Made<'a> {
    key: &'a ObjectKey,
    object_type: &'a Arc<TypeDef>,
    won: &'a Versioned,
    instance: Box<dyn Instance>,
    first: Option<FirstMessage>,
    deadline: Instant,
}

/// The factory ran; `on_initialize` runs next, before the Ready commit (reference
/// §2.5–2.6): a crash until the commit leaves a reservation the next call cancels. Then
/// the commit, and the object runs. An `on_initialize` past the deadline, or a node that
/// stops meanwhile, ends the attempt.
async fn initialize_then_commit(server: &Arc<ObjectCore>, made: Made<'_>) -> Result<Versioned> {
    let Made {
        key,
        object_type,
        won,
        instance,
        first,
        deadline,
    } = made;
    let mut ready = won.clone();
    ready.record.state = AuthorityState::Ready;
    ready.record.creation_request = None;
    let (go, wait) = oneshot::channel();
    let (initialized_tx, initialized) = oneshot::channel();
    let live = crate::object::launch::start(
        key.clone(),
        object_type.clone(),
        ready,
        instance,
        server.object_host(),
        Go::InitializeFirst {
            first: first.map(|first| (first.job, first.bytes)),
            initialized: initialized_tx,
            commit: wait,
        },
        None,
    );
    let initialized = tokio::select! {
        initialized = tokio::time::timeout_at(deadline, initialized) => match initialized {
            Ok(Ok(initialized)) => initialized,
            Ok(Err(_)) => Err(node_stopping()),
            Err(_) => Err(Error::new(
                ErrorKind::DeadlineExceeded,
                format!("the creation of {key} did not finish in time (on_initialize ran on)"),
            )),
        },
        _ = server.env.cancel().cancelled() => Err(node_stopping()),
    };
    if let Err(e) = initialized {
        live.stop();
        // A stopping node leaves the record Creating, as a crash would: the next call
        // cancels it once this lease is gone.
        if !server.env.is_stopping() {
            abort(&server.env, key, won).await;
        }
        return Err(e);
    }
    // Reachable before the commit lands, so the owner admits messages from the moment the
    // store says Ready; nothing but `on_initialize` ran before the commit is known.
    server.registry.insert(live.clone());
    let committed = match server.env.authority().commit(key, won).await {
        Ok(Fenced::Done(ready)) => Ok(ready),
        Ok(Fenced::Moved) => Err(Error::new(
            ErrorKind::Unavailable,
            format!("{key}'s reservation was cancelled before it committed"),
        )),
        // The answer was lost (or not replicated): learn what the store has, never guess.
        Err(e) => settle_lost_commit(&server.env, key, won, e).await,
    };
    match committed {
        Ok(ready) => {
            live.set_authority(ready.clone());
            if key.kind == ObjectKind::Actor {
                super::joining::created_in_entry(
                    &server.registry,
                    server.entry_spot(),
                    &live,
                    &ready,
                );
            }
            let _ = go.send(true);
            Ok(ready)
        }
        Err(e) => {
            server.registry.remove(&live);
            let _ = go.send(false);
            Err(e)
        }
    }
}

/// Learns whether a commit whose answer was lost landed: the store is read until it
/// answers (the Spot stays registered, not yet running, meanwhile), and a reservation
/// still in place is aborted. Stops only when the node does.
async fn settle_lost_commit(
    env: &ObjectEnv,
    key: &ObjectKey,
    won: &Versioned,
    lost: crate::store::StoreError,
) -> Result<Versioned> {
    let mut backoff = CREATING_BACKOFF;
    loop {
        match env.authority().read(key).await {
            Ok(Some(current))
                if current.record.state == AuthorityState::Ready
                    && current.record.fence == won.record.fence =>
            {
                return Ok(current);
            }
            Ok(Some(current)) if current.version == won.version => {
                abort(env, key, won).await;
                return Err(Error::from(lost));
            }
            // Someone cancelled the reservation (or it was replaced): it never committed.
            Ok(_) => return Err(Error::from(lost)),
            Err(e) => {
                tracing::warn!(object = %key, error = %e, "cannot learn whether a commit landed; reading again");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = env.cancel().cancelled() => {
                return Err(Error::new(ErrorKind::ShuttingDown, "the node stopped during the creation"));
            }
        }
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}

async fn abort(env: &ObjectEnv, key: &ObjectKey, won: &Versioned) {
    if let Err(e) = env.authority().delete(key, won).await {
        tracing::warn!(object = %key, error = %e, "could not abort a reservation; the next get-or-create of the ID cancels it");
    }
}

/// The object's current Ready incarnation, if any.
pub(super) async fn find(env: &ObjectEnv, key: &ObjectKey) -> Result<Option<Location>> {
    let current = env.authority().read(key).await.map_err(Error::from)?;
    Ok(current
        .filter(|v| v.record.state == AuthorityState::Ready)
        .map(|v| v.location()))
}
