//! A Spot type's subscription to Logical Multicast events: a channel, a topic and the
//! one-way handler they run.

use crate::{Error, Result};

/// One topic a Spot type takes: events of `packet` published to `topic` on `channel`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Subscription {
    pub(crate) channel: String,
    pub(crate) topic: String,
    pub(crate) packet: String,
}

impl Subscription {
    /// Checks the names (the Spot type checks that `packet` is a one-way handler).
    pub(crate) fn new(channel: &str, topic: &str, packet: &str) -> Result<Self> {
        for (what, name) in [("channel", channel), ("topic", topic)] {
            if name.is_empty() || name.len() > 255 {
                return Err(Error::InvalidArgument(format!(
                    "a multicast {what} name must be 1..=255 bytes, got {}",
                    name.len()
                )));
            }
        }
        Ok(Subscription {
            channel: channel.to_string(),
            topic: topic.to_string(),
            packet: packet.to_string(),
        })
    }
}
