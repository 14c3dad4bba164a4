//! The ports the subsystems above the handler layer plug into a [`Handle`](super::Handle)
//! through: each is the whole surface a handle uses of that subsystem, in bytes (the
//! handle encodes and decodes), so the handle reaches them by a typed `Arc` and never by a
//! lookup.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::fanout::PublisherStatus;
use crate::address::{Location, ObjectKey, ObjectKind, Outcome};
use crate::call::BoxFuture;
use crate::call::PacketKind;
use crate::mesh::MeshNode;
use crate::wire::{Metadata, Payload};
use crate::Result;

/// One message to a Spot or Actor by ID, as the caller made it: what the handle hands the
/// object layer, and what that layer's direct path carries to the owner.
pub(crate) struct ObjectMessage<'a> {
    pub(crate) key: Cow<'a, ObjectKey>,
    pub(crate) packet: &'a str,
    pub(crate) payload: Payload,
    pub(crate) metadata: Metadata,
    pub(crate) kind: PacketKind,
    /// The whole call's budget: resolve, queue, handler and reply.
    pub(crate) timeout: Duration,
    /// How long the send path may wait for room.
    pub(crate) send_timeout: Duration,
    /// Instance intent: a Missing Spot ID is activated as this Instance Spot type.
    pub(crate) intent: Option<crate::address::StableType>,
}

impl ObjectMessage<'_> {
    /// The message as a call that borrows its key: its payload, metadata and intent move
    /// into the call, and the key stays here for what the caller does after it.
    pub(crate) fn lend(&mut self) -> ObjectMessage<'_> {
        ObjectMessage {
            key: Cow::Borrowed(&*self.key),
            packet: self.packet,
            payload: std::mem::take(&mut self.payload),
            metadata: std::mem::take(&mut self.metadata),
            kind: self.kind,
            timeout: self.timeout,
            send_timeout: self.send_timeout,
            intent: self.intent.take(),
        }
    }
}

/// How a call to a Spot or Actor went on its way.
pub(crate) enum Started<'a> {
    /// Finished without waiting: its turn ran on the caller's task, or it was refused.
    Done(Result<Payload>),
    /// It goes on in this future (a store read, a remote owner, a queue, a wait for room).
    Running(BoxFuture<'a, Result<Payload>>),
}

/// The object layer, as a handle uses it.
pub(crate) trait ObjectPort: Send + Sync + 'static {
    /// Starts `message` on its way to its object, whose reply (empty for a send) is the
    /// result. Called from the caller's poll, with its task's budget spent already.
    fn start_object_call<'a>(&'a self, message: ObjectMessage<'a>) -> Started<'a>;

    /// RouteCacheMaxAge and MessageFollowDuration now.
    fn timing(&self) -> (Duration, Duration);

    /// Changes either or both (see `Runtime::set_route_cache_max_age`).
    fn set_timing(&self, max_age: Option<Duration>, follow: Option<Duration>) -> Result<()>;

    /// The one Instance Spot type the mesh serves, for an intent call that names none.
    fn sole_instance_type(&self) -> Result<crate::address::StableType>;

    /// Publishes one Logical Multicast event (see [`Multicast::publish`](super::Multicast::publish)).
    #[allow(clippy::too_many_arguments)]
    fn publish<'a>(
        &'a self,
        channel: &'a str,
        topic: &'a str,
        packet: &'a str,
        payload: Bytes,
        metadata: crate::wire::Metadata,
        send_timeout: Duration,
    ) -> BoxFuture<'a, Result<()>>;

    /// Creates (or with `must_be_new` false, finds or creates) the object `key`.
    fn create_object<'a>(
        self: Arc<Self>,
        key: ObjectKey,
        stable_type: &'a str,
        request: Bytes,
        timeout: Duration,
        must_be_new: bool,
    ) -> BoxFuture<'a, Result<Outcome>>;

    /// The object's current Ready incarnation, if any.
    fn find_object<'a>(
        self: Arc<Self>,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Location>>>;

    /// Closes or destroys exactly the incarnation `generation`; `false` when it is gone.
    fn close_object<'a>(
        self: Arc<Self>,
        key: &'a ObjectKey,
        generation: u64,
    ) -> BoxFuture<'a, Result<bool>>;

    /// The RIDs of the nodes a new `stable_type` of `kind` may be placed on now, sorted.
    fn placement_nodes(&self, kind: ObjectKind, stable_type: &str) -> Vec<String>;

    /// Waits until at least `nodes` nodes may take a new `stable_type` of `kind`, woken by
    /// the events that change it; `DeadlineExceeded` after `timeout`, naming what is missing.
    fn wait_placement<'a>(
        self: Arc<Self>,
        kind: ObjectKind,
        stable_type: &'a str,
        nodes: usize,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<()>>;

    /// Pushes a packet from the Actor `key`, incarnation `generation`, to the session
    /// bound to it.
    fn push_to_session<'a>(
        self: Arc<Self>,
        key: ObjectKey,
        generation: u64,
        codec: u8,
        packet: &'a str,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<()>>;

    /// Moves the object `key`, which this node owns, live.
    fn relocate_object<'a>(
        self: Arc<Self>,
        key: &'a ObjectKey,
        to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Location>>;
}

/// The fanout roles of a process, as a handle uses them.
pub(crate) trait FanoutPort: Send + Sync + 'static {
    /// Queues one event on this process's publisher of `channel`.
    fn publish<'a>(
        &'a self,
        channel: &'a str,
        topic: Bytes,
        packet: &'static str,
        metadata: &'a Metadata,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<()>>;

    /// Where subscribers reach this process's publisher of `channel`.
    fn endpoint(&self, channel: &str) -> Option<String>;

    /// Subscriber copies the publisher of `channel` dropped at its high-water mark.
    fn dropped(&self, channel: &str) -> Result<u64>;

    /// The publishers this process's subscriber of `channel` follows.
    fn publishers(&self, channel: &str) -> Result<Vec<PublisherStatus>>;

    /// How many of them are ready, as it changes.
    fn ready_publishers(&self, channel: &str) -> Result<tokio::sync::watch::Receiver<usize>>;
}

/// The ClientServer roles of a process, as a handle uses them: the node of each role.
pub(crate) trait ClientServerPort: Send + Sync + 'static {
    /// The Client role's node of `channel`.
    fn client(&self, channel: &str) -> Option<Arc<MeshNode>>;

    /// The Server role's node of `channel`.
    fn server(&self, channel: &str) -> Option<Arc<MeshNode>>;
}
