//! Sessions bound to Actors (seed 000 §3.1–3.2). On the Actor's owner: the Actor's
//! current binding ([`ActorBindings`]), the bind it validates once (command 38), the
//! check every relayed message passes, the Actor's push to its session (command 36), and
//! the session's end, which reaches the Actor's Spot wherever it runs (command 52).
//! On the session owner: the [`BindingRoute`] the bind returned, which every relay uses
//! as it is, with no Location Store read.

mod bind;
mod disconnect;
mod ended;
mod push;
mod record;
mod relay;
mod relocation;
mod route_notices;

#[cfg(test)]
pub(crate) use super::actor_binding::SessionKey;
pub(crate) use bind::bind_session;
pub(crate) use bind::BindRoute;
pub(crate) use disconnect::disconnect_session;
pub(crate) use disconnect::MemberDisconnectedRoute;
pub(crate) use ended::{tell_bindings_ended, EndedBinding};
pub(crate) use push::push_bound;
#[cfg(test)]
pub(crate) use record::TargetRoute;
pub(crate) use record::{
    PushRecord, RelocationRecord, ReplacedRecord, MAX_PUSH_PAYLOAD_BYTES,
    MAX_RELOCATION_RECORD_BYTES, MAX_REPLACED_RECORD_BYTES,
};
pub(crate) use relay::{bound_call, BindingRoute, BoundRelay, Relayed};
pub(crate) use relocation::session_bound_routes;

use std::sync::{Arc, OnceLock};

use crate::object::core::ObjectCore;
use crate::Result;

/// The session bindings of one node's Actors: the core they work on, and where pushes to
/// this node's own sessions go.
pub(crate) struct Bindings {
    pub(crate) core: Arc<ObjectCore>,
    /// Installed once by the session layer.
    sessions: OnceLock<Arc<dyn LocalSessions>>,
    /// The route notices (44) on their way, which a later seal (42) waits for.
    pub(crate) notices: Arc<route_notices::RouteNotices>,
}

impl Bindings {
    /// The bindings of the objects in `core`, with no sessions installed yet.
    pub(crate) fn new(core: Arc<ObjectCore>) -> Self {
        Bindings {
            core,
            sessions: OnceLock::new(),
            notices: Arc::default(),
        }
    }

    /// Installs where pushes to this node's own sessions go (once).
    pub(crate) fn install_sessions(&self, sessions: Arc<dyn LocalSessions>) {
        let _ = self.sessions.set(sessions);
    }

    /// Where pushes to this node's own sessions go, if it runs any.
    pub(crate) fn sessions(&self) -> Option<&Arc<dyn LocalSessions>> {
        self.sessions.get()
    }
}

/// Where the session owner's side takes a push whose session lives on this node (the
/// mesh does not carry a node's messages to itself): the session layer installs it.
pub(crate) trait LocalSessions: Send + Sync + 'static {
    /// Writes the push to its session, if the binding it names is still current there.
    fn push(&self, push: PushRecord) -> Result<()>;

    /// Tells the session that its binding to an Actor moved to another session.
    fn replaced(&self, replaced: ReplacedRecord);

    /// Seals a binding for its Actor's move (42): the session holds what it relays.
    fn seal(&self, seal: RelocationRecord) -> Result<()>;

    /// A sealed binding's route moves on, or stays (44): the session submits what it held.
    fn route(&self, route: RelocationRecord);
}
