//! The receiving side: command 23 from a peer, and a publish's own node, hand the event
//! to every matching Spot this node runs, each queue taking the same buffer.

use std::sync::{Arc, Weak};

use bytes::Bytes;
use tokio::time::Instant;

use crate::call::PacketKind;
use crate::mesh::{InboundCall, InboundRoute};
use crate::object::admission::{self, Admission, Admitted, Prepared};
use crate::object::core::ObjectCore;
use crate::object::multicast::Multicast;
use crate::object::owner_link::route_fence;
use crate::wire::{Metadata, Payload};

/// Command 23 from a peer: delivered here if this node is a Server member of the channel,
/// whatever its weight now (the publisher chose its targets when it published; a weight
/// changed since does not take the event back). A one-way: nothing is answered, and what
/// a Spot's queue refuses is dropped.
pub(crate) struct MulticastRoute {
    pub(crate) core: Weak<ObjectCore>,
    pub(crate) multicast: Arc<Multicast>,
}

impl InboundRoute for MulticastRoute {
    fn deliver(&self, call: InboundCall) {
        let Some(core) = self.core.upgrade() else {
            return;
        };
        let message = call.message();
        let head = &message.head;
        let Some(topic) = head.topic.as_ref() else {
            return;
        };
        let channel = head.target.as_str();
        if !core.env.serves_channel(channel) {
            tracing::debug!(channel, from = %call.from().rid(), "a multicast for a channel this node does not serve was dropped");
            return;
        }
        super::count(&self.multicast.counts.records_received, 1);
        let event = Received {
            channel,
            topic: topic.as_str(),
            packet: head.packet.as_str(),
            payload: &message.payload,
            metadata: &message.metadata,
            sender: Some(call.from().rid()),
        };
        deliver_here(&core, &self.multicast, event);
    }
}

/// One multicast event as this node received it (or published it to itself).
pub(super) struct Received<'a> {
    pub(super) channel: &'a str,
    pub(super) topic: &'a str,
    pub(super) packet: &'a str,
    pub(super) payload: &'a Bytes,
    pub(super) metadata: &'a Metadata,
    /// The publishing node (`None`: this one).
    pub(super) sender: Option<&'a str>,
}

/// Queues the event on every Spot this node runs whose type takes it, each with the same
/// `payload` buffer (no copy, no re-encode). Returns how many queues took it.
pub(super) fn deliver_here(core: &ObjectCore, multicast: &Multicast, event: Received<'_>) -> usize {
    let Received {
        channel,
        topic,
        packet,
        payload,
        metadata,
        sender,
    } = event;
    let types = multicast.subscriptions.types(channel, topic, packet);
    if types.is_empty() {
        return 0;
    }
    let now = Instant::now();
    let (mut queued, mut dropped) = (0, 0);
    for live in core.registry.all() {
        if live.is_entry() || !types.contains(&live.object_type.stable_type) {
            continue;
        }
        let fence = route_fence(&live.fence());
        let prepared = admission::prepare(
            core,
            Admission {
                key: &live.key,
                packet,
                payload: Payload::encoded(payload.clone()),
                metadata: metadata.clone(),
                kind: PacketKind::Send,
                fence,
                now,
                deadline: None,
                reply: None,
                sender: sender.map(str::to_string),
                hops: 0,
                operation: 0,
                bound: None,
                session: None,
            },
        );
        let Prepared {
            live, job, bytes, ..
        } = match prepared {
            Ok(Admitted::Job(prepared)) => prepared,
            // Held for a Spot that is moving: it follows the Spot.
            Ok(Admitted::Taken { .. }) => {
                queued += 1;
                continue;
            }
            Err(refusal) => {
                dropped += 1;
                tracing::debug!(spot = %live.key, packet, error = %refusal.error, "a multicast event was not admitted");
                continue;
            }
        };
        match live.try_deliver(job, bytes) {
            Ok(()) => queued += 1,
            Err((crate::object::mailbox::Refused::Full(_), _)) => {
                dropped += 1;
                tracing::debug!(spot = %live.key, packet, "a multicast event found a full queue");
            }
            // Sealed for a move or just handed over: the move's hold takes it.
            Err((_, job)) => {
                let sender = sender.map(str::to_string);
                if admission::to_departure(
                    &core.departures,
                    core.env.lost_sends(),
                    &live,
                    fence,
                    (job, bytes),
                    sender,
                    0,
                )
                .is_none()
                {
                    queued += 1;
                } else {
                    dropped += 1;
                }
            }
        }
    }
    super::count(&multicast.counts.delivered, queued);
    super::count(&multicast.counts.dropped, dropped);
    queued as usize
}
