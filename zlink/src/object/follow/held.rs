//! One message for a departing object, as the source accepted it, and how it is refused.

use std::sync::Arc;

use tokio::time::Instant;

use crate::address::ObjectKey;
use crate::call::PacketKind;
use crate::object::lost_sends::{LostReason, LostSends};
use crate::object::object_job::{HandlerMessage, ObjectJob, ReplyTo};
use crate::object::object_type::TypeDef;
use crate::wire::{Metadata, Payload};
use crate::{Error, ErrorKind};

/// One message for a departing object, as the source accepted it.
pub(crate) struct Held {
    pub(crate) packet: Arc<str>,
    pub(crate) kind: PacketKind,
    pub(crate) payload: Payload,
    pub(crate) metadata: Metadata,
    pub(crate) deadline: Option<Instant>,
    pub(crate) reply: Option<ReplyTo>,
    /// The node it came from (`None`: this node), which a notice may go back to.
    pub(crate) sender: Option<String>,
    /// Relays before it reached this node.
    pub(crate) hops: u8,
    /// Its sender's operation identity, which every relay keeps (0: a call made on this
    /// node, named when it first leaves).
    pub(crate) operation: u64,
}

impl Held {
    /// What it occupies: its payload's encoded size (a value that cannot be encoded counts
    /// nothing: encoding it to relay it fails, and it is refused then) and its metadata.
    pub(crate) fn bytes(&mut self) -> usize {
        self.payload.encoded_len().unwrap_or(0)
            + self
                .metadata
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>()
    }

    /// The correlation its reply goes back to its sender under (0: a send, or a caller on
    /// this node).
    pub(crate) fn reply_correlation(&self) -> u64 {
        self.reply
            .as_ref()
            .and_then(ReplyTo::remote_correlation)
            .unwrap_or(0)
    }

    /// Ends the message with `error`: a request hears it; a one-way is counted as lost
    /// for `reason`, and logged.
    pub(crate) fn refuse(
        self,
        key: &ObjectKey,
        error: Error,
        lost: &LostSends,
        reason: LostReason,
    ) {
        if self.kind == PacketKind::Send {
            lost.record(key, &self.packet, reason, &error);
        }
        if let Some(reply) = self.reply {
            reply.send(Err(error));
        }
    }
}

/// A queued job as the relay carries it (a tick is not carried: its timer moves).
pub(crate) fn job_to_held(object_type: &TypeDef, job: ObjectJob) -> Option<Held> {
    match job {
        ObjectJob::Message(message) => {
            let kind = object_type
                .packets
                .get(message.handler)
                .map_or(PacketKind::Send, |(_, kind)| *kind);
            Some(Held {
                packet: std::sync::Arc::from(message.packet),
                kind,
                payload: message.payload,
                metadata: message.metadata,
                deadline: message.deadline,
                reply: message.reply,
                sender: None,
                hops: 0,
                operation: message.operation,
            })
        }
        other => {
            other.refuse(Error::new(ErrorKind::Unavailable, "the object moved"));
            None
        }
    }
}

/// A held message back as a job of its object (a cancelled move), with its bytes. A
/// follow barrier is answered: everything held before it is queued ahead of it.
pub(crate) fn held_to_job(
    key: &ObjectKey,
    object_type: &TypeDef,
    mut held: Held,
    lost: &LostSends,
) -> Option<(ObjectJob, usize)> {
    if &*held.packet == crate::object::route_cache::FOLLOW_BARRIER {
        if let Some(reply) = held.reply {
            reply.send(Ok(crate::wire::Payload::default()));
        }
        return None;
    }
    let Some(handler) = object_type.handler(&held.packet, held.kind) else {
        let why = format!(
            "type {} has no handler for {:?}",
            object_type.stable_type, held.packet
        );
        held.refuse(
            key,
            Error::new(ErrorKind::NotFound, why),
            lost,
            LostReason::NoHandler,
        );
        return None;
    };
    let bytes = held.bytes();
    Some((
        ObjectJob::Message(HandlerMessage {
            handler,
            packet: object_type.packet_name(handler).unwrap_or_default(),
            payload: held.payload,
            metadata: held.metadata,
            deadline: held.deadline,
            reply: held.reply,
            operation: held.operation,
            queued_at: None,
        }),
        bytes,
    ))
}
