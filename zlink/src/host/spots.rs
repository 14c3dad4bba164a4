//! [`Spots`]: the runtime's handle for Spots — creating, finding, closing, and messaging
//! them by ID.

use std::sync::Arc;

use bytes::Bytes;

use super::Runtime;
use crate::call::CallOptions;
use crate::handler::PacketKind;
use crate::object::{ObjectServer, SpotCall, SpotCreation, SpotId, SpotRef};
use crate::wire::{Message, Request};
use crate::{Error, ErrorKind, Result};

/// The Spot side of a runtime, from [`Runtime::spots`].
#[derive(Clone, Copy)]
pub struct Spots<'a> {
    runtime: &'a Runtime,
}

fn chosen(id: &str) -> Result<SpotId> {
    SpotId::chosen(id).map_err(|e| Error::InvalidArgument(e.to_string()))
}

fn addressed(id: &str) -> Result<SpotId> {
    SpotId::new(id).map_err(|e| Error::InvalidArgument(e.to_string()))
}

impl<'a> Spots<'a> {
    pub(crate) fn new(runtime: &'a Runtime) -> Self {
        Spots { runtime }
    }

    fn server(self) -> Result<Arc<ObjectServer>> {
        self.runtime
            .node
            .subsystem::<ObjectServer>()
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NotConfigured,
                    "Spots need a Location Store on this node (location_store)",
                )
            })
    }

    /// Returns Spot `id` if it exists, or creates it as `stable_type` with `request` for
    /// its `on_create`. Of any number of racing calls exactly one creates it; the others
    /// get [`SpotCreation::Existing`]. A Spot of another type is `TypeMismatch`.
    pub async fn get_or_create(
        self,
        id: &str,
        stable_type: &str,
        request: impl Into<Bytes>,
    ) -> Result<SpotCreation> {
        let id = chosen(id)?;
        let timeout = self.runtime.node.settings().request_timeout;
        self.server()?
            .create(id, stable_type, request.into(), timeout, false)
            .await
    }

    /// Creates a new Spot of `stable_type` under a fresh ID (a lowercase UUID v4).
    pub async fn create(
        self,
        stable_type: &str,
        request: impl Into<Bytes>,
    ) -> Result<SpotCreation> {
        let id = chosen(&crate::object::id_uuid_v4())?;
        let timeout = self.runtime.node.settings().request_timeout;
        self.server()?
            .create(id, stable_type, request.into(), timeout, true)
            .await
    }

    /// The current incarnation of Spot `id`, if it is Ready.
    pub async fn find(self, id: &str) -> Result<Option<SpotRef>> {
        self.server()?.find(&addressed(id)?).await
    }

    /// Closes exactly the incarnation `spot` names: `on_closing` runs, its messages stop,
    /// its authority is released. `false` when it was gone already; another incarnation
    /// of the ID is `InvalidOperation`.
    pub async fn close(self, spot: &SpotRef) -> Result<bool> {
        self.server()?.close(spot).await
    }

    /// Sends `request` to Spot `id` and waits for its reply (default timeout: the
    /// runtime's request timeout). Only the ID is given: the owner is found through the
    /// route cache or the Location Store.
    pub async fn request<R: Request>(self, id: &str, request: &R) -> Result<R::Reply> {
        self.request_with(id, request, CallOptions::default()).await
    }

    /// [`request`](Self::request) with a timeout and metadata.
    pub async fn request_with<R: Request>(
        self,
        id: &str,
        request: &R,
        options: CallOptions,
    ) -> Result<R::Reply> {
        let settings = self.runtime.node.settings();
        let timeout = options.timeout.unwrap_or(settings.request_timeout);
        let reply = self
            .server()?
            .call(SpotCall {
                id: &addressed(id)?,
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

    /// Sends `message` to Spot `id` one way: complete once queued for the owner (waiting
    /// up to the send timeout for room).
    pub async fn send<M: Message>(self, id: &str, message: &M) -> Result<()> {
        self.send_with(id, message, CallOptions::default()).await
    }

    /// [`send`](Self::send) with metadata and a timeout for the queue admission (default:
    /// the send timeout).
    pub async fn send_with<M: Message>(
        self,
        id: &str,
        message: &M,
        options: CallOptions,
    ) -> Result<()> {
        let settings = self.runtime.node.settings();
        let send_timeout = options.timeout.unwrap_or(settings.send_timeout);
        self.server()?
            .call(SpotCall {
                id: &addressed(id)?,
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
}
