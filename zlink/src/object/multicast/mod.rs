//! Logical Multicast (seed 003 §5.1): events among Spots over a RouteMesh channel. A Spot
//! type subscribes to `(ChannelName, topic)` with a one-way handler; a publish sends one
//! record (command 23) to each eligible node, and each receiver hands one shared buffer
//! to every matching Spot it runs.

use std::collections::HashMap;

use super::object_type::TypeDef;
use crate::address::StableType;
use crate::handler::PacketKind;
use crate::{Error, Result};

mod publish;
mod receive;

pub(crate) use publish::{publish, Event, PublishWorkers};
pub(crate) use receive::MulticastRoute;

/// One topic a Spot type takes: events of `packet` published to `topic` on `channel`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Subscription {
    pub(crate) channel: String,
    pub(crate) topic: String,
    pub(crate) packet: String,
}

impl Subscription {
    /// Checks the names, and that `packet` is a one-way handler of `def`.
    pub(crate) fn new(def: &TypeDef, channel: &str, topic: &str, packet: &str) -> Result<Self> {
        for (what, name) in [("channel", channel), ("topic", topic)] {
            if name.is_empty() || name.len() > 255 {
                return Err(Error::InvalidArgument(format!(
                    "a multicast {what} name must be 1..=255 bytes, got {}",
                    name.len()
                )));
            }
        }
        if def.handler(packet, PacketKind::Send).is_none() {
            return Err(Error::InvalidArgument(format!(
                "Spot type {} subscribes {packet:?} to topic {topic:?}, but has no one-way handler for it",
                def.stable_type
            )));
        }
        Ok(Subscription {
            channel: channel.to_string(),
            topic: topic.to_string(),
            packet: packet.to_string(),
        })
    }
}

/// Which Spot types of this node take an event, by `(channel, topic, packet)`. Types are
/// fixed when the node starts, so the index is built once.
#[derive(Debug, Default)]
pub(crate) struct SubscriptionIndex {
    by_topic: HashMap<(String, String, String), Vec<StableType>>,
}

impl SubscriptionIndex {
    /// The index of the subscriptions of `types`.
    pub(crate) fn new<'a>(types: impl IntoIterator<Item = &'a TypeDef>) -> Self {
        let mut by_topic: HashMap<(String, String, String), Vec<StableType>> = HashMap::new();
        for def in types {
            for s in &def.subscriptions {
                by_topic
                    .entry((s.channel.clone(), s.topic.clone(), s.packet.clone()))
                    .or_default()
                    .push(def.stable_type.clone());
            }
        }
        SubscriptionIndex { by_topic }
    }

    /// The Spot types taking `packet` events of `topic` on `channel`.
    pub(crate) fn types(&self, channel: &str, topic: &str, packet: &str) -> &[StableType] {
        // (A borrowed tuple key would need a custom `Borrow`; the lookup allocates three
        // small strings only on nodes that subscribe to something.)
        if self.by_topic.is_empty() {
            return &[];
        }
        self.by_topic
            .get(&(channel.to_string(), topic.to_string(), packet.to_string()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}
