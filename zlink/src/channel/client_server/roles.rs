//! The ClientServer roles of one process. Each role is a node of its own (its own links,
//! peer table and pending table) under a ClientServer role policy and the topology name
//! `cs:<channel>`, which keeps RouteMesh and ClientServer connections apart. A Server has
//! a listener that only accepts clients and answers; a Client has no listener, dials
//! servers and calls. Both run the mesh's handshake, liveness and smooth weighted
//! round-robin.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::ClientServerRole;
use crate::handle::{ClientServerPort, Handle};
use crate::mesh::{ChannelRole, Drained, MeshNode, MeshSettings, Subsystem, Teardown, Topology};
use crate::{Error, ErrorKind, Result};

/// How long queued replies have to leave at shutdown before the connections close.
const REPLY_LINGER: Duration = Duration::from_millis(20);

/// The topology name ClientServer connections of `channel` use in their admission.
pub(crate) fn topology_name(channel: &str) -> String {
    format!("cs:{channel}")
}

/// Every ClientServer role of a process, servers and clients by ChannelName.
pub(crate) struct ClientServerRoles {
    servers: BTreeMap<String, Arc<MeshNode>>,
    clients: BTreeMap<String, Arc<MeshNode>>,
}

/// Settings for the node of one ClientServer role, derived from the process's own.
fn role_settings(process: &MeshSettings, role: &ClientServerRole) -> MeshSettings {
    let mut settings = process.clone();
    settings.mesh_name = topology_name(role.channel());
    settings.generation = crate::mesh::generate_generation();
    let mut channels = BTreeMap::new();
    match role {
        ClientServerRole::Server {
            channel,
            handlers: _,
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
            channels.insert(channel.clone(), ChannelRole::Server { weight: *weight });
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

impl ClientServerRoles {
    /// Starts the roles the process of `handle` declares; their handlers call through
    /// `handle` and they act under its owner lease.
    pub(crate) async fn start(handle: &Handle, declared: &[ClientServerRole]) -> Result<Arc<Self>> {
        let process = handle.node();
        let mut roles = ClientServerRoles {
            servers: BTreeMap::new(),
            clients: BTreeMap::new(),
        };
        let lease = process.services().lease().cloned();
        for role in declared {
            let settings = role_settings(process.settings(), role);
            let node = MeshNode::new(settings, lease.clone());
            let channel = role.channel().to_string();
            let mut served = BTreeMap::new();
            if let ClientServerRole::Server { handlers, .. } = role {
                served.insert(channel.clone(), handlers.clone());
            }
            let started = match crate::channel::register_routes(&node, &served, handle.downgrade())
            {
                Ok(()) => node.start_links().await,
                Err(e) => Err(e),
            };
            // Registered first, so a failed start still stops what it began.
            match role {
                ClientServerRole::Server { .. } => roles.servers.insert(channel.clone(), node),
                ClientServerRole::Client { .. } => roles.clients.insert(channel.clone(), node),
            };
            if let Err(e) = started {
                roles.stop(false).await;
                return Err(Error::new(
                    e.kind().unwrap_or(ErrorKind::Unavailable),
                    format!("ClientServer {channel}: {e}"),
                ));
            }
        }
        Ok(Arc::new(roles))
    }

    /// The served channels with the endpoints clients reach them at.
    pub(crate) fn servers(&self) -> impl Iterator<Item = (&String, &Arc<MeshNode>)> {
        self.servers.iter()
    }

    /// The called channels with their client nodes.
    pub(crate) fn clients(&self) -> impl Iterator<Item = (&String, &Arc<MeshNode>)> {
        self.clients.iter()
    }

    fn nodes(&self) -> impl Iterator<Item = &Arc<MeshNode>> {
        self.servers.values().chain(self.clients.values())
    }
}

#[async_trait]
impl Subsystem for ClientServerRoles {
    fn name(&self) -> &'static str {
        "client-server"
    }

    /// Servers stop admitting and finish accepted work; clients end their calls.
    async fn drain(&self, grace: Duration) -> Drained {
        for node in self.nodes() {
            node.begin_shutdown();
        }
        // Side by side, so k servers end within one grace, not k of them.
        let drains = self.servers.values().map(|node| async move {
            let finished = node.drain_work(grace).await;
            if !finished {
                tracing::warn!(rid = %node.rid(), "ClientServer grace ended with handlers still running");
            }
            finished
        });
        let finished = futures::future::join_all(drains).await;
        if finished.into_iter().all(|f| f) {
            Drained::Finished
        } else {
            Drained::GraceEnded
        }
    }

    async fn stop(&self, crashed: bool) -> Teardown {
        for node in self.nodes() {
            node.end_calls();
            if !crashed {
                node.leave_store().await;
            }
        }
        if !crashed {
            // Replies of handlers that finished within the grace are queued: give them a
            // moment to leave before the connections close.
            tokio::time::sleep(REPLY_LINGER).await;
        }
        for node in self.nodes() {
            node.close(if crashed { "crashed" } else { "shutdown" })
                .await;
        }
        Teardown::Clean
    }
}

impl ClientServerPort for ClientServerRoles {
    fn client(&self, channel: &str) -> Option<Arc<MeshNode>> {
        self.clients.get(channel).cloned()
    }

    fn server(&self, channel: &str) -> Option<Arc<MeshNode>> {
        self.servers.get(channel).cloned()
    }
}
