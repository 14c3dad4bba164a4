//! The channel registry: each ChannelName has exactly one role on this node.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, RwLock};

use crate::handler::{HandlerGroup, HandlerTable};

/// The role a node plays for one RouteMesh ChannelName.
#[derive(Clone)]
pub enum ChannelRole {
    /// Receives calls (and may send them) with a handler group and a weight.
    Server {
        /// The handlers.
        handlers: Arc<dyn HandlerGroup>,
        /// The weight at registration (0..=10000).
        weight: u32,
    },
    /// May start calls only.
    Client,
}

/// Most ChannelNames one node declares the Client role for.
const MAX_CLIENT_CHANNELS: usize = 4096;

/// One channel this node serves.
pub(crate) struct ServerEntry {
    /// The ChannelName, interned for every handler context.
    pub(crate) name: Arc<str>,
    pub(crate) handlers: HandlerTable,
    weight: AtomicU32,
}

impl ServerEntry {
    pub(crate) fn weight(&self) -> u32 {
        self.weight.load(Ordering::Acquire)
    }
}

/// Channel roles of one node. Server roles are fixed after start (only their weights
/// change); a Client role is also declared by creating a typed client for the channel.
#[derive(Default)]
pub struct ChannelRegistry {
    servers: HashMap<Arc<str>, ServerEntry>,
    clients: RwLock<HashSet<Arc<str>>>,
}

impl ChannelRegistry {
    pub(crate) fn new(roles: &BTreeMap<String, ChannelRole>) -> Self {
        let mut reg = ChannelRegistry::default();
        for (name, role) in roles {
            let name: Arc<str> = Arc::from(name.as_str());
            match role {
                ChannelRole::Server { handlers, weight } => {
                    reg.servers.insert(
                        name.clone(),
                        ServerEntry {
                            name,
                            handlers: HandlerTable::new(handlers.clone()),
                            weight: AtomicU32::new(*weight),
                        },
                    );
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

    /// The served channel `name`.
    pub(crate) fn server(&self, name: &str) -> Option<&ServerEntry> {
        self.servers.get(name)
    }

    /// Whether this node may start calls on `channel`; the interned name when it may.
    pub(crate) fn sendable(&self, channel: &str) -> Option<Arc<str>> {
        if let Some((name, _)) = self.servers.get_key_value(channel) {
            return Some(name.clone());
        }
        self.clients
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(channel)
            .cloned()
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
        let mut clients = self.clients.write().unwrap_or_else(|p| p.into_inner());
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
    pub fn can_send(&self, channel: &str) -> bool {
        self.sendable(channel).is_some()
    }

    /// Sets a served channel's weight; false when it is not served here.
    pub(crate) fn set_weight(&self, channel: &str, weight: u32) -> bool {
        match self.servers.get(channel) {
            Some(entry) => {
                entry.weight.store(weight, Ordering::Release);
                true
            }
            None => false,
        }
    }

    /// Server channels with their current weights, sorted by name.
    pub fn server_weights(&self) -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = self
            .servers
            .iter()
            .map(|(n, e)| (n.to_string(), e.weight()))
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
