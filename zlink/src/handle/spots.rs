//! [`Spots`]: creating, finding, closing, moving and messaging Spots by ID.

use bytes::Bytes;

use super::by_id::ById;
use super::call_builder::{Call, OneWay, Reply};
use super::Handle;
use crate::address::{uuid_v4, ObjectKey, Outcome, SpotCreation, SpotId, SpotKind, SpotRef};
use crate::wire::{Message, Request};
use crate::{Error, Result};

/// The Spot side of a handle, from [`Handle::spots`] (a `Runtime` dereferences to its handle).
#[derive(Clone, Copy)]
pub struct Spots<'a> {
    handle: &'a Handle,
}

fn chosen(id: &str) -> Result<SpotId> {
    SpotId::chosen(id).map_err(|e| Error::InvalidArgument(e.to_string()))
}

fn creation(id: SpotId, outcome: Outcome) -> SpotCreation {
    match outcome {
        Outcome::Existing(at) => SpotCreation::Existing(SpotRef::at(id, at)),
        Outcome::Created(at, reply) => SpotCreation::Created(SpotRef::at(id, at), reply),
        Outcome::Rejected(reply) => SpotCreation::Rejected(reply),
    }
}

impl<'a> Spots<'a> {
    pub(crate) fn new(handle: &'a Handle) -> Self {
        Spots { handle }
    }

    fn by_id(self) -> ById<'a, SpotKind> {
        ById::new(self.handle)
    }

    async fn create_as(
        self,
        id: SpotId,
        stable_type: &str,
        request: Bytes,
        must_be_new: bool,
    ) -> Result<SpotCreation> {
        let timeout = self.handle.node().settings().request_timeout;
        let key = ObjectKey::from(&id);
        let outcome = self
            .handle
            .objects()?
            .clone()
            .create_object(key, stable_type, request, timeout, must_be_new)
            .await?;
        Ok(creation(id, outcome))
    }

    /// Returns Spot `id` if it exists, or creates it as `stable_type` with `request` for
    /// its `on_create`. Of any number of racing calls exactly one creates it; the others
    /// get [`SpotCreation::Existing`]. A Spot of another type is `TypeMismatch`.
    pub async fn get_or_create(
        self,
        id: &str,
        stable_type: &str,
        request: impl Into<Bytes>,
    ) -> Result<SpotCreation> {
        self.create_as(chosen(id)?, stable_type, request.into(), false)
            .await
    }

    /// Creates a new Spot of `stable_type` under a fresh ID (a lowercase UUID v4).
    pub async fn create(
        self,
        stable_type: &str,
        request: impl Into<Bytes>,
    ) -> Result<SpotCreation> {
        let id = chosen(&uuid_v4())?;
        self.create_as(id, stable_type, request.into(), true).await
    }

    /// Waits until at least `nodes` nodes can take a new Spot of `stable_type` (this one
    /// included when it serves the type): each serves it, is not draining, holds its owner
    /// lease, and (another node) is a known member with a ready connection. Woken by the
    /// events that change it, not by polling. Fails `DeadlineExceeded` after the runtime's
    /// request timeout, saying what is missing.
    ///
    /// ```no_run
    /// # async fn run(rt: zlink::Runtime) -> zlink::Result<()> {
    /// rt.spots().ready("tally", 2).await?;
    /// let created = rt.spots().get_or_create("tally-1", "tally", zlink::Bytes::new()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn ready(self, stable_type: &str, nodes: usize) -> Result<()> {
        self.by_id().ready(stable_type, nodes).await
    }

    /// The RIDs of the nodes a new Spot of `stable_type` may be placed on now, sorted.
    pub fn ready_nodes(self, stable_type: &str) -> Result<Vec<String>> {
        self.by_id().ready_nodes(stable_type)
    }

    /// The current incarnation of Spot `id`, if it is Ready.
    pub async fn find(self, id: &str) -> Result<Option<SpotRef>> {
        self.by_id().find(id).await
    }

    /// Closes exactly the incarnation `spot` names: `on_closing` runs, its messages stop,
    /// its authority is released. `false` when it was gone already; another incarnation
    /// of the ID is `InvalidOperation`.
    pub async fn close(self, spot: &SpotRef) -> Result<bool> {
        self.by_id().close(spot).await
    }

    /// Moves Spot `id`, which runs on this node, live to node `to` (a RID), or with
    /// `None` to the node placement picks among the others serving its type. Its queued
    /// messages and timers move with it, and (`relocation = preserve`) its state; the
    /// instance left behind hears `on_closing` with
    /// [`ClosingReason::RelocationOut`](crate::object::ClosingReason::RelocationOut).
    ///
    /// A `SpotWide` Spot moves with every member Actor it has when it is sealed, as one
    /// unit: if any of them may not move (`Rejected`), or the target cannot take one
    /// (`NotFound`, `CapacityExceeded`, ...), none moves and all run on here. A
    /// `PerActor` Spot moves its shell, then each member as its own move (a member that
    /// cannot follow stays, still a member). See
    /// [`Actors::relocate`](crate::Actors::relocate) for the rest.
    pub async fn relocate(self, id: &str, to: Option<&str>) -> Result<SpotRef> {
        self.by_id().relocate(id, to).await
    }

    /// A request to Spot `id` (default timeout: the runtime's request timeout). Only the
    /// ID is given: the owner is found through the route cache or the Location Store.
    pub fn request<R: Request>(self, id: &str, request: &R) -> Call<'a, Reply<R::Reply>> {
        self.by_id().request(id, request)
    }

    /// A one-way send to Spot `id`: complete once queued for the owner (waiting up to the
    /// call's timeout, by default the send timeout, for room).
    pub fn send<M: Message>(self, id: &str, message: &M) -> Call<'a, OneWay> {
        self.by_id().send(id, message)
    }
}
