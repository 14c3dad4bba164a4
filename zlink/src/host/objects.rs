//! What the [`Spots`](super::Spots) and [`Actors`](super::Actors) handles share: the
//! node's object layer, and direct messages by ID.

use std::sync::Arc;

use super::Runtime;
use crate::call::CallOptions;
use crate::handler::PacketKind;
use crate::object::{ObjectCall, ObjectKey, ObjectServer};
use crate::wire::{Message, Request};
use crate::{Error, ErrorKind, Result};

/// The runtime's object layer.
pub(super) fn server(runtime: &Runtime) -> Result<Arc<ObjectServer>> {
    runtime.node.subsystem::<ObjectServer>().ok_or_else(|| {
        Error::new(
            ErrorKind::NotConfigured,
            "Spots and Actors need a Location Store on this node (location_store)",
        )
    })
}

/// Sends `request` to the object `key` and waits for its reply.
pub(super) async fn request<R: Request>(
    runtime: &Runtime,
    key: &ObjectKey,
    request: &R,
    options: CallOptions,
) -> Result<R::Reply> {
    let settings = runtime.node.settings();
    let timeout = options.timeout.unwrap_or(settings.request_timeout);
    let reply = server(runtime)?
        .call(ObjectCall {
            key,
            packet: R::PACKET_NAME,
            payload: request.encode()?,
            metadata: &options.metadata,
            kind: PacketKind::Request,
            timeout,
            send_timeout: settings.send_timeout,
        })
        .await?;
    R::Reply::decode(&reply)
}

/// Sends `message` to the object `key` one way.
pub(super) async fn send<M: Message>(
    runtime: &Runtime,
    key: &ObjectKey,
    message: &M,
    options: CallOptions,
) -> Result<()> {
    let settings = runtime.node.settings();
    let send_timeout = options.timeout.unwrap_or(settings.send_timeout);
    server(runtime)?
        .call(ObjectCall {
            key,
            packet: M::PACKET_NAME,
            payload: message.encode()?,
            metadata: &options.metadata,
            kind: PacketKind::Send,
            timeout: send_timeout,
            send_timeout,
        })
        .await
        .map(|_| ())
}
