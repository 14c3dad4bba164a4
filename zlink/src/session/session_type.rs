//! The session trait: what one client connection runs. `#[zlink::session]` writes it from
//! an impl block; writing it by hand is equally valid.

use crate::address::ActorRef;
use crate::call::BoxFuture;
use crate::call::PacketKind;
use crate::{Error, ErrorKind, Result};

use super::context::SessionContext;
use super::incoming::Packet;
use super::packet::CloseReason;

/// One client connection's application state and handlers. A listener makes one value per
/// connection and runs it on the session's serial lane: its callbacks and handlers never
/// run concurrently, and run in the order the packets arrived.
///
/// ```
/// use zlink::session::{Packet, Session, SessionContext};
/// use zlink::{BoxFuture, PacketKind};
///
/// #[derive(Default)]
/// struct Echo;
///
/// impl Session for Echo {
///     fn packets() -> Vec<(&'static str, PacketKind)> {
///         Vec::new()
///     }
///
///     fn handle<'a>(
///         &'a mut self,
///         _ctx: &'a SessionContext,
///         _handler: usize,
///         _packet: Packet,
///     ) -> BoxFuture<'a, zlink::Result<()>> {
///         Box::pin(async { Ok(()) })
///     }
///
///     fn on_packet<'a>(
///         &'a mut self,
///         _ctx: &'a SessionContext,
///         mut packet: Packet,
///     ) -> BoxFuture<'a, zlink::Result<()>> {
///         Box::pin(async move {
///             match packet.take_reply() {
///                 Some(token) => token.reply_bytes(packet.codec(), packet.payload().clone()).await,
///                 None => Ok(()),
///             }
///         })
///     }
/// }
/// ```
pub trait Session: Send + 'static {
    /// The typed handlers: packet name and kind, by position. A packet whose name is not
    /// listed goes to [`on_packet`](Session::on_packet).
    fn packets() -> Vec<(&'static str, PacketKind)>
    where
        Self: Sized;

    /// Handles `packet` with the handler at position `handler` of
    /// [`packets`](Session::packets). For a request, answer through
    /// [`Packet::take_reply`]; an `Err` returned with the token still in hand is answered
    /// as an Error packet.
    fn handle<'a>(
        &'a mut self,
        ctx: &'a SessionContext,
        handler: usize,
        packet: Packet,
    ) -> BoxFuture<'a, Result<()>>;

    /// The connection is open, before its first packet is handled. An `Err` closes it.
    fn on_connected<'a>(&'a mut self, ctx: &'a SessionContext) -> BoxFuture<'a, Result<()>> {
        let _ = ctx;
        Box::pin(async { Ok(()) })
    }

    /// A packet no typed handler takes (relay it to a bound Actor, or answer it). By
    /// default: `NotFound`.
    fn on_packet<'a>(
        &'a mut self,
        ctx: &'a SessionContext,
        packet: Packet,
    ) -> BoxFuture<'a, Result<()>> {
        let _ = ctx;
        Box::pin(async move {
            Err(Error::new(
                ErrorKind::NotFound,
                format!("this session has no handler for packet {:?}", packet.name()),
            ))
        })
    }

    /// The Actor `actor` this session was bound to was bound by another session: this
    /// session no longer relays to it or hears its pushes, takes no more packets, and
    /// closes 100 ms after this returns (tell the client here; do not close).
    fn on_actor_binding_replaced<'a>(
        &'a mut self,
        ctx: &'a SessionContext,
        actor: ActorRef,
    ) -> BoxFuture<'a, ()> {
        let _ = (ctx, actor);
        Box::pin(async {})
    }

    /// The session ended, for `reason`: its last callback.
    fn on_disconnected<'a>(
        &'a mut self,
        ctx: &'a SessionContext,
        reason: CloseReason,
    ) -> BoxFuture<'a, ()> {
        let _ = (ctx, reason);
        Box::pin(async {})
    }
}

/// Makes one session per connection, and knows the handlers' names.
pub(crate) trait SessionFactory: Send + Sync + 'static {
    fn packets(&self) -> Vec<(&'static str, PacketKind)>;
    fn make(&self) -> Box<dyn DynSession>;
    fn type_name(&self) -> &'static str;
}

/// [`Session`] without the `Sized` associated function, for the lane.
pub(crate) trait DynSession: Send {
    fn handle<'a>(
        &'a mut self,
        ctx: &'a SessionContext,
        handler: usize,
        packet: Packet,
    ) -> BoxFuture<'a, Result<()>>;
    fn on_connected<'a>(&'a mut self, ctx: &'a SessionContext) -> BoxFuture<'a, Result<()>>;
    fn on_packet<'a>(
        &'a mut self,
        ctx: &'a SessionContext,
        packet: Packet,
    ) -> BoxFuture<'a, Result<()>>;
    fn on_disconnected<'a>(
        &'a mut self,
        ctx: &'a SessionContext,
        reason: CloseReason,
    ) -> BoxFuture<'a, ()>;
    fn on_actor_binding_replaced<'a>(
        &'a mut self,
        ctx: &'a SessionContext,
        actor: ActorRef,
    ) -> BoxFuture<'a, ()>;
}

impl<S: Session> DynSession for S {
    fn handle<'a>(
        &'a mut self,
        ctx: &'a SessionContext,
        handler: usize,
        packet: Packet,
    ) -> BoxFuture<'a, Result<()>> {
        Session::handle(self, ctx, handler, packet)
    }
    fn on_connected<'a>(&'a mut self, ctx: &'a SessionContext) -> BoxFuture<'a, Result<()>> {
        Session::on_connected(self, ctx)
    }
    fn on_packet<'a>(
        &'a mut self,
        ctx: &'a SessionContext,
        packet: Packet,
    ) -> BoxFuture<'a, Result<()>> {
        Session::on_packet(self, ctx, packet)
    }
    fn on_disconnected<'a>(
        &'a mut self,
        ctx: &'a SessionContext,
        reason: CloseReason,
    ) -> BoxFuture<'a, ()> {
        Session::on_disconnected(self, ctx, reason)
    }
    fn on_actor_binding_replaced<'a>(
        &'a mut self,
        ctx: &'a SessionContext,
        actor: ActorRef,
    ) -> BoxFuture<'a, ()> {
        Session::on_actor_binding_replaced(self, ctx, actor)
    }
}

/// The factory of a closure that makes sessions of type `S`.
pub(crate) struct MakeSession<S, F> {
    pub(crate) make: F,
    pub(crate) _session: std::marker::PhantomData<fn() -> S>,
}

impl<S: Session, F: Fn() -> S + Send + Sync + 'static> SessionFactory for MakeSession<S, F> {
    fn packets(&self) -> Vec<(&'static str, PacketKind)> {
        S::packets()
    }
    fn make(&self) -> Box<dyn DynSession> {
        Box::new((self.make)())
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<S>()
    }
}
