//! The publishing side: admission within the send timeout, then one record per eligible
//! remote node and the matching Spots of this node.

use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use crate::object::core::ObjectCore;
use crate::object::multicast::Multicast;
use crate::wire::{Command, Metadata};
use crate::{Error, ErrorKind, Result};

/// One Logical Multicast event, as its publisher gave it.
pub(crate) struct Event<'a> {
    pub(crate) channel: &'a str,
    pub(crate) topic: &'a str,
    pub(crate) packet: &'a str,
    pub(crate) payload: Bytes,
    pub(crate) metadata: Metadata,
    /// How long admission may wait: for a worker, then for room on each link.
    pub(crate) send_timeout: Duration,
}

/// Publishes `event`: the targets are taken once (every ready remote Server member of the
/// channel with weight > 0, and this node if it is one), each remote one gets exactly one
/// record, and this node's matching Spots get the event. Completes once every target had
/// its turn; a target that fails is skipped, never reported. `DeadlineExceeded` with
/// nothing sent when no publish worker is free within the send timeout.
pub(crate) async fn publish(
    core: &ObjectCore,
    multicast: &Multicast,
    event: Event<'_>,
) -> Result<()> {
    for (what, name) in [("channel", event.channel), ("topic", event.topic)] {
        if name.is_empty() || name.len() > 255 {
            return Err(Error::InvalidArgument(format!(
                "a multicast {what} name must be 1..=255 bytes, got {}",
                name.len()
            )));
        }
    }
    let admit_by = Instant::now() + event.send_timeout;
    let _worker = match tokio::time::timeout_at(admit_by, multicast.workers.acquire()).await {
        Ok(Ok(worker)) => worker,
        Ok(Err(_)) => return Err(Error::new(ErrorKind::ShuttingDown, "the node is stopping")),
        Err(_) => {
            return Err(Error::new(
                ErrorKind::DeadlineExceeded,
                "no publish worker was free within the send timeout: nothing was sent",
            ))
        }
    };
    let Some(node) = core.env.node() else {
        return Err(Error::new(ErrorKind::ShuttingDown, "the node is stopping"));
    };
    super::count(&multicast.counts.published, 1);
    let targets = node.peers().servers(event.channel);
    if !targets.is_empty() {
        let frames = crate::wire::encode_call(
            Command::LogicalMulticast,
            (0, node.calls().next_operation()),
            0,
            crate::wire::Addressed {
                target: event.channel,
                packet: event.packet,
                fence: None,
                hops: 0,
                session: None,
                topic: Some(event.topic),
                push: None,
            },
            &event.metadata,
            event.payload.clone(),
        );
        // In order, so each publisher's events reach each node in the order published.
        for link in &targets {
            let sent = node
                .calls()
                .send_frames(link, frames.clone(), admit_by)
                .await;
            if let Err(e) = sent {
                super::count(&multicast.counts.targets_skipped, 1);
                tracing::debug!(channel = event.channel, topic = event.topic, node = %link.rid(), error = %e, "a multicast target was skipped");
            } else {
                super::count(&multicast.counts.records_sent, 1);
            }
        }
    }
    if core.env.serves_channel_weighted(event.channel) {
        let here = super::receive::Received {
            channel: event.channel,
            topic: event.topic,
            packet: event.packet,
            payload: &event.payload,
            metadata: &event.metadata,
            sender: None,
        };
        super::receive::deliver_here(core, multicast, here);
    }
    Ok(())
}
