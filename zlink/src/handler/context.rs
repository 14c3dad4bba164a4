//! What a handler can see about the message it is handling.

use std::sync::Arc;

use tokio::time::Instant;

use crate::handle::Handle;
use crate::wire::Metadata;

/// The context of one handler call.
#[derive(Clone)]
pub struct HandlerContext {
    handle: Handle,
    packet: Arc<str>,
    channel: Option<Arc<str>>,
    source_rid: Option<Arc<str>>,
    metadata: Metadata,
    deadline: Option<Instant>,
}

/// What the runtime knows about one inbound message when it calls a handler.
pub(crate) struct CallFacts {
    pub(crate) packet: Arc<str>,
    pub(crate) channel: Option<Arc<str>>,
    pub(crate) source_rid: Option<Arc<str>>,
    pub(crate) metadata: Metadata,
    pub(crate) deadline: Option<Instant>,
}

impl HandlerContext {
    /// The context of a call received by the process `handle` reaches.
    pub(crate) fn new(handle: Handle, facts: CallFacts) -> Self {
        HandlerContext {
            handle,
            packet: facts.packet,
            channel: facts.channel,
            source_rid: facts.source_rid,
            metadata: facts.metadata,
            deadline: facts.deadline,
        }
    }

    /// The handle of the node the handler runs on, for further calls from the handler
    /// (it cannot stop the node).
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// The packet name of the message.
    pub fn packet(&self) -> &str {
        &self.packet
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
