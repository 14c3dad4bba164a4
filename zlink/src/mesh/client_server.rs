//! ClientServer channels on the MeshNode engine. A ClientServer Server is a node of its own
//! with its own listener that only accepts clients and answers; a Client is a node without
//! a listener that dials servers and calls. Both run the same handshake, liveness, pending
//! table and smooth weighted round-robin as the RouteMesh, under a topology name
//! (`cs:<channel>`) that keeps RouteMesh and ClientServer connections apart.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::node::{lock, MeshNode};
use crate::channel::ChannelRole;
use crate::config::{ClientServerRole, Settings, Topology};
use crate::{Error, ErrorKind, Result};

/// The ClientServer nodes of one process.
#[derive(Default)]
pub(crate) struct ClientServerSet {
    pub(crate) servers: BTreeMap<String, Arc<MeshNode>>,
    pub(crate) clients: BTreeMap<String, Arc<MeshNode>>,
}

/// The topology name ClientServer connections of `channel` use in their admission.
pub(crate) fn topology_name(channel: &str) -> String {
    format!("cs:{channel}")
}

impl MeshNode {
    /// Settings for the node of one ClientServer role, derived from this RouteMesh node's.
    fn client_server_settings(&self, role: &ClientServerRole) -> Settings {
        let mut settings = self.settings.clone();
        settings.mesh_name = topology_name(role.channel());
        settings.generation = super::generate_generation();
        settings.node_handlers = None;
        settings.client_server = Vec::new();
        settings.fanout = Vec::new();
        let mut channels = BTreeMap::new();
        match role {
            ClientServerRole::Server {
                channel,
                handlers,
                weight,
                listen,
                advertise_host,
                max_message,
            } => {
                settings.topology = Topology::ClientServerServer;
                settings.listen = listen.clone();
                settings.advertise_host = advertise_host.clone();
                settings.peers = Vec::new();
                settings.max_message = *max_message;
                channels.insert(
                    channel.clone(),
                    ChannelRole::Server {
                        handlers: handlers.clone(),
                        weight: *weight,
                    },
                );
            }
            ClientServerRole::Client {
                channel,
                connect,
                automatic,
                max_message,
            } => {
                settings.topology = Topology::ClientServerClient;
                settings.listen = String::new();
                settings.advertise_host = None;
                settings.peers = connect.clone();
                settings.max_message = *max_message;
                if !automatic {
                    settings.discovery = None;
                }
                channels.insert(channel.clone(), ChannelRole::Client);
            }
        }
        settings.channels = channels;
        settings
    }

    /// Starts the ClientServer nodes this RouteMesh node's settings declare.
    pub(crate) async fn start_client_server(self: &Arc<Self>) -> Result<()> {
        let lease = self.discovery().map(|d| d.lease.clone());
        for role in self.settings.client_server.clone() {
            let settings = self.client_server_settings(&role);
            let node = MeshNode::new(settings, Arc::downgrade(self), lease.clone());
            let channel = role.channel().to_string();
            crate::channel::register_routes(&node)?;
            let started = node.start_links().await;
            if let Err(e) = started {
                return Err(Error::new(
                    e.kind().unwrap_or(ErrorKind::Unavailable),
                    format!("ClientServer {channel}: {e}"),
                ));
            }
            let mut set = lock(&self.client_server);
            match role {
                ClientServerRole::Server { .. } => set.servers.insert(channel, node),
                ClientServerRole::Client { .. } => set.clients.insert(channel, node),
            };
        }
        Ok(())
    }

    /// The node that calls on `channel`: this one for RouteMesh channels, the ClientServer
    /// client node otherwise.
    pub(crate) fn calling_node(self: &Arc<Self>, channel: &str) -> Result<Arc<MeshNode>> {
        if self.registry.can_send(channel) {
            return Ok(self.clone());
        }
        let set = lock(&self.client_server);
        if let Some(client) = set.clients.get(channel) {
            return Ok(client.clone());
        }
        if set.servers.contains_key(channel) {
            return Err(Error::new(
                ErrorKind::NotConfigured,
                format!("channel {channel} has only the ClientServer Server role here: a server answers, it cannot call"),
            ));
        }
        Err(Error::new(
            ErrorKind::NotFound,
            format!("channel {channel} is not registered on this node"),
        ))
    }

    /// The ClientServer server node of `channel`, if this process serves it.
    pub(crate) fn client_server_server(&self, channel: &str) -> Option<Arc<MeshNode>> {
        lock(&self.client_server).servers.get(channel).cloned()
    }

    /// The ClientServer client node of `channel`, if this process calls it.
    pub(crate) fn client_server_client(&self, channel: &str) -> Option<Arc<MeshNode>> {
        lock(&self.client_server).clients.get(channel).cloned()
    }

    /// Every ClientServer node, servers first.
    pub(crate) fn client_server_nodes(&self) -> Vec<Arc<MeshNode>> {
        let set = lock(&self.client_server);
        set.servers
            .values()
            .chain(set.clients.values())
            .cloned()
            .collect()
    }
}
