//! The handler-group trait the runtime dispatches to.

use bytes::Bytes;

use super::HandlerContext;
pub use crate::call::{BoxFuture, PacketKind};
use crate::Result;

/// A group of handlers serving one ChannelName (or node-direct messages).
///
/// The runtime calls [`HandlerGroup::handle`] once per message, possibly concurrently, so a
/// group is `Send + Sync` and keeps its state behind its own synchronisation. Write one with
/// the `#[zlink::channel(server)]` macro, with [`Handlers`](super::Handlers) (closures), or
/// by hand:
///
/// ```
/// use zlink::{BoxFuture, Bytes, HandlerContext, HandlerGroup, PacketKind};
///
/// struct Uppercase;
///
/// impl HandlerGroup for Uppercase {
///     fn packets(&self) -> Vec<(String, PacketKind)> {
///         vec![("Shout".to_string(), PacketKind::Request)]
///     }
///
///     fn handle<'a>(
///         &'a self,
///         _ctx: HandlerContext,
///         _handler: usize,
///         payload: Bytes,
///     ) -> BoxFuture<'a, zlink::Result<Bytes>> {
///         Box::pin(async move { Ok(Bytes::from(payload.to_ascii_uppercase())) })
///     }
/// }
/// ```
pub trait HandlerGroup: Send + Sync + 'static {
    /// The packet names this group handles and how. Checked once at registration: a name
    /// listed twice is a configuration error. A message's handler is named by its position
    /// in this list.
    fn packets(&self) -> Vec<(String, PacketKind)>;

    /// Handles one message for the handler at position `handler` of
    /// [`packets`](HandlerGroup::packets) (the runtime has already matched the packet name
    /// and kind, so a group does no second lookup; [`HandlerContext::packet`] names it).
    /// For a request, `Ok(bytes)` is the encoded reply payload; an `Err` becomes an error
    /// reply. For a send, the returned bytes are ignored.
    fn handle<'a>(
        &'a self,
        ctx: HandlerContext,
        handler: usize,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<Bytes>>;
}

/// A handler group that serves a ChannelName chosen by its author, so it can be registered
/// with [`RuntimeBuilder::serve`](crate::RuntimeBuilder::serve). The
/// `#[zlink::channel(server, name = "...")]` macro implements it.
pub trait DefaultChannel {
    /// The default ChannelName (1..=255 bytes).
    const CHANNEL: &'static str;
}
