//! [`Controls`]: what an operator's tools may change on a node (drain, undrain, move one
//! object, reclaim a dead node's objects, disconnect a session), cloneable, without the
//! right to stop it.

use std::sync::Arc;

use super::lifecycle::Started;
use crate::handle::Handle;
use crate::object::recovery::{Objects, ReclaimReport};
use crate::object::RelocationReport;
use crate::{Error, ErrorKind, Result};

/// The operations an operator may run on a node, from
/// [`Runtime::controls`](super::Runtime::controls): give it to the tool that runs them
/// (an admin endpoint, a dashboard), and it can steer the node but never stop it.
#[derive(Clone)]
pub struct Controls {
    handle: Handle,
    started: Arc<Started>,
}

impl Controls {
    pub(super) fn new(handle: Handle, started: Arc<Started>) -> Self {
        Controls { handle, started }
    }

    /// The node's RID.
    pub fn rid(&self) -> &str {
        self.handle.rid()
    }

    /// Moves every object the node owns to other nodes and leaves it taking no new ones,
    /// as [`Runtime::relocate_all`](super::Runtime::relocate_all).
    pub async fn drain(&self) -> Result<RelocationReport> {
        tracing::info!(rid = %self.rid(), "draining: moving every object to other nodes");
        Ok(self.object_server()?.relocate_all(false).await)
    }

    /// Returns a drained node to service, as [`Runtime::undrain`](super::Runtime::undrain).
    pub async fn undrain(&self) -> Result<()> {
        if !self.handle.node().identity().is_running() {
            return Err(Error::new(
                ErrorKind::ShuttingDown,
                "the node is stopping: it cannot serve again",
            ));
        }
        if let Some(objects) = &self.started.objects {
            objects.undrain();
        }
        self.handle.node().set_draining(false).await;
        Ok(())
    }

    /// Moves Actor `id`, which this node runs, to node `to` (or where placement picks);
    /// returns the RID it runs on now. As [`Actors::relocate`](crate::Actors::relocate).
    pub async fn relocate_actor(&self, id: &str, to: Option<&str>) -> Result<String> {
        tracing::info!(rid = %self.rid(), id, to, "relocating one Actor");
        Ok(self.handle.actors().relocate(id, to).await?.rid)
    }

    /// Moves Spot `id`, which this node runs, to node `to` (or where placement picks);
    /// returns the RID it runs on now. As [`Spots::relocate`](crate::Spots::relocate).
    pub async fn relocate_spot(&self, id: &str, to: Option<&str>) -> Result<String> {
        tracing::info!(rid = %self.rid(), id, to, "relocating one Spot");
        Ok(self.handle.spots().relocate(id, to).await?.rid)
    }

    /// Releases every object whose record names node `rid` and whose owner lease is dead,
    /// as [`Objects::reclaim_node`].
    pub async fn reclaim_node(&self, rid: &str) -> Result<ReclaimReport> {
        self.objects()?.reclaim_node(rid).await
    }

    /// Recovery over the node's Location Store, as [`Runtime::objects`](super::Runtime::objects).
    pub fn objects(&self) -> Result<Objects> {
        let instruments = self.handle.node().instruments();
        Ok(Objects::over(self.object_server()?.store())
            .observed_by(instruments.events.clone(), instruments.objects.clone()))
    }

    /// Closes STREAM session `session` of listener `listener` (the client is told the
    /// server closed it); false when no such session is open.
    pub fn disconnect_session(&self, listener: &str, session: u64) -> bool {
        self.started.streams.disconnect(listener, session)
    }

    fn object_server(&self) -> Result<&Arc<crate::object::ObjectServer>> {
        self.started.objects.as_ref().ok_or_else(|| {
            Error::new(
                ErrorKind::NotConfigured,
                "Spots and Actors need a Location Store on this node (location_store)",
            )
        })
    }
}
