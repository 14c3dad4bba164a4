//! The channel registry: each ChannelName has exactly one role on this node, and each
//! served one its current weight. Admission publishes it, selection reads the weights, and
//! a typed client declares its Client role here.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, RwLock};

use super::ChannelRole;
use crate::sync::RwLockUnpoisoned;

/// Most ChannelNames one node declares the Client role for.
const MAX_CLIENT_CHANNELS: usize = 4096;

/// Channel roles of one node. Server roles are fixed after start (only their weights
/// change); a Client role is also declared by creating a typed client for the channel.
#[derive(Default)]
pub(crate) struct ChannelRegistry {
    /// Served channels and their current weights.
    servers: HashMap<Arc<str>, AtomicU32>,
    clients: RwLock<HashSet<Arc<str>>>,
}

impl ChannelRegistry {
    pub(crate) fn new(roles: &BTreeMap<String, ChannelRole>) -> Self {
        let mut reg = ChannelRegistry::default();
        for (name, role) in roles {
            let name: Arc<str> = Arc::from(name.as_str());
            match role {
                ChannelRole::Server { weight } => {
                    reg.servers.insert(name, AtomicU32::new(*weight));
                }
                ChannelRole::Client => {
                    reg.clients_mut().insert(name);
                }
            }
        }
        reg
    }

    fn clients_mut(&mut self) -> &mut HashSet<Arc<str>> {
        self.clients.get_mut().unwrap_or_else(|p| p.into_inner())
    }

    /// The current weight of the served channel `name`; `None` when it is not served here.
    pub(crate) fn weight(&self, name: &str) -> Option<u32> {
        self.servers.get(name).map(|w| w.load(Ordering::Acquire))
    }

    /// Whether this node may start calls on `channel`; the interned name when it may.
    pub(crate) fn sendable(&self, channel: &str) -> Option<Arc<str>> {
        if let Some((name, _)) = self.servers.get_key_value(channel) {
            return Some(name.clone());
        }
        self.clients.read_unpoisoned().get(channel).cloned()
    }

    /// Declares the Client role for `channel` (a typed client was made for it). A name
    /// outside 1..=255 bytes is refused.
    pub(crate) fn declare_client(&self, channel: &str) -> crate::Result<()> {
        if channel.is_empty() || channel.len() > crate::wire::MAX_NAME_BYTES {
            return Err(crate::Error::InvalidArgument(format!(
                "ChannelName must be 1..=255 bytes, {channel:?} is {}",
                channel.len()
            )));
        }
        if self.servers.contains_key(channel) {
            return Ok(());
        }
        let mut clients = self.clients.write_unpoisoned();
        if clients.contains(channel) {
            return Ok(());
        }
        // Names may come from data a handler received: the set stays bounded.
        if clients.len() >= MAX_CLIENT_CHANNELS {
            return Err(crate::Error::new(
                crate::ErrorKind::CapacityExceeded,
                format!("this node already calls {MAX_CLIENT_CHANNELS} channels"),
            ));
        }
        clients.insert(Arc::from(channel));
        Ok(())
    }

    /// Whether this node may start calls on `channel`.
    pub(crate) fn can_send(&self, channel: &str) -> bool {
        self.sendable(channel).is_some()
    }

    /// Sets a served channel's weight; false when it is not served here.
    pub(crate) fn set_weight(&self, channel: &str, weight: u32) -> bool {
        match self.servers.get(channel) {
            Some(current) => {
                current.store(weight, Ordering::Release);
                true
            }
            None => false,
        }
    }

    /// Server channels with their current weights, sorted by name.
    pub(crate) fn server_weights(&self) -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = self
            .servers
            .iter()
            .map(|(n, w)| (n.to_string(), w.load(Ordering::Acquire)))
            .collect();
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_client_roles_are_named_properly_and_bounded() {
        let registry = ChannelRegistry::new(&BTreeMap::new());
        assert!(registry.declare_client("").is_err());
        assert!(registry.declare_client(&"x".repeat(256)).is_err());
        for i in 0..MAX_CLIENT_CHANNELS {
            registry
                .declare_client(&format!("c{i}"))
                .expect("below the bound");
        }
        assert!(registry.declare_client("c0").is_ok(), "already declared");
        let over = registry.declare_client("one-more").unwrap_err();
        assert!(over.is(crate::ErrorKind::CapacityExceeded), "{over}");
        assert_eq!(registry.sendable("c7").as_deref(), Some("c7"));
        assert!(registry.sendable("one-more").is_none());
    }
}
