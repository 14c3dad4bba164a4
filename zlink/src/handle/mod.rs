//! [`Handle`]: what application code calls the mesh through — channels, nodes, Spots,
//! Actors and fanout — from a handler, a context or a client. Cheap to clone. Unlike
//! [`Runtime`](crate::Runtime), which owns the node, a handle cannot stop it.
//!
//! The subsystems above this layer (ClientServer roles, fanout roles, the object layer)
//! plug in through the ports in [`ports`], installed once while the node starts.

mod actors;
mod by_id;
mod call_builder;
mod channels;
mod discovery;
mod fanout;
mod multicast;
mod nodes;
mod ports;
mod spots;

use std::sync::{Arc, OnceLock, Weak};

use crate::link::CurvePublicKey;
use crate::mesh::MeshNode;
use crate::{Error, ErrorKind, Result};

pub use actors::Actors;
#[doc(hidden)]
pub use by_id::ClientTarget;
pub use call_builder::{Call, CallFuture, Expect, OneWay, Outgoing, Reply};
pub use channels::Channels;
pub use discovery::DiscoveryHandle;
pub use fanout::{FanoutHandle, Publish, PublisherStatus};
pub use multicast::{Multicast, MulticastPublish};
pub use nodes::Nodes;
pub(crate) use ports::{ClientServerPort, FanoutPort, ObjectMessage, ObjectPort, Started};
pub use spots::Spots;

/// A cloneable handle to a running node: it makes calls, creates and finds objects and
/// reads the node's state, but cannot shut the node down. Every clone is the same node.
///
/// Handlers get one from their context ([`HandlerContext::handle`](crate::HandlerContext::handle),
/// [`Context::handle`](crate::object::Context::handle)); the owner gets one from
/// [`Runtime::handle`](crate::Runtime::handle). Generated clients take either a handle or
/// a runtime.
#[derive(Clone)]
pub struct Handle {
    inner: Arc<HandleInner>,
}

/// A handle that does not keep the node alive: what the node's own components hold, so a
/// stopped node is dropped.
#[derive(Clone)]
pub(crate) struct WeakHandle(Weak<HandleInner>);

struct HandleInner {
    node: Arc<MeshNode>,
    client_server: OnceLock<Arc<dyn ClientServerPort>>,
    fanout: OnceLock<Arc<dyn FanoutPort>>,
    objects: OnceLock<Arc<dyn ObjectPort>>,
}

#[cfg(test)]
impl Handle {
    /// The handle of a node `n1` of mesh `m` that was configured but never started: what
    /// unit tests give a context or an environment.
    pub(crate) fn unstarted() -> Handle {
        let config = crate::Runtime::builder()
            .mesh_name("m")
            .rid("n1")
            .listen("tcp://127.0.0.1:0")
            .build()
            .expect("valid settings");
        Handle::new(MeshNode::new(config.settings.mesh, None))
    }
}

impl Handle {
    /// The handle of `node`, with no subsystem installed yet.
    pub(crate) fn new(node: Arc<MeshNode>) -> Self {
        Handle {
            inner: Arc::new(HandleInner {
                node,
                client_server: OnceLock::new(),
                fanout: OnceLock::new(),
                objects: OnceLock::new(),
            }),
        }
    }

    pub(crate) fn downgrade(&self) -> WeakHandle {
        WeakHandle(Arc::downgrade(&self.inner))
    }

    /// Installs the ClientServer roles (once, while the node starts).
    pub(crate) fn install_client_server(&self, port: Arc<dyn ClientServerPort>) {
        let _ = self.inner.client_server.set(port);
    }

    /// Installs the fanout roles (once, while the node starts).
    pub(crate) fn install_fanout(&self, port: Arc<dyn FanoutPort>) {
        let _ = self.inner.fanout.set(port);
    }

    /// Installs the object layer (once, while the node starts).
    pub(crate) fn install_objects(&self, port: Arc<dyn ObjectPort>) {
        let _ = self.inner.objects.set(port);
    }

    /// The process's RouteMesh node.
    pub(crate) fn node(&self) -> &Arc<MeshNode> {
        &self.inner.node
    }

    pub(crate) fn client_server(&self) -> Option<&Arc<dyn ClientServerPort>> {
        self.inner.client_server.get()
    }

    pub(crate) fn fanout_port(&self) -> Result<&Arc<dyn FanoutPort>> {
        self.inner
            .fanout
            .get()
            .ok_or_else(|| Error::new(ErrorKind::NotConfigured, "this node has no fanout roles"))
    }

    pub(crate) fn objects(&self) -> Result<&Arc<dyn ObjectPort>> {
        self.inner.objects.get().ok_or_else(|| {
            Error::new(
                ErrorKind::NotConfigured,
                "Spots and Actors need a Location Store on this node (location_store)",
            )
        })
    }

    /// Calls on channels, and this node's channel roles.
    pub fn channels(&self) -> Channels<'_> {
        Channels::new(self)
    }

    /// Calls to one node by RID, and the ready peers.
    pub fn nodes(&self) -> Nodes<'_> {
        Nodes::new(self)
    }

    /// Spots: create, find, close and move them, and message them by ID.
    pub fn spots(&self) -> Spots<'_> {
        Spots::new(self)
    }

    /// Actors: create, find, destroy and move them, and message them by ID.
    pub fn actors(&self) -> Actors<'_> {
        Actors::new(self)
    }

    /// Fanout: publishing, and what this process's publishers and subscribers see.
    pub fn fanout(&self) -> FanoutHandle<'_> {
        FanoutHandle::new(self)
    }

    /// Logical Multicast: events to the Spots subscribed to a topic on a RouteMesh
    /// channel.
    pub fn multicast(&self) -> Multicast<'_> {
        Multicast::new(self)
    }

    /// What this node knows from the Location Store.
    pub fn discovery(&self) -> DiscoveryHandle<'_> {
        DiscoveryHandle::new(self)
    }

    /// This node's RID.
    pub fn rid(&self) -> &str {
        self.inner.node.rid()
    }

    /// This node's lifecycle generation (new for every start).
    pub fn generation(&self) -> u64 {
        self.inner.node.identity().generation()
    }

    /// The MeshName.
    pub fn mesh_name(&self) -> &str {
        &self.inner.node.settings().mesh_name
    }

    /// The RouteMesh endpoint peers dial (port 0 resolved, advertised host applied); empty
    /// for a process with only ClientServer or fanout roles.
    pub fn endpoint(&self) -> String {
        self.inner.node.endpoint()
    }

    /// This node's CURVE public key (its security identity), when it runs CURVE.
    pub fn curve_public_key(&self) -> Option<CurvePublicKey> {
        self.inner.node.settings().security.public_key()
    }

    /// Whether the node still admits new calls.
    pub fn is_running(&self) -> bool {
        self.inner.node.is_running()
    }

    /// `ShuttingDown` once the runtime stops: what a publish answers before it starts.
    pub(crate) fn ensure_running(&self) -> Result<()> {
        if self.is_running() {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::ShuttingDown,
                "the runtime is shutting down",
            ))
        }
    }

    /// The send timeout a one-way gives, unless its own `timeout` names one.
    pub(crate) fn send_timeout_or(
        &self,
        timeout: Option<std::time::Duration>,
    ) -> std::time::Duration {
        timeout.unwrap_or(self.node().settings().send_timeout)
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("rid", &self.rid())
            .finish_non_exhaustive()
    }
}

impl From<&Handle> for Handle {
    fn from(handle: &Handle) -> Self {
        handle.clone()
    }
}

impl WeakHandle {
    /// The handle, while its node is alive.
    pub(crate) fn upgrade(&self) -> Option<Handle> {
        self.0.upgrade().map(|inner| Handle { inner })
    }
}
