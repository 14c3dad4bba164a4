//! Node-direct: the [`InboundRoute`] of node sends and requests (16, 17), which go to this
//! node's node handlers with the sender's RID in the context.

use super::{CallFacts, HandlerContext, HandlerTable, PacketKind};
use crate::handle::WeakHandle;
use crate::mesh::{InboundCall, InboundRoute};
use crate::{Error, ErrorKind};

/// Delivers node-direct commands to the node's handler group.
pub(crate) struct NodeDirectRoute {
    handlers: Option<HandlerTable>,
    /// What the handlers' contexts call through: the process's handle.
    handle: WeakHandle,
}

impl NodeDirectRoute {
    pub(crate) fn new(handlers: Option<HandlerTable>, handle: WeakHandle) -> Self {
        NodeDirectRoute { handlers, handle }
    }
}

impl InboundRoute for NodeDirectRoute {
    fn deliver(&self, call: InboundCall) {
        let kind = if call.is_request() {
            PacketKind::Request
        } else {
            PacketKind::Send
        };
        let packet = call.message().head.packet.as_str();
        let found = self
            .handlers
            .as_ref()
            .and_then(|t| Some((t.group().clone(), t.find(packet, kind)?.clone())));
        let Some((group, slot)) = found else {
            return call.answer_no_handler("node-direct");
        };
        let Some(handle) = self.handle.upgrade() else {
            return call.answer(Err(Error::new(
                ErrorKind::ShuttingDown,
                "the runtime is stopping",
            )));
        };
        let source = call.from().rid().clone();
        let deadline = call.deadline();
        call.run(move |message| {
            let ctx = HandlerContext::new(
                handle,
                CallFacts {
                    packet: slot.packet,
                    channel: None,
                    source_rid: Some(source),
                    metadata: message.metadata,
                    deadline,
                },
            );
            Box::pin(async move {
                // A refusal the handler heard on its own calls is not this call's.
                group
                    .handle(ctx, slot.index, message.payload)
                    .await
                    .map_err(crate::Error::handler_error)
            })
        });
    }
}
