//! What [`Spots`](super::Spots) and [`Actors`](super::Actors) share: finding, closing,
//! moving and messaging one object by its ID, generic over the kind.

use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::Arc;

use super::call_builder::{Call, OneWay, Outgoing, Reply, Target};
use super::Handle;
use crate::address::{
    ActorId, ActorKind, Kind, ObjectKey, ObjectKind, ObjectRef, SpotId, SpotKind,
};
use crate::wire::{Message, Request};
use crate::{Error, Result};

/// A kind whose IDs a caller gives as text.
pub(crate) trait AddressedKind: Kind {
    /// Parses an ID of this kind, as an argument error when it is not one.
    fn parse(id: &str) -> Result<Self::Id>;
    /// The object key of `id`.
    fn key(id: &Self::Id) -> ObjectKey;
    /// The namespace of its keys.
    fn key_kind() -> ObjectKind;
}

impl AddressedKind for SpotKind {
    fn parse(id: &str) -> Result<SpotId> {
        SpotId::new(id).map_err(|e| Error::InvalidArgument(e.to_string()))
    }
    fn key(id: &SpotId) -> ObjectKey {
        ObjectKey::from(id)
    }
    fn key_kind() -> ObjectKind {
        ObjectKind::Spot
    }
}

impl AddressedKind for ActorKind {
    fn parse(id: &str) -> Result<ActorId> {
        ActorId::new(id).map_err(|e| Error::InvalidArgument(e.to_string()))
    }
    fn key(id: &ActorId) -> ObjectKey {
        ObjectKey::from(id)
    }
    fn key_kind() -> ObjectKind {
        ObjectKind::Actor
    }
}

/// The address a generated Spot or Actor client calls: its ID as given, checked once when
/// the client is made (a malformed ID fails each call with the error a by-ID call gives).
#[doc(hidden)]
#[derive(Clone)]
pub struct ClientTarget {
    id: Arc<str>,
    kind: ObjectKind,
    key: Option<ObjectKey>,
    /// An Instance Spot client's type: every call carries Instance intent for it.
    instance: Option<Arc<str>>,
}

impl ClientTarget {
    /// The target of a Spot client.
    pub fn spot(id: String) -> Self {
        Self::of::<SpotKind>(id)
    }

    /// The target of an Instance Spot client: every call carries Instance intent for
    /// `stable_type`.
    pub fn instance_spot(id: String, stable_type: &str) -> Self {
        ClientTarget {
            instance: Some(Arc::from(stable_type)),
            ..Self::of::<SpotKind>(id)
        }
    }

    /// The target of an Actor client.
    pub fn actor(id: String) -> Self {
        Self::of::<ActorKind>(id)
    }

    fn of<K: AddressedKind>(id: String) -> Self {
        let key = K::parse(&id).ok().map(|parsed| K::key(&parsed));
        ClientTarget {
            id: Arc::from(id),
            kind: K::key_kind(),
            key,
            instance: None,
        }
    }

    /// A request to the target through `handle`, with the message by reference or by
    /// value (what a generated client's request method returns).
    pub fn request<'a, R: Request>(
        &'a self,
        handle: &'a Handle,
        request: impl Outgoing<R>,
    ) -> Call<'a, Reply<R::Reply>> {
        self.with_intent(Call::of_payload::<R>(
            handle,
            self.target(),
            request.into_payload(),
        ))
    }

    /// A one-way send to the target through `handle` (what a generated client's send
    /// method returns).
    pub fn send<'a, M: Message>(
        &'a self,
        handle: &'a Handle,
        message: impl Outgoing<M>,
    ) -> Call<'a, OneWay> {
        self.with_intent(Call::of_payload::<M>(
            handle,
            self.target(),
            message.into_payload(),
        ))
    }

    fn with_intent<'a, E: super::Expect>(&self, call: Call<'a, E>) -> Call<'a, E> {
        match &self.instance {
            Some(stable_type) => call.instance(stable_type),
            None => call,
        }
    }

    /// The ID as the client was given it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The target of one call: the client's checked key itself, not a copy of it.
    fn target(&self) -> Result<Target<'_>> {
        match (&self.key, self.kind) {
            (Some(key), _) => Ok(Target::Object(Cow::Borrowed(key))),
            (None, ObjectKind::Spot) => ById::<SpotKind>::target(&self.id),
            (None, ObjectKind::Actor) => ById::<ActorKind>::target(&self.id),
        }
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
        K::parse(id).map(|id| Target::Object(Cow::Owned(K::key(&id))))
    }

    pub(super) async fn ready(self, stable_type: &str, nodes: usize) -> Result<()> {
        let timeout = self.handle.node().settings().request_timeout;
        let objects = self.handle.objects()?.clone();
        objects
            .wait_placement(K::key_kind(), stable_type, nodes, timeout)
            .await
    }

    pub(super) fn ready_nodes(self, stable_type: &str) -> Result<Vec<String>> {
        Ok(self
            .handle
            .objects()?
            .placement_nodes(K::key_kind(), stable_type))
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_target_checks_its_id_once_and_a_malformed_one_fails_each_call() {
        let room = ClientTarget::spot("room-7".into());
        assert_eq!(room.id(), "room-7");
        match room.target() {
            Ok(Target::Object(key)) => {
                assert_eq!((key.kind, &*key.id), (ObjectKind::Spot, "room-7"))
            }
            _ => panic!("a Spot key"),
        }
        match ClientTarget::actor("room-7".into()).target() {
            Ok(Target::Object(key)) => assert_eq!(key.kind, ObjectKind::Actor),
            _ => panic!("an Actor key"),
        }
        let empty = ClientTarget::actor(String::new());
        for _ in 0..2 {
            match empty.target() {
                Err(e) => assert!(matches!(e, Error::InvalidArgument(_)), "{e}"),
                Ok(_) => panic!("an empty ID is refused"),
            }
        }
    }
}
