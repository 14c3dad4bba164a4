//! [`Handlers`]: a handler group built from typed closures, no macros needed.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;

use super::{BoxFuture, HandlerContext, HandlerGroup, PacketKind};
use crate::wire::{Message, Request};
use crate::{Error, Result};

type Erased = Arc<dyn Fn(HandlerContext, Bytes) -> BoxFuture<'static, Result<Bytes>> + Send + Sync>;

/// A handler group assembled from closures, one per message type.
///
/// ```
/// use zlink::Handlers;
/// # #[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
/// # #[message(reply = Pong)]
/// # struct Ping(u32);
/// # #[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
/// # struct Pong(u32);
/// let handlers = Handlers::new().on_request(|_ctx, ping: Ping| async move { Ok(Pong(ping.0)) });
/// ```
#[derive(Clone, Default)]
pub struct Handlers {
    table: Vec<(String, PacketKind, Erased)>,
}

impl Handlers {
    /// An empty group.
    pub fn new() -> Self {
        Self::default()
    }

    /// Handles requests of type `R`, replying with `R::Reply`.
    pub fn on_request<R, F, Fut>(mut self, handler: F) -> Self
    where
        R: Request,
        F: Fn(HandlerContext, R) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R::Reply>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let erased: Erased = Arc::new(move |ctx, payload: Bytes| {
            let handler = handler.clone();
            Box::pin(async move {
                let request = R::decode(&payload)?;
                let reply = handler(ctx, request).await?;
                reply.encode()
            })
        });
        self.add(R::PACKET_NAME, PacketKind::Request, erased);
        self
    }

    /// Handles one-way sends of type `M`.
    pub fn on_send<M, F, Fut>(mut self, handler: F) -> Self
    where
        M: Message,
        F: Fn(HandlerContext, M) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<()>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let erased: Erased = Arc::new(move |ctx, payload: Bytes| {
            let handler = handler.clone();
            Box::pin(async move {
                let message = M::decode(&payload)?;
                handler(ctx, message).await?;
                Ok(Bytes::new())
            })
        });
        self.add(M::PACKET_NAME, PacketKind::Send, erased);
        self
    }

    /// A name registered twice stays listed twice, so validation reports the duplicate.
    fn add(&mut self, packet: &str, kind: PacketKind, handler: Erased) {
        self.table.push((packet.to_string(), kind, handler));
    }
}

impl HandlerGroup for Handlers {
    fn packets(&self) -> Vec<(String, PacketKind)> {
        self.table
            .iter()
            .map(|(name, kind, _)| (name.clone(), *kind))
            .collect()
    }

    fn handle<'a>(
        &'a self,
        ctx: HandlerContext,
        handler: usize,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<Bytes>> {
        match self.table.get(handler) {
            Some((_, _, handler)) => handler(ctx, payload),
            None => Box::pin(std::future::ready(Err(Error::new(
                crate::ErrorKind::NotFound,
                format!("no handler at position {handler}"),
            )))),
        }
    }
}
