//! [`Spots`]: the runtime's handle for Spots — creating, finding, closing, and messaging
//! them by ID.

use bytes::Bytes;

use super::{objects, Runtime};
use crate::call::CallOptions;
use crate::object::{ObjectKey, Outcome, SpotCreation, SpotId, SpotRef};
use crate::wire::{Message, Request};
use crate::{Error, Result};

/// The Spot side of a runtime, from [`Runtime::spots`].
#[derive(Clone, Copy)]
pub struct Spots<'a> {
    runtime: &'a Runtime,
}

fn chosen(id: &str) -> Result<SpotId> {
    SpotId::chosen(id).map_err(|e| Error::InvalidArgument(e.to_string()))
}

fn addressed(id: &str) -> Result<ObjectKey> {
    SpotId::new(id)
        .map(|id| ObjectKey::from(&id))
        .map_err(|e| Error::InvalidArgument(e.to_string()))
}

fn creation(id: SpotId, outcome: Outcome) -> SpotCreation {
    match outcome {
        Outcome::Existing(at) => SpotCreation::Existing(SpotRef::at(id, at)),
        Outcome::Created(at, reply) => SpotCreation::Created(SpotRef::at(id, at), reply),
        Outcome::Rejected(reply) => SpotCreation::Rejected(reply),
    }
}

impl<'a> Spots<'a> {
    pub(crate) fn new(runtime: &'a Runtime) -> Self {
        Spots { runtime }
    }

    async fn create_as(
        self,
        id: SpotId,
        stable_type: &str,
        request: Bytes,
        must_be_new: bool,
    ) -> Result<SpotCreation> {
        let timeout = self.runtime.node.settings().request_timeout;
        let key = ObjectKey::from(&id);
        let outcome = objects::server(self.runtime)?
            .create(key, stable_type, request, timeout, must_be_new)
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
        let id = chosen(&crate::object::id_uuid_v4())?;
        self.create_as(id, stable_type, request.into(), true).await
    }

    /// The current incarnation of Spot `id`, if it is Ready.
    pub async fn find(self, id: &str) -> Result<Option<SpotRef>> {
        let spot = SpotId::new(id).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        let found = objects::server(self.runtime)?
            .find(&ObjectKey::from(&spot))
            .await?;
        Ok(found.map(|at| SpotRef::at(spot, at)))
    }

    /// Closes exactly the incarnation `spot` names: `on_closing` runs, its messages stop,
    /// its authority is released. `false` when it was gone already; another incarnation
    /// of the ID is `InvalidOperation`.
    pub async fn close(self, spot: &SpotRef) -> Result<bool> {
        objects::server(self.runtime)?
            .close(&ObjectKey::from(&spot.id), spot.generation)
            .await
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
        let spot = SpotId::new(id).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        let at = objects::server(self.runtime)?
            .relocate(&ObjectKey::from(&spot), to)
            .await?;
        Ok(SpotRef::at(spot, at))
    }

    /// Sends `request` to Spot `id` and waits for its reply (default timeout: the
    /// runtime's request timeout). Only the ID is given: the owner is found through the
    /// route cache or the Location Store.
    pub async fn request<R: Request>(self, id: &str, request: &R) -> Result<R::Reply> {
        self.request_with(id, request, CallOptions::default()).await
    }

    /// [`request`](Self::request) with a timeout and metadata.
    pub async fn request_with<R: Request>(
        self,
        id: &str,
        request: &R,
        options: CallOptions,
    ) -> Result<R::Reply> {
        objects::request(self.runtime, &addressed(id)?, request, options).await
    }

    /// Sends `message` to Spot `id` one way: complete once queued for the owner (waiting
    /// up to the send timeout for room).
    pub async fn send<M: Message>(self, id: &str, message: &M) -> Result<()> {
        self.send_with(id, message, CallOptions::default()).await
    }

    /// [`send`](Self::send) with metadata and a timeout for the queue admission (default:
    /// the send timeout).
    pub async fn send_with<M: Message>(
        self,
        id: &str,
        message: &M,
        options: CallOptions,
    ) -> Result<()> {
        objects::send(self.runtime, &addressed(id)?, message, options).await
    }
}
