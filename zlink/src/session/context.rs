//! What a session's callbacks and handlers get: the session's identity, a way to write
//! to its client, and the node's [`Handle`] to call Spots, Actors and channels.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::packet::{WireKind, WirePacket};
use super::peer::{SessionId, SessionPeer};
use crate::handler::Handle;
use crate::{Error, Message, Metadata, Result};

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

    /// Closes the session (reason `ServerDrain`): what is queued for the client is
    /// written, then the closing notice; `on_disconnected` follows.
    pub fn close(&self) {
        self.peer.close(
            super::CloseReason::ServerDrain,
            "the application closed the session",
        );
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
