//! [`Actors`]: the runtime's handle for Actors — creating, finding, destroying, and
//! messaging them by ID.

use super::{objects, Runtime};
use crate::call::CallOptions;
use crate::object::{ActorCreation, ActorId, ActorRef, ObjectKey, Outcome};
use crate::wire::{Message, Request};
use crate::{Error, ErrorKind, Result};

/// The Actor side of a runtime, from [`Runtime::actors`].
#[derive(Clone, Copy)]
pub struct Actors<'a> {
    runtime: &'a Runtime,
}

fn actor_id(id: &str) -> Result<ActorId> {
    ActorId::new(id).map_err(|e| Error::InvalidArgument(e.to_string()))
}

impl<'a> Actors<'a> {
    pub(crate) fn new(runtime: &'a Runtime) -> Self {
        Actors { runtime }
    }

    async fn create_as(
        self,
        id: &str,
        stable_type: &str,
        must_be_new: bool,
    ) -> Result<ActorCreation> {
        let id = actor_id(id)?;
        let timeout = self.runtime.node.settings().request_timeout;
        let outcome = objects::server(self.runtime)?
            .create(
                ObjectKey::from(&id),
                stable_type,
                Default::default(),
                timeout,
                must_be_new,
            )
            .await?;
        match outcome {
            Outcome::Existing(at) => Ok(ActorCreation::Existing(ActorRef::at(id, at))),
            Outcome::Created(at, _) => Ok(ActorCreation::Created(ActorRef::at(id, at))),
            Outcome::Rejected(_) => Err(Error::new(
                ErrorKind::InternalFailure,
                format!("the creation of Actor {id} was declined"),
            )),
        }
    }

    /// Creates Actor `id` of `stable_type` in the Entry Spot of a node serving the type
    /// (chosen by placement). An existing Actor is `AlreadyExists`; of racing calls
    /// exactly one creates it.
    pub async fn create(self, id: &str, stable_type: &str) -> Result<ActorRef> {
        match self.create_as(id, stable_type, true).await? {
            ActorCreation::Created(actor) | ActorCreation::Existing(actor) => Ok(actor),
        }
    }

    /// Returns Actor `id` if it exists, or creates it as `stable_type`. Of any number of
    /// racing calls exactly one creates it; the others get [`ActorCreation::Existing`]. An
    /// Actor of another type is `TypeMismatch`.
    pub async fn get_or_create(self, id: &str, stable_type: &str) -> Result<ActorCreation> {
        self.create_as(id, stable_type, false).await
    }

    /// The current incarnation of Actor `id`, if it is Ready.
    pub async fn find(self, id: &str) -> Result<Option<ActorRef>> {
        let id = actor_id(id)?;
        let found = objects::server(self.runtime)?
            .find(&ObjectKey::from(&id))
            .await?;
        Ok(found.map(|at| ActorRef::at(id, at)))
    }

    /// Destroys exactly the incarnation `actor` names: its messages stop, `on_closing`
    /// runs with [`ClosingReason::Destroyed`](crate::object::ClosingReason::Destroyed),
    /// its authority is released. `false` when it was gone already; another incarnation of
    /// the ID is `InvalidOperation`.
    pub async fn destroy(self, actor: &ActorRef) -> Result<bool> {
        objects::server(self.runtime)?
            .close(&ObjectKey::from(&actor.id), actor.generation)
            .await
    }

    /// Moves Actor `id`, which runs on this node in its Entry Spot, live to node `to` (a
    /// RID), or with `None` to the node placement picks among the others serving its type.
    /// Its queued messages and timers move with it, and (`relocation = preserve`) its
    /// state; what still arrives here follows it for MessageFollowDuration. Returns the
    /// Actor where it runs now (same ObjectGeneration).
    ///
    /// Refused before anything stops: a type declared `relocation = disable` is
    /// `Rejected`; an Actor this node does not run is `NotFound`. A failure before the
    /// target confirmed it can take the Actor leaves it running here with its queue in
    /// order. Past that point the move is not undone: a target that fails to commit leaves
    /// the Actor `Unavailable`.
    pub async fn relocate(self, id: &str, to: Option<&str>) -> Result<ActorRef> {
        let id = actor_id(id)?;
        let at = objects::server(self.runtime)?
            .relocate(&ObjectKey::from(&id), to)
            .await?;
        Ok(ActorRef::at(id, at))
    }

    /// Sends `request` to Actor `id` and waits for its reply (default timeout: the
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
        let key = ObjectKey::from(&actor_id(id)?);
        objects::request(self.runtime, &key, request, options).await
    }

    /// Sends `message` to Actor `id` one way: complete once queued for the owner (waiting
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
        let key = ObjectKey::from(&actor_id(id)?);
        objects::send(self.runtime, &key, message, options).await
    }
}
