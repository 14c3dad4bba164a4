//! The handler-group trait the runtime dispatches to.

use async_trait::async_trait;
use bytes::Bytes;

use super::HandlerContext;
use crate::Result;

/// Whether a packet is handled as a request (with a reply) or a one-way send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketKind {
    /// Request: the handler's result is sent back as the reply.
    Request,
    /// One-way send: the handler's result is only logged.
    Send,
}

/// A group of handlers serving one ChannelName (or node-direct messages).
///
/// The runtime calls [`HandlerGroup::handle`] once per message, possibly concurrently, so a
/// group is `Send + Sync` and keeps its state behind its own synchronisation. Implement it
/// with [`Handlers`](super::Handlers) (closures), by hand, or with the
/// `#[zlink::channel(server)]` macro.
#[async_trait]
pub trait HandlerGroup: Send + Sync + 'static {
    /// The packet names this group handles and how. Checked once at registration: a name
    /// listed twice is a configuration error.
    fn packets(&self) -> Vec<(String, PacketKind)>;

    /// Handles one message. For a request, `Ok(bytes)` is the encoded reply payload; an
    /// `Err` becomes an error reply. For a send, the returned bytes are ignored.
    async fn handle(&self, ctx: HandlerContext, packet: &str, payload: Bytes) -> Result<Bytes>;
}
