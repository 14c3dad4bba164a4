//! The composed settings of one runtime: each subsystem's own settings type, as the
//! builder validated them. `host` hands each part to its subsystem at start.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::channel::client_server::ClientServerRole;
use crate::channel::fanout::FanoutDeclaration;
use crate::handler::{HandlerGroup, HandlerTable};
use crate::host::Runtime;
use crate::mesh::MeshSettings;
use crate::object::ObjectSettings;
use crate::Result;

/// Everything a started runtime needs, already validated.
pub(crate) struct Settings {
    /// The RouteMesh node's own settings.
    pub(crate) mesh: MeshSettings,
    /// The handler group of every RouteMesh channel this node serves.
    pub(crate) channel_servers: BTreeMap<String, Arc<dyn HandlerGroup>>,
    /// Node-direct handlers.
    pub(crate) node_handlers: Option<HandlerTable>,
    /// ClientServer registrations, started next to the RouteMesh node.
    pub(crate) client_server: Vec<ClientServerRole>,
    /// Fanout publishers and subscribers.
    pub(crate) fanout: Vec<FanoutDeclaration>,
    /// Spots, Actors, the route cache and relocation.
    pub(crate) objects: ObjectSettings,
    /// STREAM listeners for outside clients.
    pub(crate) stream_listeners: Vec<crate::session::StreamListener>,
}

/// A validated configuration, ready to [`start`](Self::start).
pub struct RuntimeConfig {
    pub(crate) settings: Settings,
}

impl RuntimeConfig {
    /// The RID this node will use.
    pub fn rid(&self) -> &str {
        &self.settings.mesh.rid
    }

    /// Binds the listener, starts liveness and dials the manual peers.
    pub async fn start(self) -> Result<Runtime> {
        Runtime::start(self.settings).await
    }
}
