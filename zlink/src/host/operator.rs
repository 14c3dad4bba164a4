//! [`Operator`]: what an operator's tools hold of a node (a dashboard, a health endpoint,
//! an admin task): its status and its health, cloneable, without the right to stop it.

use std::sync::Arc;

use super::health::{Health, ServedTypes};
use super::lifecycle::Started;
use super::RuntimeStatus;
use crate::handle::Handle;
use crate::object::recovery::{NodeRecord, ObjectRecord, Objects};

/// A node as its operator sees it: [`status`](Self::status) and [`health`](Self::health),
/// from [`Runtime::operator`](super::Runtime::operator). Clone it into whatever serves
/// them (an HTTP endpoint, a metrics task); unlike the [`Runtime`](super::Runtime), it
/// cannot stop the node, and it answers for the node's whole life (after a shutdown:
/// not alive).
#[derive(Clone)]
pub struct Operator {
    handle: Handle,
    started: Arc<Started>,
}

impl Operator {
    pub(super) fn new(handle: Handle, started: Arc<Started>) -> Self {
        Operator { handle, started }
    }

    /// The node's RID.
    pub fn rid(&self) -> &str {
        self.handle.rid()
    }

    /// One snapshot of the node's state, as [`Runtime::status`](super::Runtime::status).
    pub fn status(&self) -> RuntimeStatus {
        RuntimeStatus::of(&self.handle, &self.started)
    }

    /// One page of the Spots and Actors this node runs now (its Entry Spot aside), after
    /// the cursor `after` (`None` for the first page, then each page's `next`), at most
    /// `limit` (1 to [`MAX_HOSTED_PAGE`](crate::object::MAX_HOSTED_PAGE)) per page.
    /// Read from the node itself, not the Location Store. `NotConfigured` without Spots
    /// and Actors.
    pub fn hosted_objects(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> crate::Result<crate::object::HostedObjects> {
        Ok(self.object_server()?.hosted(after, limit))
    }

    /// Where the Spot and the Actor with ID `id` are, from the Location Store: owner,
    /// generation, state, lease (an empty list when neither exists). `NotConfigured`
    /// without Spots and Actors.
    pub async fn locate(&self, id: &str) -> crate::Result<Vec<ObjectRecord>> {
        Objects::over(self.object_server()?.store())
            .locate(id)
            .await
    }

    /// The mesh's nodes as the Location Store has them: RID, generation, endpoint, lease,
    /// draining and the types each serves. `NotConfigured` without Spots and Actors.
    pub async fn nodes(&self) -> crate::Result<Vec<NodeRecord>> {
        let mesh = self.handle.node().identity().mesh_name().to_string();
        Objects::over(self.object_server()?.store())
            .nodes(&mesh)
            .await
    }

    fn object_server(&self) -> crate::Result<&Arc<crate::object::ObjectServer>> {
        self.started.objects.as_ref().ok_or_else(|| {
            crate::Error::new(
                crate::ErrorKind::NotConfigured,
                "Spots and Actors need a Location Store on this node (location_store)",
            )
        })
    }

    /// The node's status stream from now on, as [`Runtime::observe`](super::Runtime::observe).
    pub fn observe(&self) -> crate::telemetry::Observer {
        self.observe_after(0)
    }

    /// The node's status stream after the event numbered `sequence` (the last one a
    /// reader saw, as an SSE client's `Last-Event-ID`): the retained events after it come
    /// first (the node keeps the last [`RETAINED_EVENTS`](crate::telemetry::RETAINED_EVENTS)
    /// once observed); older ones are counted lost. `0` is "from now on".
    pub fn observe_after(&self, sequence: u64) -> crate::telemetry::Observer {
        self.handle.node().instruments().events.observe(sequence)
    }

    /// Whether the node is alive and ready, and every readiness check: it serves (running,
    /// not draining), its Location Store answers, its owner lease admits new work, each
    /// ClientServer channel it calls has a ready server and each fanout channel it follows a
    /// ready publisher, and every Spot and Actor type it serves can be placed on some
    /// node. A node without a Location Store passes the store, lease and type checks.
    pub fn health(&self) -> Health {
        let stopped = self.started.stopped.borrow().is_some();
        let served = &self.handle.node().settings().served_objects;
        Health::of(
            &self.status(),
            stopped,
            &ServedTypes {
                spot_types: &served.spot_types,
                actor_types: &served.actor_types,
            },
        )
    }
}
