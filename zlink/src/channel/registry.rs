//! The channel registry: each ChannelName has exactly one role on this node.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use super::{HandlerGroup, PacketKind};

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

pub(crate) struct ServerEntry {
    pub(crate) handlers: Arc<dyn HandlerGroup>,
    pub(crate) kinds: HashMap<String, PacketKind>,
    pub(crate) weight: AtomicU32,
}

/// Channel roles of one node, fixed after start (only server weights change).
#[derive(Default)]
pub struct ChannelRegistry {
    pub(crate) servers: BTreeMap<String, ServerEntry>,
    pub(crate) clients: BTreeMap<String, ()>,
}

impl ChannelRegistry {
    pub(crate) fn new(roles: &BTreeMap<String, ChannelRole>) -> Self {
        let mut reg = ChannelRegistry::default();
        for (name, role) in roles {
            match role {
                ChannelRole::Server { handlers, weight } => {
                    let kinds = handlers.packets().into_iter().collect();
                    reg.servers.insert(
                        name.clone(),
                        ServerEntry {
                            handlers: handlers.clone(),
                            kinds,
                            weight: AtomicU32::new(*weight),
                        },
                    );
                }
                ChannelRole::Client => {
                    reg.clients.insert(name.clone(), ());
                }
            }
        }
        reg
    }

    /// Whether this node may start calls on `channel`.
    pub fn can_send(&self, channel: &str) -> bool {
        self.servers.contains_key(channel) || self.clients.contains_key(channel)
    }

    /// Server channels with their current weights, sorted by name.
    pub fn server_weights(&self) -> Vec<(String, u32)> {
        self.servers
            .iter()
            .map(|(n, e)| (n.clone(), e.weight.load(Ordering::Acquire)))
            .collect()
    }
}
