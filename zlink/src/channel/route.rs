//! The channel subsystem's [`InboundRoute`]: a channel send or request goes to a fresh call
//! of the handler its packet names, in the group serving its ChannelName.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::call::PacketKind;
use crate::handle::WeakHandle;
use crate::handler::{CallFacts, HandlerContext, HandlerGroup, HandlerTable};
use crate::mesh::{InboundCall, InboundRoute};
use crate::{Error, ErrorKind};

/// Delivers channel commands (18, 19) to the handler groups of the channels served here.
pub(crate) struct ChannelRoute {
    /// By ChannelName, interned once for every handler context.
    served: HashMap<Arc<str>, HandlerTable>,
    /// What the handlers' contexts call through: the process's handle.
    handle: WeakHandle,
}

impl ChannelRoute {
    pub(crate) fn new(
        servers: &BTreeMap<String, Arc<dyn HandlerGroup>>,
        handle: WeakHandle,
    ) -> Self {
        let served = servers
            .iter()
            .map(|(name, group)| (Arc::from(name.as_str()), HandlerTable::new(group.clone())))
            .collect();
        ChannelRoute { served, handle }
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
            .served
            .get_key_value(head.target.as_str())
            .and_then(|(name, handlers)| {
                let slot = handlers.find(head.packet.as_str(), kind)?;
                Some((name, handlers, slot))
            });
        let Some((name, handlers, slot)) = found else {
            let channel = head.target.as_str().to_string();
            return call.answer_no_handler(&channel);
        };
        let Some(handle) = self.handle.upgrade() else {
            return call.answer(Err(Error::new(
                ErrorKind::ShuttingDown,
                "the runtime is stopping",
            )));
        };
        let group = handlers.group().clone();
        let index = slot.index;
        let facts = CallFacts {
            packet: slot.packet.clone(),
            channel: Some(name.clone()),
            source_rid: None,
            metadata: Default::default(),
            deadline: call.deadline(),
        };
        call.run(move |message| {
            let ctx = HandlerContext::new(
                handle,
                CallFacts {
                    metadata: message.metadata,
                    ..facts
                },
            );
            Box::pin(async move {
                // A refusal the handler heard on its own calls is not this call's.
                group
                    .handle(ctx, index, message.payload)
                    .await
                    .map_err(crate::Error::handler_error)
            })
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::handle::Handle;
    use crate::link::Connection;
    use crate::mesh::links::tests::{arrive, hello, node, request, Recording};
    use crate::wire::{Envelope, ReplyOutcome};
    use crate::ErrorKind;

    #[tokio::test]
    async fn an_admitted_peer_calling_a_channel_nobody_serves_gets_not_found() {
        let node = node();
        let handle = Handle::new(node.clone());
        crate::channel::register_routes(&node, &Default::default(), handle.downgrade())
            .expect("routes");
        let conn = Recording::new(5);
        let as_dyn: Arc<dyn Connection> = conn.clone();
        arrive(&node, &as_dyn, hello("p", "m"));
        arrive(&node, &as_dyn, request("nobody-serves-this"));
        let sent = conn.sent();
        assert!(matches!(
            &sent[1],
            Envelope::Reply { correlation: 9, operation: 9, outcome: ReplyOutcome::Failed { kind, .. } } if *kind == ErrorKind::NotFound.code()
        ));
    }
}
