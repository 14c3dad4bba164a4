//! The object layer of one node: the Spot types it serves (the Object Server role), the
//! Spots it owns, creation through the Location Store, the resolver with its positive
//! route cache, and the inbound route for Spot commands.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::{oneshot, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::authority::{AuthorityState, ObjectShape, OwnerRoute};
use super::authority_store::{AuthorityStore, Draft, Fenced, Reserved, Versioned};
use super::context::SpotContext;
use super::id::{ObjectKey, SpotId, StableType};
use super::live_spot::{LiveSpot, ReplyTo, SpotHost, SpotJob};
use super::mailbox::Refused;
use super::placement;
use super::remote::{decode_generation, encode_generation, CreateReply, CreateRequest};
use super::route_cache::{ReadyRoute, RouteCache};
use super::spot::{ClosingReason, CreateDecision, SpotType};
use crate::handler::PacketKind;
use crate::mesh::calls::OutboundCall;
use crate::mesh::peer_table::PeerEvent;
use crate::mesh::{InboundCall, InboundRoute, MeshNode, Subsystem};
use crate::store::{LocationStore, OwnerLease, StoreError};
use crate::wire::{Command, Metadata, RouteFence};
use crate::{Error, ErrorKind, Result};

/// Creations one node runs at once (factory through commit).
const MAX_ACTIVATIONS: usize = 128;
/// First pause while another attempt's Creating record settles; doubles up to 500 ms.
const CREATING_BACKOFF: Duration = Duration::from_millis(20);

/// A Spot's location snapshot: the exact incarnation `close` acts on. Not a message
/// target: messages go by ID.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpotRef {
    /// The Spot's ID.
    pub id: SpotId,
    /// Its ObjectGeneration.
    pub generation: u64,
    /// The MeshName of its owner.
    pub mesh_name: String,
    /// The RID of its owner.
    pub rid: String,
}

/// The outcome of a create or get-or-create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpotCreation {
    /// The Spot existed already (no factory ran, no reply).
    Existing(SpotRef),
    /// This call created it; `on_create` accepted with this reply.
    Created(SpotRef, Bytes),
    /// This call's attempt was declined by `on_create`, with this reply; nothing stays.
    Rejected(Bytes),
}

/// What the resolver found for an ID (seed 000 §2.2: four closed results).
#[derive(Debug, Clone)]
pub(crate) enum Resolution {
    Ready(Arc<ReadyRoute>),
    Missing,
    Unavailable(String),
    StoreFailure(StoreError),
}

/// One direct call to a Spot, as the caller made it.
pub(crate) struct SpotCall<'a> {
    pub(crate) id: &'a SpotId,
    pub(crate) packet: &'a str,
    pub(crate) payload: Bytes,
    pub(crate) metadata: &'a Metadata,
    pub(crate) kind: PacketKind,
    /// The whole call's budget: resolve, queue, handler and reply.
    pub(crate) timeout: Duration,
    /// How long the send path may wait for room.
    pub(crate) send_timeout: Duration,
}

/// A message ready to queue on a Spot this node owns.
struct Prepared {
    live: Arc<LiveSpot>,
    job: SpotJob,
    bytes: usize,
}

/// Why a message was not admitted, with its reply capability so the caller answers.
struct Refusal {
    error: Error,
    reply: Option<ReplyTo>,
}

/// A message on its way into a Spot this node owns.
struct Admission<'a> {
    id: &'a SpotId,
    packet: &'a str,
    payload: Bytes,
    metadata: Metadata,
    kind: PacketKind,
    fence: RouteFence,
    deadline: Option<Instant>,
    reply: Option<ReplyTo>,
}

fn spot_ref(id: &SpotId, v: &Versioned) -> SpotRef {
    SpotRef {
        id: id.clone(),
        generation: v.record.fence.object_generation,
        mesh_name: v.record.route.mesh_name.clone(),
        rid: v.record.route.rid.clone(),
    }
}

fn store_error(e: StoreError) -> Error {
    Error::from(e)
}

/// The object layer of one node.
pub(crate) struct ObjectServer {
    node: Weak<MeshNode>,
    types: HashMap<StableType, Arc<SpotType>>,
    store: Arc<dyn LocationStore>,
    authority: AuthorityStore,
    lease: Arc<OwnerLease>,
    route: OwnerRoute,
    live: Mutex<HashMap<SpotId, Arc<LiveSpot>>>,
    cache: RouteCache,
    max_age: Duration,
    placement_weight: u32,
    /// Whether the last authority read failed: the next success is a store recovery.
    store_failing: std::sync::atomic::AtomicBool,
    activations: Semaphore,
    tracker: TaskTracker,
    cancel: CancellationToken,
}

impl ObjectServer {
    /// The object layer of `node`, when it has a Location Store (objects keep their
    /// authority there); its inbound routes are registered.
    pub(crate) fn start(node: &Arc<MeshNode>, types: &[SpotType]) -> Result<Option<Arc<Self>>> {
        let services = node.services();
        let (Some(store), Some(lease)) = (services.store(), services.lease()) else {
            return Ok(None);
        };
        let identity = node.identity();
        let server = Arc::new(ObjectServer {
            node: Arc::downgrade(node),
            types: types
                .iter()
                .map(|t| (t.stable_type.clone(), Arc::new(t.clone())))
                .collect(),
            store: store.clone(),
            authority: AuthorityStore::new(store.clone()),
            lease: lease.clone(),
            route: OwnerRoute {
                mesh_name: identity.mesh_name().to_string(),
                rid: identity.rid().to_string(),
                node_generation: identity.generation(),
            },
            live: Mutex::new(HashMap::new()),
            cache: RouteCache::new(node.settings().route_cache_max_age),
            max_age: node.settings().route_cache_max_age,
            placement_weight: node.settings().placement_weight,
            store_failing: std::sync::atomic::AtomicBool::new(false),
            activations: Semaphore::new(MAX_ACTIVATIONS),
            tracker: TaskTracker::new(),
            cancel: CancellationToken::new(),
        });
        let route: Arc<dyn InboundRoute> = Arc::new(SpotRoute(Arc::downgrade(&server)));
        node.dispatcher()
            .register(Command::SpotSend, route.clone())?;
        node.dispatcher()
            .register(Command::SpotRequest, route.clone())?;
        node.dispatcher()
            .register(Command::SpotCreate, route.clone())?;
        node.dispatcher().register(Command::SpotClose, route)?;
        server.watch_invalidations(node);
        Ok(Some(server))
    }

    /// Keeps the route cache honest: a peer that leaves (or comes back as a new lifecycle)
    /// takes its routes with it, and a lease this node no longer holds takes the routes to
    /// itself under it.
    fn watch_invalidations(self: &Arc<Self>, node: &Arc<MeshNode>) {
        let mut events = node.peers().subscribe();
        let mut lease = self.lease.subscribe();
        let server = Arc::downgrade(self);
        let cancel = self.cancel.clone();
        self.tracker.spawn(async move {
            let mut held = lease.borrow().token.clone();
            loop {
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    event = events.recv() => {
                        let Some(server) = server.upgrade() else { return };
                        match event {
                            Ok(PeerEvent::Lost { rid }) | Ok(PeerEvent::Ready { rid, .. }) => {
                                server.cache.owner_departed(&rid)
                            }
                            Ok(PeerEvent::WeightsChanged { .. }) => {}
                            // Missed events: forget everything rather than guess.
                            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                                server.cache.store_recovered()
                            }
                            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                        }
                    }
                    changed = lease.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        let now = lease.borrow_and_update().token.clone();
                        if now != held {
                            if let (Some(server), Some(old)) = (server.upgrade(), held.take()) {
                                server.cache.lease_invalidated(&old);
                            }
                            held = now;
                        }
                    }
                }
            }
        });
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<SpotId, Arc<LiveSpot>>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn spot_type(&self, stable_type: &str) -> Result<Arc<SpotType>> {
        let name =
            StableType::new(stable_type).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        self.types.get(&name).cloned().ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!("this node serves no Spot type {stable_type:?}"),
            )
        })
    }

    /// Creates the Spot `id` of `stable_type` unless it exists (`get_or_create`), or fails
    /// `AlreadyExists` when it does (`create`).
    pub(crate) async fn create(
        &self,
        id: SpotId,
        stable_type: &str,
        request: Bytes,
        timeout: Duration,
        must_be_new: bool,
    ) -> Result<SpotCreation> {
        let name =
            StableType::new(stable_type).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        let deadline = Instant::now() + timeout;
        let key = ObjectKey::from(&id);
        let mut backoff = CREATING_BACKOFF;
        let mut excluded: Vec<String> = Vec::new();
        loop {
            if Instant::now() >= deadline {
                return Err(Error::new(
                    ErrorKind::DeadlineExceeded,
                    format!("Spot {id} was not created within {timeout:?}"),
                ));
            }
            match self.authority.read(&key).await.map_err(store_error)? {
                Some(current) => {
                    if current.record.shape != ObjectShape::UserSpot
                        || current.record.stable_type != name.as_str()
                    {
                        return Err(Error::new(
                            ErrorKind::TypeMismatch,
                            format!(
                                "Spot {id} exists as {:?} of type {:?}",
                                current.record.shape, current.record.stable_type
                            ),
                        ));
                    }
                    if must_be_new {
                        return Err(Error::new(
                            ErrorKind::AlreadyExists,
                            format!("Spot {id} exists"),
                        ));
                    }
                    match current.record.state {
                        AuthorityState::Ready => {
                            return Ok(SpotCreation::Existing(spot_ref(&id, &current)))
                        }
                        AuthorityState::Creating => self.settle_creating(&key, &current).await?,
                        AuthorityState::Closing => {}
                    }
                    tokio::time::sleep(
                        backoff.min(deadline.saturating_duration_since(Instant::now())),
                    )
                    .await;
                    backoff = (backoff * 2).min(Duration::from_millis(500));
                }
                None => {
                    let candidates = self.candidates(stable_type);
                    let Some(target) = placement::pick(&candidates, &excluded).cloned() else {
                        return Err(Error::new(
                            ErrorKind::NotFound,
                            if excluded.is_empty() {
                                format!("no ready Object Server serves Spot type {stable_type:?}")
                            } else {
                                format!("every Object Server of Spot type {stable_type:?} refused Spot {id}")
                            },
                        ));
                    };
                    let attempt = if target.local {
                        self.try_create(&id, &key, &request, stable_type).await
                    } else {
                        self.create_remote(
                            &target.rid,
                            &id,
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
                        // Refused before it reserved anything: another candidate may try.
                        Err(e)
                            if !target.local
                                && (e.is(ErrorKind::Unavailable) || e.is(ErrorKind::NotFound)) =>
                        {
                            tracing::debug!(spot = %id, target = %target.rid, error = %e, "placement target refused; trying another");
                            excluded.push(target.rid);
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }

    /// A Creating record whose owner lease is gone was left by a crash mid-creation: it
    /// is cancelled, exactly that record (seed 002 §4.3). A live owner is still working:
    /// the caller waits.
    async fn settle_creating(&self, key: &ObjectKey, creating: &Versioned) -> Result<()> {
        let owner = creating.record.fence.lease();
        let alive = self
            .store
            .read_lease(&owner.owner)
            .await
            .map_err(store_error)?
            .is_some_and(|grant| grant.token == owner);
        if !alive {
            tracing::info!(spot = %key.id, generation = creating.record.fence.object_generation, "cancelling a creation its crashed owner left behind");
            self.authority
                .delete(key, creating)
                .await
                .map_err(store_error)?;
        }
        Ok(())
    }

    /// One creation attempt: reserve, stage, commit. `None` when another attempt won the
    /// reservation (the caller reads again).
    async fn try_create(
        &self,
        id: &SpotId,
        key: &ObjectKey,
        request: &Bytes,
        stable_type: &str,
    ) -> Result<Option<SpotCreation>> {
        let spot_type = &self.spot_type(stable_type)?;
        let Some(node) = self.node.upgrade() else {
            return Err(Error::new(ErrorKind::ShuttingDown, "the node is stopping"));
        };
        let Some(token) = self.lease.admitting_token() else {
            return Err(Error::new(
                ErrorKind::Unavailable,
                "this node's owner lease admits no new work (the Location Store is unreachable)",
            ));
        };
        let _permit = self
            .activations
            .acquire()
            .await
            .map_err(|_| Error::new(ErrorKind::ShuttingDown, "the node is stopping"))?;
        let draft = Draft {
            shape: ObjectShape::UserSpot,
            stable_type: spot_type.stable_type.as_str().to_string(),
            owner: token,
            route: self.route.clone(),
            membership: None,
            creation_request: request.to_vec(),
        };
        let won = match self
            .authority
            .reserve(key, draft)
            .await
            .map_err(store_error)?
        {
            Reserved::Won(won) => won,
            Reserved::Exists(_) => return Ok(None),
        };
        let ctx = SpotContext {
            node: node.clone(),
            id: id.clone(),
            generation: won.record.fence.object_generation,
            packet: None,
            deadline: None,
            metadata: Metadata::new(),
            timers: None,
        };
        let (instance, decision) = match LiveSpot::stage(spot_type, &ctx, request.clone()).await {
            Ok(staged) => staged,
            Err(e) => {
                self.abort(key, &won).await;
                return Err(e);
            }
        };
        match decision {
            CreateDecision::Reject(reply) => {
                self.abort(key, &won).await;
                Ok(Some(SpotCreation::Rejected(reply)))
            }
            CreateDecision::Accept(reply) => {
                let ready = match self.authority.commit(key, &won).await {
                    Ok(Fenced::Done(ready)) => ready,
                    Ok(Fenced::Moved) => {
                        return Err(Error::new(
                            ErrorKind::Unavailable,
                            format!("Spot {id}'s reservation was cancelled before it committed"),
                        ))
                    }
                    Err(e) => {
                        self.abort(key, &won).await;
                        return Err(store_error(e));
                    }
                };
                let live = LiveSpot::start(
                    id.clone(),
                    spot_type.clone(),
                    ready.clone(),
                    instance,
                    SpotHost {
                        node: self.node.clone(),
                        lease: self.lease.clone(),
                        tracker: self.tracker.clone(),
                        cancel: self.cancel.child_token(),
                    },
                );
                self.live().insert(id.clone(), live);
                Ok(Some(SpotCreation::Created(spot_ref(id, &ready), reply)))
            }
        }
    }

    async fn abort(&self, key: &ObjectKey, won: &Versioned) {
        if let Err(e) = self.authority.delete(key, won).await {
            tracing::warn!(spot = %key.id, error = %e, "could not abort a reservation; the next operation on the ID cancels it");
        }
    }

    /// The nodes a new Spot of `stable_type` may be placed on, with their weights.
    fn candidates(&self, stable_type: &str) -> Vec<placement::Candidate> {
        let mut candidates = Vec::new();
        let serves_here = StableType::new(stable_type)
            .ok()
            .is_some_and(|t| self.types.contains_key(&t));
        if serves_here && self.lease.admitting_token().is_some() {
            candidates.push(placement::Candidate {
                rid: self.route.rid.clone(),
                weight: self.placement_weight,
                local: true,
            });
        }
        let Some(node) = self.node.upgrade() else {
            return candidates;
        };
        let members = node.discovery().map(|d| d.status().members);
        for member in members.unwrap_or_default() {
            if member.rid == self.route.rid
                || !member.spot_types.iter().any(|t| t == stable_type)
                || node.peers().link(&member.rid).is_none()
            {
                continue;
            }
            candidates.push(placement::Candidate {
                rid: member.rid,
                weight: member.placement_weight,
                local: false,
            });
        }
        candidates
    }

    /// Asks node `rid` (chosen by placement) to create the Spot. `None` when another
    /// attempt holds the ID: the caller reads the authority again.
    async fn create_remote(
        &self,
        rid: &str,
        id: &SpotId,
        stable_type: &str,
        request: &Bytes,
        must_be_new: bool,
        deadline: Instant,
    ) -> Result<Option<SpotCreation>> {
        let Some(node) = self.node.upgrade() else {
            return Err(Error::new(ErrorKind::ShuttingDown, "the node is stopping"));
        };
        let calls = node.calls();
        let settings = node.settings();
        let admit_by = deadline.min(Instant::now() + settings.send_timeout);
        let link = calls.peer(rid, admit_by).await?;
        let metadata = Metadata::new();
        let outbound = OutboundCall {
            command: Command::SpotCreate,
            target: id.as_str(),
            packet: stable_type,
            fence: None,
            metadata: &metadata,
            payload: CreateRequest {
                request: request.to_vec(),
                must_be_new,
            }
            .encode()?,
        };
        let timeout = deadline.saturating_duration_since(Instant::now());
        let reply = calls
            .request(&link, &outbound, deadline, timeout, admit_by)
            .await?;
        Ok(match CreateReply::decode(&reply)? {
            CreateReply::Created { generation, reply } => Some(SpotCreation::Created(
                SpotRef {
                    id: id.clone(),
                    generation,
                    mesh_name: self.route.mesh_name.clone(),
                    rid: rid.to_string(),
                },
                Bytes::from(reply),
            )),
            CreateReply::Rejected { reply } => Some(SpotCreation::Rejected(Bytes::from(reply))),
            CreateReply::Lost => None,
        })
    }

    /// The Spot's current Ready incarnation, if any.
    pub(crate) async fn find(&self, id: &SpotId) -> Result<Option<SpotRef>> {
        let current = self
            .authority
            .read(&ObjectKey::from(id))
            .await
            .map_err(store_error)?;
        Ok(current
            .filter(|v| v.record.state == AuthorityState::Ready)
            .map(|v| spot_ref(id, &v)))
    }

    /// Closes exactly the incarnation `spot` names. `false` when it is gone already.
    pub(crate) async fn close(&self, spot: &SpotRef) -> Result<bool> {
        let key = ObjectKey::from(&spot.id);
        let Some(current) = self.authority.read(&key).await.map_err(store_error)? else {
            return Ok(false);
        };
        if current.record.fence.object_generation != spot.generation {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "Spot {} is generation {}, not {}",
                    spot.id, current.record.fence.object_generation, spot.generation
                ),
            ));
        }
        if current.record.route.rid != self.route.rid {
            return self.close_remote(&current, spot).await;
        }
        let Some(live) = self.live().get(&spot.id).cloned() else {
            return Err(Error::new(
                ErrorKind::Unavailable,
                format!(
                    "Spot {} is owned by this node's previous lifecycle",
                    spot.id
                ),
            ));
        };
        let closing = match current.record.state {
            AuthorityState::Ready => match self
                .authority
                .begin_close(&key, &current)
                .await
                .map_err(store_error)?
            {
                Fenced::Done(closing) => closing,
                Fenced::Moved => return Ok(false),
            },
            AuthorityState::Closing => current,
            AuthorityState::Creating => return Ok(false),
        };
        live.set_authority(closing.clone());
        live.seal();
        let (done, closed) = oneshot::channel();
        let close = SpotJob::Close {
            reason: ClosingReason::ExplicitClose,
            done,
        };
        if live.try_deliver(close, 0).is_ok() {
            let _ = closed.await;
        }
        self.live().remove(&spot.id);
        self.cache.saw_authority(&key, &closing.record.fence);
        match self
            .authority
            .delete(&key, &closing)
            .await
            .map_err(store_error)?
        {
            Fenced::Done(()) | Fenced::Moved => Ok(true),
        }
    }

    /// Closes a Spot through its owner (command 48), with the owner fence of the
    /// authority just read.
    async fn close_remote(&self, current: &Versioned, spot: &SpotRef) -> Result<bool> {
        let Some(node) = self.node.upgrade() else {
            return Err(Error::new(ErrorKind::ShuttingDown, "the node is stopping"));
        };
        let settings = node.settings();
        let deadline = Instant::now() + settings.request_timeout;
        let admit_by = deadline.min(Instant::now() + settings.send_timeout);
        let calls = node.calls();
        let link = calls
            .peer(&current.record.route.rid, admit_by)
            .await
            .map_err(|e| {
                Error::new(
                    ErrorKind::Unavailable,
                    format!("the owner of Spot {} is not reachable: {e}", spot.id),
                )
            })?;
        let metadata = Metadata::new();
        let outbound = OutboundCall {
            command: Command::SpotClose,
            target: spot.id.as_str(),
            packet: "close",
            fence: Some(RouteFence {
                owner_generation: current.record.fence.owner_generation,
                lease_generation: current.record.fence.lease_generation,
            }),
            metadata: &metadata,
            payload: encode_generation(spot.generation),
        };
        let timeout = deadline.saturating_duration_since(Instant::now());
        let reply = calls
            .request(&link, &outbound, deadline, timeout, admit_by)
            .await?;
        crate::wire::cbor_decode(&reply)
    }

    /// Where messages for `id` go now: the cache, or one authority read.
    pub(crate) async fn resolve(&self, id: &SpotId) -> Resolution {
        let key = ObjectKey::from(id);
        let now = Instant::now();
        if let Some(route) = self.cache.get(&key, now) {
            return Resolution::Ready(route);
        }
        let read = self.authority.read(&key).await;
        let failing = read.is_err();
        if self
            .store_failing
            .swap(failing, std::sync::atomic::Ordering::Relaxed)
            && !failing
        {
            // What was confirmed before the outage may have changed during it.
            self.cache.store_recovered();
        }
        let current = match read {
            Ok(Some(current)) => current,
            Ok(None) => return Resolution::Missing,
            Err(e) => return Resolution::StoreFailure(e),
        };
        if current.record.state != AuthorityState::Ready {
            return Resolution::Unavailable(format!("Spot {id} is {:?}", current.record.state));
        }
        let route = Arc::new(ReadyRoute {
            key: key.clone(),
            shape: current.record.shape,
            fence: current.record.fence.clone(),
            owner: current.record.route.clone(),
            version: current.version.clone(),
        });
        let bound = self.route_bound(&route, now);
        match bound {
            Some(not_after) => {
                self.cache.insert(route.clone(), now, not_after);
                Resolution::Ready(route)
            }
            None => Resolution::Unavailable(format!(
                "the owner of Spot {id} ({}) is gone",
                route.owner.rid
            )),
        }
    }

    /// How long a route may be used: until this node's own admission deadline for a
    /// route to itself; `None` when the route's owner is this node's previous lifecycle or
    /// a peer connected under another lifecycle.
    fn route_bound(&self, route: &ReadyRoute, now: Instant) -> Option<Instant> {
        let far = now + self.max_age;
        if route.owner.rid == self.route.rid {
            if route.owner.node_generation != self.route.node_generation {
                return None;
            }
            let status = self.lease.status();
            let ours = status
                .token
                .as_ref()
                .is_some_and(|t| route.fence.held_by(t));
            return ours.then_some(status.admission_deadline?);
        }
        let node = self.node.upgrade()?;
        match node.peers().identity(&route.owner.rid) {
            Some((_, generation)) if generation != route.owner.node_generation => None,
            _ => Some(far),
        }
    }

    /// Sends or requests a packet to a Spot by its ID only.
    pub(crate) async fn call(&self, call: SpotCall<'_>) -> Result<Bytes> {
        let deadline = Instant::now() + call.timeout;
        let id = call.id;
        let route = match self.resolve(id).await {
            Resolution::Ready(route) => route,
            Resolution::Missing => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("there is no Spot {id}"),
                ))
            }
            Resolution::Unavailable(why) => return Err(Error::new(ErrorKind::Unavailable, why)),
            Resolution::StoreFailure(e) => {
                return Err(Error::new(
                    ErrorKind::Unavailable,
                    format!("the Location Store could not say where Spot {id} is: {e}"),
                ))
            }
        };
        let fence = RouteFence {
            owner_generation: route.fence.owner_generation,
            lease_generation: route.fence.lease_generation,
        };
        let result = if route.owner.rid == self.route.rid {
            self.call_local(call, fence, deadline).await
        } else {
            self.call_remote(&route, call, fence, deadline).await
        };
        if let Err(e) = &result {
            if e.is(ErrorKind::Unavailable) {
                self.cache.stale(&route);
            }
        }
        result
    }

    async fn call_local(
        &self,
        call: SpotCall<'_>,
        fence: RouteFence,
        deadline: Instant,
    ) -> Result<Bytes> {
        let id = call.id.clone();
        let request = call.kind == PacketKind::Request;
        let (tx, rx) = if request {
            let (tx, rx) = oneshot::channel();
            (Some(ReplyTo::Local(tx)), Some(rx))
        } else {
            (None, None)
        };
        let Prepared { live, job, bytes } = self
            .prepare(Admission {
                id: call.id,
                packet: call.packet,
                payload: call.payload,
                metadata: call.metadata.clone(),
                kind: call.kind,
                fence,
                deadline: Some(deadline),
                reply: tx,
            })
            .map_err(|refusal| refusal.error)?;
        // A local send waits for room up to the send timeout; a request does not.
        let send_by = (!request).then(|| Instant::now() + call.send_timeout);
        let delivered = match send_by {
            Some(by) => live.deliver_by(job, bytes, by).await,
            None => live.try_deliver(job, bytes),
        };
        if let Err((refused, job)) = delivered {
            drop(job);
            return Err(match refused {
                Refused::Full(_) if send_by.is_some() => Error::new(
                    ErrorKind::DeadlineExceeded,
                    format!("Spot {id}'s queue stayed full for the send timeout"),
                ),
                Refused::Full(_) => Error::new(
                    ErrorKind::CapacityExceeded,
                    format!("Spot {id}'s queue is full"),
                ),
                Refused::Sealed | Refused::Closed => {
                    Error::new(ErrorKind::Unavailable, format!("Spot {id} is closing"))
                }
            });
        }
        match rx {
            Some(rx) => tokio::time::timeout_at(deadline, rx)
                .await
                .map_err(|_| {
                    Error::new(
                        ErrorKind::DeadlineExceeded,
                        format!("Spot {id} did not answer in time"),
                    )
                })?
                .unwrap_or_else(|_| {
                    Err(Error::new(
                        ErrorKind::Unavailable,
                        format!("Spot {id} stopped"),
                    ))
                }),
            None => Ok(Bytes::new()),
        }
    }

    /// Checks the fence and the handler, and builds the job for a Spot this node owns.
    /// On refusal the reply capability comes back with the error, so the caller answers
    /// with the real reason.
    #[allow(clippy::result_large_err)]
    fn prepare(&self, admission: Admission<'_>) -> std::result::Result<Prepared, Refusal> {
        let Admission {
            id,
            packet,
            payload,
            metadata,
            kind,
            fence,
            deadline,
            reply,
        } = admission;
        let checked = self.check_admission(id, packet, kind, fence);
        let (live, handler) = match checked {
            Ok(checked) => checked,
            Err(error) => return Err(Refusal { error, reply }),
        };
        let bytes = payload.len();
        let job = SpotJob::Message {
            handler,
            packet: Arc::from(packet),
            payload,
            metadata,
            deadline,
            reply,
        };
        Ok(Prepared { live, job, bytes })
    }

    /// The owned Spot `id` and the handler position of `packet`, when the fence holds.
    fn check_admission(
        &self,
        id: &SpotId,
        packet: &str,
        kind: PacketKind,
        fence: RouteFence,
    ) -> Result<(Arc<LiveSpot>, usize)> {
        let stale = || {
            Error::new(
                ErrorKind::Unavailable,
                format!("this node does not own Spot {id} (stale route)"),
            )
        };
        let live = self.live().get(id).cloned().ok_or_else(stale)?;
        let token = self.lease.admitting_token().ok_or_else(|| {
            Error::new(
                ErrorKind::Unavailable,
                "the owner's lease admits no new work",
            )
        })?;
        if !live.admits(&fence, &token) {
            return Err(stale());
        }
        let handler = live.spot_type.handler(packet, kind).ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "Spot type {} has no {kind:?} handler for {packet:?}",
                    live.spot_type.stable_type
                ),
            )
        })?;
        Ok((live, handler))
    }

    async fn call_remote(
        &self,
        route: &ReadyRoute,
        call: SpotCall<'_>,
        fence: RouteFence,
        deadline: Instant,
    ) -> Result<Bytes> {
        let Some(node) = self.node.upgrade() else {
            return Err(Error::new(ErrorKind::ShuttingDown, "the node is stopping"));
        };
        let calls = node.calls();
        let admit_by = deadline.min(Instant::now() + call.send_timeout);
        let link = calls.peer(&route.owner.rid, admit_by).await.map_err(|e| {
            Error::new(
                ErrorKind::Unavailable,
                format!("the owner of Spot {} is not reachable: {e}", route.key.id),
            )
        })?;
        if node
            .peers()
            .identity(&route.owner.rid)
            .is_some_and(|(_, generation)| generation != route.owner.node_generation)
        {
            return Err(Error::new(
                ErrorKind::Unavailable,
                format!("the owner of Spot {} restarted", route.key.id),
            ));
        }
        let request = call.kind == PacketKind::Request;
        let outbound = OutboundCall {
            command: if request {
                Command::SpotRequest
            } else {
                Command::SpotSend
            },
            target: &route.key.id,
            packet: call.packet,
            fence: Some(fence),
            metadata: call.metadata,
            payload: call.payload,
        };
        if request {
            let timeout = deadline.saturating_duration_since(Instant::now());
            calls
                .request(&link, &outbound, deadline, timeout, admit_by)
                .await
        } else {
            calls
                .send(&link, &outbound, admit_by)
                .await
                .map(|()| Bytes::new())
        }
    }

    /// An admitted object command from a peer.
    fn deliver_inbound(self: &Arc<Self>, call: InboundCall) {
        match call.message().command {
            Command::SpotCreate => self.create_inbound(call),
            Command::SpotClose => self.close_inbound(call),
            _ => self.message_inbound(call),
        }
    }

    /// A creation placed on this node: one attempt, whose outcome goes back.
    fn create_inbound(self: &Arc<Self>, call: InboundCall) {
        let message = call.message();
        let parsed = SpotId::chosen(message.head.target.as_str())
            .map_err(|e| Error::InvalidArgument(e.to_string()))
            .and_then(|id| Ok((id, CreateRequest::decode(&message.payload)?)));
        let (id, request) = match parsed {
            Ok(parsed) => parsed,
            Err(e) => return call.answer(Err(e)),
        };
        let stable_type = message.head.packet.as_str().to_string();
        let server = self.clone();
        call.run(move |_node, _message| {
            Box::pin(async move {
                let key = ObjectKey::from(&id);
                let request = Bytes::from(request.request);
                let outcome = server.try_create(&id, &key, &request, &stable_type).await?;
                match outcome {
                    Some(SpotCreation::Created(spot, reply)) => CreateReply::Created {
                        generation: spot.generation,
                        reply: reply.to_vec(),
                    },
                    Some(SpotCreation::Rejected(reply)) => CreateReply::Rejected {
                        reply: reply.to_vec(),
                    },
                    Some(SpotCreation::Existing(_)) | None => CreateReply::Lost,
                }
                .encode()
            })
        });
    }

    /// A close of a Spot this node owns, fenced like a message.
    fn close_inbound(self: &Arc<Self>, call: InboundCall) {
        let message = call.message();
        let (Some(fence), Ok(id)) = (
            message.head.fence,
            SpotId::new(message.head.target.as_str()),
        ) else {
            return call.answer(Err(Error::new(
                ErrorKind::ProtocolError,
                "a Spot close without a valid ID and fence",
            )));
        };
        let generation = match decode_generation(&message.payload) {
            Ok(generation) => generation,
            Err(e) => return call.answer(Err(e)),
        };
        let owned = self.live().get(&id).cloned();
        let token = self.lease.admitting_token();
        let admitted = match (owned, token) {
            (Some(live), Some(token)) => live.admits(&fence, &token),
            _ => false,
        };
        if !admitted {
            return call.answer(Err(Error::new(
                ErrorKind::Unavailable,
                format!("this node does not own Spot {id} (stale route)"),
            )));
        }
        let server = self.clone();
        call.run(move |_node, _message| {
            Box::pin(async move {
                let spot = SpotRef {
                    id,
                    generation,
                    mesh_name: server.route.mesh_name.clone(),
                    rid: server.route.rid.clone(),
                };
                crate::wire::cbor_encode(&server.close(&spot).await?)
            })
        });
    }

    /// A message for a Spot this node owns.
    fn message_inbound(&self, call: InboundCall) {
        let message = call.message();
        let (Some(fence), Ok(id)) = (
            message.head.fence,
            SpotId::new(message.head.target.as_str()),
        ) else {
            return call.answer(Err(Error::new(
                ErrorKind::ProtocolError,
                "a Spot command without a valid ID and fence",
            )));
        };
        let kind = if call.is_request() {
            PacketKind::Request
        } else {
            PacketKind::Send
        };
        let (packet, payload, metadata, deadline) = (
            message.head.packet.clone(),
            message.payload.clone(),
            message.metadata.clone(),
            call.deadline(),
        );
        // The Spot's own task answers: no task waits here for the turn.
        let pending = call.into_pending();
        let prepared = self.prepare(Admission {
            id: &id,
            packet: packet.as_str(),
            payload,
            metadata,
            kind,
            fence,
            deadline,
            reply: Some(ReplyTo::Remote(pending)),
        });
        let Prepared { live, job, bytes } = match prepared {
            Ok(prepared) => prepared,
            Err(Refusal { error, reply }) => {
                if let Some(reply) = reply {
                    reply.send(Err(error));
                }
                return;
            }
        };
        // Read path: never wait for room. A full remote queue is Unavailable to the caller
        // (digest §3.3), which is what a refused job answers.
        if let Err((refused, job)) = live.try_deliver(job, bytes) {
            job.refuse(Error::new(
                ErrorKind::Unavailable,
                match refused {
                    Refused::Full(_) => format!("Spot {id}'s queue is full"),
                    Refused::Sealed | Refused::Closed => format!("Spot {id} is closing"),
                },
            ));
        }
    }

    /// The Spots this node owns now.
    pub(crate) fn owned(&self) -> usize {
        self.live().len()
    }
}

/// The inbound route of Spot commands, held weakly so the node's dispatcher does not keep
/// the object layer alive after shutdown.
struct SpotRoute(Weak<ObjectServer>);

impl InboundRoute for SpotRoute {
    fn deliver(&self, call: InboundCall) {
        match self.0.upgrade() {
            Some(server) => server.deliver_inbound(call),
            None => call.answer(Err(Error::new(
                ErrorKind::ShuttingDown,
                "the node is stopping",
            ))),
        }
    }
}

#[async_trait]
impl Subsystem for ObjectServer {
    fn name(&self) -> &'static str {
        "objects"
    }

    async fn drain(&self, _grace: Duration) {}

    async fn stop(&self, _crashed: bool) {
        self.cancel.cancel();
        self.tracker.close();
        self.tracker.wait().await;
        self.live().clear();
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}
