//! The object layer's one way out to other nodes. Every object command it sends (a message
//! by ID, a create, a close or destroy, a move's control records, a follow notice, a
//! message relayed after a move) is an [`ObjectCommand`], and goes out through
//! [`OwnerLink`], which holds the node weakly and answers `ShuttingDown` once it is gone.

use std::sync::{Arc, Weak};

use bytes::Bytes;
use tokio::time::Instant;

use super::authority::OwnerFence;
use crate::address::{ObjectKey, ObjectKind};
use crate::call::PacketKind;
use crate::mesh::calls::{OutboundCall, SubmittedRequest};
use crate::mesh::peer_table::PeerLink;
use crate::mesh::MeshNode;
use crate::wire::{Command, Metadata, PushTail, RouteFence, SessionTail};
use crate::{Error, ErrorKind, Result};

/// The metadata of a command that carries none.
static NO_METADATA: Metadata = Metadata::new();

/// The packet name the object layer's own control records carry.
pub(crate) const CONTROL_PACKET: &str = "zlink.relocation";

/// Marks the refusals that mean "this route is unusable" (the owner no longer owns the
/// object, or cannot be reached), in the error detail both sides of the wire read.
pub(crate) const STALE_ROUTE: &str = "(stale route)";

/// What the object layer answers once its node is stopping.
pub(crate) fn node_stopping() -> Error {
    Error::new(ErrorKind::ShuttingDown, "the node is stopping")
}

/// One object command, described by what it is; [`OwnerLink`] turns it into a wire call.
#[derive(Debug)]
pub(crate) struct ObjectCommand<'a> {
    command: Command,
    target: &'a str,
    packet: &'a str,
    fence: Option<RouteFence>,
    hops: u8,
    session: Option<SessionTail>,
    /// A bound Actor's push: its session and binding.
    push: Option<PushTail>,
    /// The operation a relay continues; `None`: the node starts a new one.
    operation: Option<u64>,
    metadata: &'a Metadata,
    payload: Bytes,
}

/// The wire form of an owner fence.
pub(crate) fn route_fence(fence: &OwnerFence) -> RouteFence {
    RouteFence {
        object_generation: fence.object_generation,
        owner_generation: fence.owner_generation,
        lease_generation: fence.lease_generation,
    }
}

impl<'a> ObjectCommand<'a> {
    /// An application message for `key` (a Spot or Actor send or request), admitted by its
    /// owner only under `fence`.
    pub(crate) fn message(
        key: &'a ObjectKey,
        kind: PacketKind,
        packet: &'a str,
        fence: RouteFence,
        metadata: &'a Metadata,
        payload: Bytes,
    ) -> Self {
        let command = match (key.kind, kind) {
            (ObjectKind::Spot, PacketKind::Request) => Command::SpotRequest,
            (ObjectKind::Spot, PacketKind::Send) => Command::SpotSend,
            (ObjectKind::Actor, PacketKind::Request) => Command::ActorRequest,
            (ObjectKind::Actor, PacketKind::Send) => Command::ActorSend,
        };
        ObjectCommand {
            command,
            target: &key.id,
            packet,
            fence: Some(fence),
            hops: 0,
            session: None,
            push: None,
            operation: None,
            metadata,
            payload,
        }
    }

    /// The message as a session relays it to its bound Actor, under `tail`.
    pub(crate) fn bound(mut self, tail: SessionTail) -> Self {
        self.session = Some(tail);
        self
    }

    /// The message as Message Follow relays it, `hops` hops from its sender, still the
    /// sender's `operation`.
    pub(crate) fn followed(mut self, hops: u8, operation: u64) -> Self {
        self.hops = hops;
        self.operation = Some(operation);
        self
    }

    /// `command` to `key`'s ID with `packet` and `payload`, unfenced and first-hand.
    fn unfenced(command: Command, key: &'a ObjectKey, packet: &'a str, payload: Bytes) -> Self {
        ObjectCommand {
            command,
            target: &key.id,
            packet,
            fence: None,
            hops: 0,
            session: None,
            push: None,
            operation: None,
            metadata: &NO_METADATA,
            payload,
        }
    }

    /// Creating `key` as `stable_type` on the node placement chose (no fence: nothing
    /// owns it yet).
    pub(crate) fn create(key: &'a ObjectKey, stable_type: &'a str, payload: Bytes) -> Self {
        let command = match key.kind {
            ObjectKind::Spot => Command::SpotCreate,
            ObjectKind::Actor => Command::ActorCreate,
        };
        Self::unfenced(command, key, stable_type, payload)
    }

    /// Activating the Instance Spot `key` of `stable_type` on the node placement picked,
    /// with `envelope` (its first message).
    pub(crate) fn activation(key: &'a ObjectKey, stable_type: &'a str, envelope: Bytes) -> Self {
        Self::unfenced(Command::InstanceSpot, key, stable_type, envelope)
    }

    /// Waits on the node whose creation of `key` (as `generation`, the 8-byte payload) is
    /// under way, until that creation ended (command 53).
    pub(crate) fn creation_settled(key: &'a ObjectKey, generation: Bytes) -> Self {
        Self::unfenced(Command::CreationSettled, key, "zlink.settled", generation)
    }

    /// Closing a Spot or destroying an Actor through its owner, under `fence`.
    pub(crate) fn close(key: &'a ObjectKey, fence: &OwnerFence, payload: Bytes) -> Self {
        let command = match key.kind {
            ObjectKind::Spot => Command::SpotClose,
            ObjectKind::Actor => Command::ActorDestroy,
        };
        Self {
            fence: Some(route_fence(fence)),
            ..Self::unfenced(command, key, "close", payload)
        }
    }

    /// A bound Actor `key`'s push of `packet` to its session, under the Actor's `fence`
    /// and the session and binding `tail` names: the payload goes as its own frame.
    pub(crate) fn push(
        key: &'a ObjectKey,
        packet: &'a str,
        fence: RouteFence,
        tail: PushTail,
        payload: Bytes,
    ) -> Self {
        ObjectCommand {
            command: Command::BoundSessionSend,
            target: &key.id,
            packet,
            fence: Some(fence),
            hops: 0,
            session: None,
            push: Some(tail),
            operation: None,
            metadata: &NO_METADATA,
            payload,
        }
    }

    /// A control record of the object layer about the object `target` (a move's restore,
    /// cutover or relay-ready, a follow notice): no fence, no metadata.
    pub(crate) fn control(command: Command, target: &'a str, payload: Bytes) -> Self {
        ObjectCommand {
            command,
            target,
            packet: CONTROL_PACKET,
            fence: None,
            hops: 0,
            session: None,
            push: None,
            operation: None,
            metadata: &NO_METADATA,
            payload,
        }
    }

    fn outbound(&self) -> OutboundCall<'_> {
        OutboundCall {
            command: self.command,
            target: self.target,
            packet: self.packet,
            fence: self.fence,
            hops: self.hops,
            session: self.session,
            push: self.push,
            operation: self.operation,
            metadata: self.metadata,
            payload: self.payload.clone(),
        }
    }
}

/// The far end of an object command, as errors name it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FarEnd<'a> {
    /// The owner of a Spot or Actor.
    Owner(&'a ObjectKey),
    /// The node a session lives on.
    SessionOwner(&'a str),
}

impl std::fmt::Display for FarEnd<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FarEnd::Owner(key) => write!(f, "the owner of {key}"),
            FarEnd::SessionOwner(rid) => write!(f, "the session owner {rid}"),
        }
    }
}

/// Where an object command goes: the node a route names, in the lifecycle it names (a
/// route never follows a node into its next lifecycle).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Destination<'a> {
    pub(crate) rid: &'a str,
    pub(crate) node_generation: u64,
    pub(crate) far: FarEnd<'a>,
    /// The refusal an unreachable (or restarted) destination's `Unavailable` carries, for a
    /// caller that acts on it (a stale route is dropped and resolved again).
    pub(crate) unreachable: Option<crate::Refusal>,
}

impl<'a> Destination<'a> {
    /// The node `rid` in lifecycle `node_generation`, as `far`.
    pub(crate) fn new(rid: &'a str, node_generation: u64, far: FarEnd<'a>) -> Self {
        Destination {
            rid,
            node_generation,
            far,
            unreachable: None,
        }
    }

    /// The same, whose unreachability is refused as `refusal`.
    pub(crate) fn refused_as(mut self, refusal: crate::Refusal) -> Self {
        self.unreachable = Some(refusal);
        self
    }
}

/// How the sender of an object command waits once the destination's link took it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Awaiting {
    /// For nothing: a one-way is done once queued.
    Nothing,
    /// For the request's one terminal result, by the deadline.
    Reply(Instant),
    /// For nothing now: the reply is waited for apart (a session's lane goes on in order).
    Submitted(Instant),
}

/// What a delivered object command gave back.
pub(crate) enum Delivered {
    /// A one-way, queued.
    Sent,
    /// A request's reply.
    Reply(Bytes),
    /// A request queued, its reply to be waited for.
    Submitted(SubmittedRequest),
}

/// The node's outbound calls, as the object layer uses them.
#[derive(Clone)]
pub(crate) struct OwnerLink {
    node: Weak<MeshNode>,
}

impl OwnerLink {
    pub(crate) fn new(node: Weak<MeshNode>) -> Self {
        OwnerLink { node }
    }

    /// The node, while it runs.
    pub(crate) fn node(&self) -> Result<Arc<MeshNode>> {
        self.node.upgrade().ok_or_else(node_stopping)
    }

    /// The admitted link to node `rid`, waiting for it until `admit_by`.
    pub(crate) async fn peer(&self, rid: &str, admit_by: Instant) -> Result<PeerLink> {
        self.node()?.calls().peer(rid, admit_by).await
    }

    /// The admitted link to node `rid` in the lifecycle `node_generation` a route names,
    /// waiting for it until `admit_by`. `Unavailable` when the node cannot be reached, or
    /// when it restarted since the route was taken: a route never follows a node into its
    /// next lifecycle. `what` names the far end in those errors ("the owner of actor/p1").
    pub(crate) async fn reach(
        &self,
        rid: &str,
        node_generation: u64,
        admit_by: Instant,
        what: impl FnOnce() -> String,
    ) -> Result<PeerLink> {
        let node = self.node()?;
        let reached = node.calls().peer(rid, admit_by).await;
        let restarted = node
            .peers()
            .identity(rid)
            .is_some_and(|(_, current)| current != node_generation);
        match reached {
            Err(e) => Err(Error::new(
                ErrorKind::Unavailable,
                format!("{} is not reachable: {e}", what()),
            )),
            Ok(_) if restarted => Err(Error::new(
                ErrorKind::Unavailable,
                format!("{} restarted since the route was taken", what()),
            )),
            Ok(link) => Ok(link),
        }
    }

    /// The one way out: `command` to `to`, queued there by `admit_by`, then waited on as
    /// `awaiting` says. Direct calls, session relays, pushes and the bindings' notices all
    /// go out here.
    pub(crate) async fn deliver(
        &self,
        to: Destination<'_>,
        command: &ObjectCommand<'_>,
        awaiting: Awaiting,
        admit_by: Instant,
    ) -> Result<Delivered> {
        let link = self.reach_destination(&to, admit_by).await?;
        match awaiting {
            Awaiting::Nothing => self
                .send(&link, command, admit_by)
                .await
                .map(|()| Delivered::Sent),
            Awaiting::Reply(deadline) => self
                .request(&link, command, deadline, admit_by)
                .await
                .map(Delivered::Reply),
            Awaiting::Submitted(deadline) => self
                .submit_request(&link, command, deadline, admit_by)
                .await
                .map(Delivered::Submitted),
        }
    }

    /// The admitted link to `to`, waiting for it until `admit_by`.
    pub(crate) async fn reach_destination(
        &self,
        to: &Destination<'_>,
        admit_by: Instant,
    ) -> Result<PeerLink> {
        let marker = match to.unreachable {
            Some(crate::Refusal::StaleRoute) => STALE_ROUTE,
            _ => "",
        };
        let reached = self
            .reach(to.rid, to.node_generation, admit_by, || {
                match marker.is_empty() {
                    true => to.far.to_string(),
                    false => format!("{} {marker}", to.far),
                }
            })
            .await;
        reached.map_err(|e| match (to.unreachable, e.is(ErrorKind::Unavailable)) {
            (Some(refusal), true) => e.with_refusal(refusal),
            _ => e,
        })
    }

    /// Sends `command` one way on `link`; done once the link's queue took it.
    pub(crate) async fn send(
        &self,
        link: &PeerLink,
        command: &ObjectCommand<'_>,
        admit_by: Instant,
    ) -> Result<()> {
        self.node()?
            .calls()
            .send(link, &command.outbound(), admit_by)
            .await
    }

    /// Sends `command` as a request on `link` and waits for its one terminal result by
    /// `deadline`.
    pub(crate) async fn request(
        &self,
        link: &PeerLink,
        command: &ObjectCommand<'_>,
        deadline: Instant,
        admit_by: Instant,
    ) -> Result<Bytes> {
        let timeout = deadline.saturating_duration_since(Instant::now());
        self.node()?
            .calls()
            .request(link, &command.outbound(), deadline, timeout, admit_by)
            .await
    }

    /// Queues `command` as a request on `link` and returns once the link took it; the
    /// reply is waited for separately.
    pub(crate) async fn submit_request(
        &self,
        link: &PeerLink,
        command: &ObjectCommand<'_>,
        deadline: Instant,
        admit_by: Instant,
    ) -> Result<SubmittedRequest> {
        let timeout = deadline.saturating_duration_since(Instant::now());
        self.node()?
            .calls()
            .submit_request(link, &command.outbound(), deadline, timeout, admit_by)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::{ActorId, SpotId};

    fn spot() -> ObjectKey {
        ObjectKey::from(&SpotId::new("room-1").expect("an ID"))
    }

    fn actor() -> ObjectKey {
        ObjectKey::from(&ActorId::new("ana").expect("an ID"))
    }

    fn fence() -> OwnerFence {
        OwnerFence {
            object_generation: 3,
            owner_generation: 4,
            owner: "node-a".into(),
            lease_generation: 5,
        }
    }

    #[test]
    fn a_message_is_the_command_of_its_kind_and_carries_its_fence() {
        let metadata = Metadata::new();
        let wire = route_fence(&fence());
        for (key, kind, command) in [
            (spot(), PacketKind::Request, Command::SpotRequest),
            (spot(), PacketKind::Send, Command::SpotSend),
            (actor(), PacketKind::Request, Command::ActorRequest),
            (actor(), PacketKind::Send, Command::ActorSend),
        ] {
            let sent = ObjectCommand::message(&key, kind, "say", wire, &metadata, Bytes::new());
            let call = sent.outbound();
            assert_eq!(call.command, command);
            assert_eq!(call.target, &*key.id);
            assert_eq!(call.fence, Some(wire));
            assert_eq!(call.hops, 0);
        }
    }

    #[test]
    fn creates_carry_no_fence_and_closes_carry_the_authority_fence() {
        let (s, a) = (spot(), actor());
        assert_eq!(
            ObjectCommand::create(&s, "room", Bytes::new())
                .outbound()
                .command,
            Command::SpotCreate
        );
        let create = ObjectCommand::create(&a, "player", Bytes::new());
        assert_eq!(
            (create.command, create.packet, create.fence),
            (Command::ActorCreate, "player", None)
        );
        let close = ObjectCommand::close(&s, &fence(), Bytes::new());
        assert_eq!(close.command, Command::SpotClose);
        assert_eq!(close.fence, Some(route_fence(&fence())));
        assert_eq!(
            ObjectCommand::close(&a, &fence(), Bytes::new()).command,
            Command::ActorDestroy
        );
    }

    #[test]
    fn control_records_and_relays_say_what_they_are() {
        let control = ObjectCommand::control(Command::MessageFollow, "room-1", Bytes::new());
        assert_eq!(
            (control.packet, control.fence, control.hops),
            (CONTROL_PACKET, None, 0)
        );
        assert!(control.metadata.is_empty());
        let key = spot();
        let metadata = Metadata::new();
        let relayed = ObjectCommand::message(
            &key,
            PacketKind::Send,
            "say",
            route_fence(&fence()),
            &metadata,
            Bytes::new(),
        )
        .followed(3, 77);
        assert_eq!(
            (relayed.command, relayed.outbound().hops),
            (Command::SpotSend, 3)
        );
    }

    #[test]
    fn a_link_whose_node_is_gone_answers_shutting_down() {
        let link = OwnerLink::new(Weak::new());
        let err = link.node().err().expect("no node");
        assert!(err.is(ErrorKind::ShuttingDown), "{err}");
    }
}
