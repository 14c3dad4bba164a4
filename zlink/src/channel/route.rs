//! The channel subsystem's [`InboundRoute`]: a channel send or request goes to a fresh call
//! of the handler its packet names, in the group serving its ChannelName.

use std::sync::Arc;

use super::ChannelRegistry;
use crate::handler::{CallFacts, HandlerContext, PacketKind};
use crate::mesh::{InboundCall, InboundRoute};
use crate::{Error, ErrorKind};

/// Delivers channel commands (18, 19) to the registry's handler groups.
pub(crate) struct ChannelRoute {
    registry: Arc<ChannelRegistry>,
}

impl ChannelRoute {
    pub(crate) fn new(registry: Arc<ChannelRegistry>) -> Self {
        ChannelRoute { registry }
    }
}

impl InboundRoute for ChannelRoute {
    fn deliver(&self, call: InboundCall) {
        let kind = if call.is_request() {
            PacketKind::Request
        } else {
            PacketKind::Send
        };
        let head = &call.message().head;
        let found = self
            .registry
            .server(head.target.as_str())
            .and_then(|entry| {
                let slot = entry.handlers.find(head.packet.as_str(), kind)?;
                Some((entry, slot))
            });
        let Some((entry, slot)) = found else {
            let (channel, packet) = (head.target.as_str(), head.packet.as_str());
            tracing::warn!(peer = %call.from().rid(), channel, packet, request = call.is_request(), "no_handler");
            let err = Error::new(
                ErrorKind::NotFound,
                format!("no handler for {packet} on {channel}"),
            );
            return call.answer(Err(err));
        };
        let group = entry.handlers.group().clone();
        let index = slot.index;
        let facts = CallFacts {
            packet: slot.packet.clone(),
            channel: Some(entry.name.clone()),
            source_rid: None,
            metadata: Default::default(),
            deadline: call.deadline(),
        };
        call.run(move |node, message| {
            let ctx = HandlerContext::new(
                node,
                CallFacts {
                    metadata: message.metadata,
                    ..facts
                },
            );
            Box::pin(async move { group.handle(ctx, index, message.payload).await })
        });
    }
}
