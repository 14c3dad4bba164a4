//! [`Actors`]: creating, finding, destroying, moving and messaging Actors by ID.

use super::by_id::{AddressedKind, ById};
use super::call_builder::{Call, OneWay, Reply};
use super::Handle;
use crate::address::{ActorCreation, ActorKind, ActorRef, ObjectKey, Outcome};
use crate::wire::{Message, Request};
use crate::{Error, ErrorKind, Result};

/// The Actor side of a handle, from [`Handle::actors`] (a
/// `Runtime` dereferences to its handle).
#[derive(Clone, Copy)]
pub struct Actors<'a> {
    handle: &'a Handle,
}

impl<'a> Actors<'a> {
    pub(crate) fn new(handle: &'a Handle) -> Self {
        Actors { handle }
    }

    fn by_id(self) -> ById<'a, ActorKind> {
        ById::new(self.handle)
    }

    async fn create_as(
        self,
        id: &str,
        stable_type: &str,
        must_be_new: bool,
    ) -> Result<ActorCreation> {
        let id = ActorKind::parse(id)?;
        let timeout = self.handle.node().settings().request_timeout;
        let outcome = self
            .handle
            .objects()?
            .clone()
            .create_object(
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

    /// Waits until at least `nodes` nodes can take a new Actor of `stable_type` (this one
    /// included when it serves the type): as [`Spots::ready`](crate::Spots::ready), and
    /// each node's Entry Spot is claimed. Fails `DeadlineExceeded` after the runtime's
    /// request timeout, saying what is missing.
    pub async fn ready(self, stable_type: &str, nodes: usize) -> Result<()> {
        self.by_id().ready(stable_type, nodes).await
    }

    /// The RIDs of the nodes a new Actor of `stable_type` may be placed on now, sorted.
    pub fn ready_nodes(self, stable_type: &str) -> Result<Vec<String>> {
        self.by_id().ready_nodes(stable_type)
    }

    /// The current incarnation of Actor `id`, if it is Ready.
    pub async fn find(self, id: &str) -> Result<Option<ActorRef>> {
        self.by_id().find(id).await
    }

    /// Destroys exactly the incarnation `actor` names: its messages stop, `on_closing`
    /// runs with [`ClosingReason::Destroyed`](crate::object::ClosingReason::Destroyed),
    /// its authority is released. `false` when it was gone already; another incarnation of
    /// the ID is `InvalidOperation`.
    pub async fn destroy(self, actor: &ActorRef) -> Result<bool> {
        self.by_id().close(actor).await
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
        self.by_id().relocate(id, to).await
    }

    /// A request to Actor `id` (default timeout: the runtime's request timeout). Only the
    /// ID is given: the owner is found through the route cache or the Location Store.
    pub fn request<R: Request>(self, id: &str, request: &R) -> Call<'a, Reply<R::Reply>> {
        self.by_id().request(id, request)
    }

    /// A one-way send to Actor `id`: complete once queued for the owner (waiting up to the
    /// call's timeout, by default the send timeout, for room).
    pub fn send<M: Message>(self, id: &str, message: &M) -> Call<'a, OneWay> {
        self.by_id().send(id, message)
    }
}
