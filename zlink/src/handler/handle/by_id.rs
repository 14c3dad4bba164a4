//! What [`Spots`](super::Spots) and [`Actors`](super::Actors) share: finding, closing,
//! moving and messaging one object by its ID, generic over the kind.

use std::marker::PhantomData;

use super::call::{Call, OneWay, Outgoing, Reply, Target};
use super::Handle;
use crate::address::{ActorId, ActorKind, Kind, ObjectKey, ObjectRef, SpotId, SpotKind};
use crate::wire::{Message, Request};
use crate::{Error, Result};

/// A kind whose IDs a caller gives as text.
pub(crate) trait AddressedKind: Kind {
    /// Parses an ID of this kind, as an argument error when it is not one.
    fn parse(id: &str) -> Result<Self::Id>;
    /// The object key of `id`.
    fn key(id: &Self::Id) -> ObjectKey;
}

impl AddressedKind for SpotKind {
    fn parse(id: &str) -> Result<SpotId> {
        SpotId::new(id).map_err(|e| Error::InvalidArgument(e.to_string()))
    }
    fn key(id: &SpotId) -> ObjectKey {
        ObjectKey::from(id)
    }
}

impl AddressedKind for ActorKind {
    fn parse(id: &str) -> Result<ActorId> {
        ActorId::new(id).map_err(|e| Error::InvalidArgument(e.to_string()))
    }
    fn key(id: &ActorId) -> ObjectKey {
        ObjectKey::from(id)
    }
}

/// The by-ID operations of one kind on one handle.
pub(super) struct ById<'a, K> {
    handle: &'a Handle,
    kind: PhantomData<fn() -> K>,
}

impl<'a, K: AddressedKind> ById<'a, K> {
    pub(super) fn new(handle: &'a Handle) -> Self {
        ById {
            handle,
            kind: PhantomData,
        }
    }

    fn target(id: &str) -> Result<Target<'a>> {
        K::parse(id).map(|id| Target::Object(K::key(&id)))
    }

    pub(super) async fn find(self, id: &str) -> Result<Option<ObjectRef<K>>> {
        let id = K::parse(id)?;
        let key = K::key(&id);
        let found = self.handle.objects()?.clone().find_object(&key).await?;
        Ok(found.map(|at| ObjectRef::at(id, at)))
    }

    pub(super) async fn close(self, object: &ObjectRef<K>) -> Result<bool> {
        let key = K::key(&object.id);
        let objects = self.handle.objects()?.clone();
        objects.close_object(&key, object.generation).await
    }

    pub(super) async fn relocate(self, id: &str, to: Option<&str>) -> Result<ObjectRef<K>> {
        let id = K::parse(id)?;
        let key = K::key(&id);
        let objects = self.handle.objects()?.clone();
        let at = objects.relocate_object(&key, to).await?;
        Ok(ObjectRef::at(id, at))
    }

    pub(super) fn request<R: Request>(self, id: &str, request: &R) -> Call<'a, Reply<R::Reply>> {
        Call::new(self.handle, Self::target(id), request)
    }

    pub(super) fn send<M: Message>(self, id: &str, message: &M) -> Call<'a, OneWay> {
        Call::new(self.handle, Self::target(id), message)
    }

    pub(super) fn request_outgoing<R: Request>(
        self,
        id: &str,
        request: impl Outgoing<R>,
    ) -> Call<'a, Reply<R::Reply>> {
        Call::of_payload::<R>(self.handle, Self::target(id), request.into_payload())
    }

    pub(super) fn send_outgoing<M: Message>(
        self,
        id: &str,
        message: impl Outgoing<M>,
    ) -> Call<'a, OneWay> {
        Call::of_payload::<M>(self.handle, Self::target(id), message.into_payload())
    }
}
