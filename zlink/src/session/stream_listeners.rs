//! Every STREAM listener of a node, as one subsystem: started after the object layer (a
//! session may call Actors from its first packet), drained and stopped before it.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::peer::SessionId;
use super::running_listener::{RunningListener, SessionShared};
use super::session_index::{SessionIndex, SessionRoute};
use super::settings::StreamListener;
use crate::handle::WeakHandle;
use crate::mesh::{Drained, Subsystem, Teardown};
use crate::object::ObjectServer;
use crate::wire::Command;
use crate::Result;

/// One listener's state, for [`Runtime::status`](crate::Runtime::status).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StreamListenerStatus {
    /// The listener's name.
    pub name: String,
    /// Where clients connect.
    pub endpoint: String,
    /// Sessions open now.
    pub open_sessions: usize,
    /// Connections accepted since the start.
    pub accepted: u64,
    /// Connections refused over the session cap since the start.
    pub refused: u64,
}

/// The node's listeners.
pub(crate) struct StreamListeners {
    listeners: Vec<Arc<RunningListener>>,
}

impl StreamListeners {
    /// Binds and starts every listener; on a failure the started ones stop again.
    pub(crate) async fn start(
        specs: Vec<StreamListener>,
        handle: WeakHandle,
        objects: Option<&Arc<ObjectServer>>,
    ) -> Result<Arc<Self>> {
        let index = Arc::new(SessionIndex::default());
        if !specs.is_empty() {
            // Actors' pushes reach this node's sessions: over the mesh, or from here.
            if let Some(node) = handle.upgrade().map(|h| h.node().clone()) {
                let route = Arc::new(SessionRoute(Arc::downgrade(&index)));
                node.dispatcher()
                    .register(Command::BoundSessionSend, route.clone())?;
                for command in [
                    Command::BoundSessionReplaced,
                    Command::SessionRelocationSeal,
                    Command::SessionRelocationRoute,
                ] {
                    node.dispatcher().register(command, route.clone())?;
                }
            }
            if let Some(objects) = objects {
                objects.install_sessions(index.clone());
            }
        }
        let shared = SessionShared {
            objects: objects.map(Arc::downgrade),
            index,
        };
        let mut listeners = Vec::with_capacity(specs.len());
        for spec in specs {
            match RunningListener::start(spec, handle.clone(), shared.clone()).await {
                Ok(listener) => listeners.push(listener),
                Err(e) => {
                    for listener in &listeners {
                        listener.stop().await;
                    }
                    return Err(e);
                }
            }
        }
        Ok(Arc::new(StreamListeners { listeners }))
    }

    /// Where the listener `name` takes clients.
    pub(crate) fn endpoint(&self, name: &str) -> Option<String> {
        self.find(name).map(|l| l.endpoint.clone())
    }

    /// Closes session `session` of listener `listener` with `ServerDrain`, as the
    /// application's own close does; false when no such session is open.
    pub(crate) fn disconnect(&self, listener: &str, session: u64) -> bool {
        self.find(listener)
            .is_some_and(|l| l.disconnect(SessionId(session)))
    }

    fn find(&self, name: &str) -> Option<&Arc<RunningListener>> {
        self.listeners.iter().find(|l| l.name == name)
    }

    pub(crate) fn status(&self) -> Vec<StreamListenerStatus> {
        self.listeners
            .iter()
            .map(|l| {
                let (accepted, refused) = l.counts();
                StreamListenerStatus {
                    name: l.name.clone(),
                    endpoint: l.endpoint.clone(),
                    open_sessions: l.open_sessions(),
                    accepted,
                    refused,
                }
            })
            .collect()
    }
}

#[async_trait]
impl Subsystem for StreamListeners {
    fn name(&self) -> &'static str {
        "stream listeners"
    }

    async fn drain(&self, grace: Duration) -> Drained {
        let drained =
            futures::future::join_all(self.listeners.iter().map(|l| l.drain(grace))).await;
        if drained.into_iter().all(|d| d == Drained::Finished) {
            Drained::Finished
        } else {
            Drained::GraceEnded
        }
    }

    async fn stop(&self, _crashed: bool) -> Teardown {
        futures::future::join_all(self.listeners.iter().map(|l| l.stop())).await;
        Teardown::Clean
    }
}
