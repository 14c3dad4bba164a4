//! One message for a departing object, as the source accepted it, and how it is refused.

use std::sync::Arc;

use tokio::time::Instant;

use crate::address::ObjectKey;
use crate::call::PacketKind;
use crate::object::lost_sends::{LostReason, LostSends};
use crate::object::object_job::ReplyTo;
use crate::wire::{Metadata, Payload};
use crate::Error;

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
