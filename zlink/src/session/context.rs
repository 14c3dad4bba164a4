//! What a session's callbacks and handlers get: the session's identity, a way to write
//! to its client, and the node's [`Handle`] to call Spots, Actors and channels.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::answer_order::OrderedReply;
use super::incoming::Packet;
use super::packet::{WireKind, WirePacket};
use super::peer::{SessionId, SessionPeer};
use super::session_bindings::{HeldRelay, Routing};
use crate::address::ActorRef;
use crate::call::PacketKind;
use crate::handle::Handle;
use crate::object::ObjectServer;
use crate::{Error, ErrorKind, Message, Metadata, Result};

/// The context of one session, passed to its callbacks and handlers.
pub struct SessionContext {
    pub(crate) peer: Arc<SessionPeer>,
    pub(crate) handle: Handle,
}

impl SessionContext {
    /// This session's number.
    pub fn id(&self) -> SessionId {
        self.peer.id
    }

    /// The listener that accepted it.
    pub fn listener(&self) -> &str {
        &self.peer.listener
    }

    /// The client's address.
    pub fn remote_addr(&self) -> Option<SocketAddr> {
        self.peer.remote
    }

    /// The address the client connected to.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.peer.local
    }

    /// The node: call Spots, Actors and channels from a session.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Sends `message` to the client as a Send packet (builder: [`ClientSend`]).
    pub fn send<'a, M: Message>(&'a self, message: &'a M) -> ClientSend<'a, M> {
        ClientSend {
            peer: &self.peer,
            message,
            metadata: Metadata::new(),
            timeout: None,
        }
    }

    /// Binds this session to the Actor `actor` names: the bind goes to the node the
    /// reference names (no lookup first), whose owner checks that it runs exactly that
    /// incarnation and still owns it, and registers this session as the Actor's. From then
    /// on [`relay`](Self::relay) reaches the Actor and the Actor's
    /// [`push`](crate::object::ActorContext::push) reaches this client, over that route,
    /// with no Location Store read. Binding an Actor bound to another session moves its
    /// binding here. Returns the Actor's location as bound.
    ///
    /// Errors: `NotFound` (the node runs no such Actor), `InvalidOperation` (another
    /// incarnation: take a current `ActorRef`), `Unavailable` (not its owner now, moving,
    /// or unreachable). Nothing is retried behind your back.
    pub async fn bind(&self, actor: &ActorRef) -> Result<ActorRef> {
        let objects = self.objects()?;
        let deadline = tokio::time::Instant::now() + self.handle.node().settings().request_timeout;
        let route = objects
            .bind_session(actor, self.peer.id.get(), deadline)
            .await?;
        let bound = route.actor.clone();
        self.peer.bindings.set(route);
        Ok(bound)
    }

    /// This session's binding of exactly the incarnation `actor` names, if it has one
    /// (its current location, after any moves), else a [`bind`](Self::bind). A binding of
    /// another incarnation of the same ID is not returned: that one is bound anew.
    pub async fn bind_or_get(&self, actor: &ActorRef) -> Result<ActorRef> {
        match self.find(actor.id.as_str()) {
            Some(bound) if bound.generation == actor.generation => Ok(bound),
            _ => self.bind(actor).await,
        }
    }

    /// This session's binding to the Actor `actor_id`, as it stands (its location follows
    /// the Actor's moves); `None` when this session is not bound to it. Only this session's
    /// bindings are looked at, and nothing is sent.
    pub fn find(&self, actor_id: &str) -> Option<ActorRef> {
        self.peer.bindings.get(actor_id).map(|route| route.actor)
    }

    /// Ends this session's binding to `actor` while the connection stays open: the Actor's
    /// owner drops it and the Actor's Spot hears `on_disconnect_actor`, once (the same
    /// notice a closing connection sends for each binding). Not bound: `InvalidOperation`.
    pub async fn notify_disconnected(&self, actor: &str) -> Result<()> {
        let route = self.peer.binding(actor).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidOperation,
                format!("this session is not bound to Actor {actor}"),
            )
        })?;
        if !self.peer.bindings.remove(&route) {
            return Ok(());
        }
        let deadline = tokio::time::Instant::now() + self.handle.node().settings().request_timeout;
        self.objects()?
            .disconnect_session(&route, self.peer.id.get(), deadline)
            .await
    }

    /// The Actors this session is bound to, as bound.
    pub fn bound(&self) -> Vec<ActorRef> {
        self.peer
            .bindings
            .all()
            .into_iter()
            .map(|r| r.actor)
            .collect()
    }

    /// Relays the client's `packet` to the bound Actor `actor`, as it came (its name is
    /// the Actor handler's packet name; its payload is decoded by the Actor's message
    /// type, so that type uses the client's codec, JSON or Raw). A one-way completes once
    /// the Actor's owner took it. A request is answered to the client by the Actor's
    /// reply, exactly once, and the session goes on meanwhile: packets relayed after it
    /// reach the Actor after it.
    ///
    /// Not bound to `actor`: `InvalidOperation`. A binding the owner no longer honours
    /// (rebound elsewhere, the Actor re-created or gone): the error comes back, and the
    /// application decides whether to bind again.
    pub async fn relay(&self, actor: &str, mut packet: Packet) -> Result<()> {
        // The answer's turn is taken now, in lane order, whatever becomes of the relay.
        let token = packet
            .take_reply()
            .map(|token| OrderedReply::new(token, self.peer.answer_lines.take_turn(actor)));
        let kind = if token.is_some() {
            PacketKind::Request
        } else {
            PacketKind::Send
        };
        let session_seq = self
            .peer
            .session_seq
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let mut metadata = std::mem::take(&mut packet.metadata);
        // The packet's own trace (or the flow it named) goes on to the Actor.
        let propagation = self.handle.node().settings().trace_propagation.as_deref();
        crate::wire::trace_context::stamp(&mut metadata, propagation);
        let relay = HeldRelay {
            packet: std::mem::take(&mut packet.name),
            kind,
            payload: packet.payload.clone(),
            metadata,
            session_seq,
            codec: packet.codec,
            token,
            timeout: self.handle.node().settings().request_timeout,
        };
        // While the Actor moves, its relays wait here, in order, for its new route.
        let (route, relay) = match self.peer.bindings.hold_or_route(actor, relay) {
            Routing::Held => return Ok(()),
            Routing::Send(route, relay) => (route, relay),
            Routing::NotBound(relay) => {
                let error = Error::new(
                    ErrorKind::InvalidOperation,
                    format!("this session is not bound to Actor {actor}: bind it first"),
                );
                if let Some(token) = relay.token {
                    token.answer_in_turn(relay.codec, Err(error)).await;
                    return Ok(());
                }
                return Err(error);
            }
        };
        let objects = self.objects()?;
        super::session_index::submit(&objects, &route, relay).await
    }

    fn objects(&self) -> Result<Arc<ObjectServer>> {
        self.peer
            .objects
            .as_ref()
            .and_then(|objects| objects.upgrade())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NotConfigured,
                    "this node runs no object layer (no Location Store): sessions cannot bind Actors",
                )
            })
    }

    /// Closes the session (reason `ServerDrain`): what is queued for the client is
    /// written, then the closing notice; `on_disconnected` follows.
    pub fn close(&self) {
        self.close_because("the application closed the session");
    }

    /// Closes the session as [`close`](Self::close) does, telling the client why: the
    /// closing notice's diagnostic (and a WebSocket close frame's text) is `why`, cut to
    /// its first 512 bytes at a character boundary.
    pub fn close_because(&self, why: &str) {
        self.peer.close(super::CloseReason::ServerDrain, why);
    }
}

/// A Send packet to the client; completes once the session's queue took it.
#[must_use = "a send does nothing until awaited"]
pub struct ClientSend<'a, M> {
    peer: &'a SessionPeer,
    message: &'a M,
    metadata: Metadata,
    timeout: Option<Duration>,
}

impl<M: Message> ClientSend<'_, M> {
    /// Adds a metadata entry.
    pub fn metadata(mut self, key: &str, value: &str) -> Result<Self> {
        self.metadata.insert(key, value)?;
        Ok(self)
    }

    /// Waits at most `timeout` for room in the session's queue; it can only shorten the
    /// listener's send timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Queues the packet.
    pub async fn send(self) -> Result<()> {
        let codec = super::codec_of::<M>()?;
        if M::PACKET_NAME.starts_with(super::RESERVED_PREFIX) {
            return Err(Error::InvalidArgument(format!(
                "packet name {:?} starts with the reserved {:?}",
                M::PACKET_NAME,
                super::RESERVED_PREFIX
            )));
        }
        let mut packet = WirePacket::new(
            WireKind::Send,
            codec,
            M::PACKET_NAME,
            self.message.encode()?,
        );
        packet.metadata = self.metadata;
        self.peer.send(&packet, self.timeout).await
    }
}

impl<'a, M: Message> std::future::IntoFuture for ClientSend<'a, M> {
    type Output = Result<()>;
    type IntoFuture = crate::BoxFuture<'a, Result<()>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.send())
    }
}
