//! What a handler can see about the message it is handling.

use tokio::time::Instant;

use crate::host::Runtime;
use crate::wire::Metadata;

/// The context of one handler call.
#[derive(Clone)]
pub struct HandlerContext {
    pub(crate) runtime: Runtime,
    pub(crate) channel: Option<String>,
    pub(crate) source_rid: Option<String>,
    pub(crate) metadata: Metadata,
    pub(crate) deadline: Option<Instant>,
}

impl HandlerContext {
    /// The runtime, for starting further calls from the handler.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The ChannelName for channel calls; `None` for node-direct calls.
    pub fn channel(&self) -> Option<&str> {
        self.channel.as_deref()
    }

    /// The sender's RID, for node-direct calls only (channel handlers never see it).
    pub fn source_rid(&self) -> Option<&str> {
        self.source_rid.as_deref()
    }

    /// The message's metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// When the caller stops waiting for a reply (requests only).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
}
