//! [`ObjectEnv`]: what every part of one node's object layer runs with — the node (weakly)
//! and its handle, the way out to other nodes, the Location Store with the authority
//! records in it, the owner lease, this node as an owner, the local pending table, the
//! count of lost one-ways, and the tasks and tokens that end with the node.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::authority::OwnerRoute;
use super::authority_store::AuthorityStore;
use super::lost_sends::LostSends;
use super::owner_link::{node_stopping, OwnerLink};
use super::stop_list::StopList;
use crate::handle::{Handle, WeakHandle};
use crate::mesh::MeshNode;
use crate::store::{LeaseToken, LocationStore, OwnerLease};
use crate::telemetry::{EventHub, ObjectMeter, TurnMeter};
use crate::{Error, ErrorKind, Result};

/// The environment of one node's object layer.
pub(crate) struct ObjectEnv {
    node: Weak<MeshNode>,
    handle: WeakHandle,
    owner_link: OwnerLink,
    store: Arc<dyn LocationStore>,
    authority: AuthorityStore,
    lease: Arc<OwnerLease>,
    route: OwnerRoute,
    lost_sends: Arc<LostSends>,
    running: Arc<StopList>,
    tracker: TaskTracker,
    cancel: CancellationToken,
    /// Set with `cancel`: what every local call reads (a token's check takes its lock).
    stopping: AtomicBool,
    killed: CancellationToken,
    /// What the object layer records: owned objects, creations, moves.
    meter: Arc<ObjectMeter>,
    /// The node's status stream.
    events: Arc<EventHub>,
    /// What turns cost, when a recorder is installed.
    turns: Option<Arc<TurnMeter>>,
}

impl ObjectEnv {
    /// The environment of the object layer of the node `handle` reaches, over `store`
    /// under `lease`.
    pub(crate) fn new(
        handle: &Handle,
        store: Arc<dyn LocationStore>,
        lease: Arc<OwnerLease>,
    ) -> Self {
        let node = handle.node();
        let identity = node.identity();
        ObjectEnv {
            node: Arc::downgrade(node),
            handle: handle.downgrade(),
            owner_link: OwnerLink::new(Arc::downgrade(node)),
            authority: AuthorityStore::new(store.clone()),
            store,
            lease,
            route: OwnerRoute {
                mesh_name: identity.mesh_name().to_string(),
                rid: identity.rid().to_string(),
                node_generation: identity.generation(),
            },
            lost_sends: Arc::new(LostSends::metered(node.instruments().objects.clone())),
            running: Arc::new(StopList::default()),
            tracker: TaskTracker::new(),
            cancel: CancellationToken::new(),
            stopping: AtomicBool::new(false),
            killed: CancellationToken::new(),
            meter: node.instruments().objects.clone(),
            events: node.instruments().events.clone(),
            turns: node.instruments().turns.clone(),
        }
    }

    /// Whether this node is a Server member of `channel` (at any weight).
    pub(crate) fn serves_channel(&self, channel: &str) -> bool {
        self.node()
            .is_some_and(|node| node.registry().weight(channel).is_some())
    }

    /// Whether this node is a Server member of `channel` with weight > 0, as its peers
    /// would count it (weight 0, draining, takes none).
    pub(crate) fn serves_channel_weighted(&self, channel: &str) -> bool {
        self.node()
            .and_then(|node| node.registry().weight(channel))
            .is_some_and(|weight| weight > 0)
    }

    /// The node, while it is alive.
    pub(crate) fn node(&self) -> Option<Arc<MeshNode>> {
        self.node.upgrade()
    }

    /// The node's handle, for the contexts of the objects it runs; `ShuttingDown` once
    /// the node is gone.
    pub(crate) fn handle(&self) -> Result<Handle> {
        self.handle.upgrade().ok_or_else(node_stopping)
    }

    /// The node's handle, weakly (what the objects' turn loops hold).
    pub(crate) fn weak_handle(&self) -> &WeakHandle {
        &self.handle
    }

    /// The way out to other nodes, for every object command this layer sends.
    /// The object layer's instruments.
    pub(crate) fn meter(&self) -> &Arc<ObjectMeter> {
        &self.meter
    }

    /// What turns cost, when a recorder is installed.
    pub(crate) fn turns(&self) -> Option<&Arc<TurnMeter>> {
        self.turns.as_ref()
    }

    /// The node's status stream: what the object layer tells its observers.
    pub(crate) fn events(&self) -> &Arc<EventHub> {
        &self.events
    }

    pub(crate) fn owner_link(&self) -> &OwnerLink {
        &self.owner_link
    }

    /// The Location Store.
    pub(crate) fn store(&self) -> &Arc<dyn LocationStore> {
        &self.store
    }

    /// The authority records in the Location Store, read and written fenced.
    pub(crate) fn authority(&self) -> &AuthorityStore {
        &self.authority
    }

    /// The node's owner lease.
    pub(crate) fn lease(&self) -> &Arc<OwnerLease> {
        &self.lease
    }

    /// The lease token this node owns new objects under; `Unavailable` while its lease
    /// admits no new work.
    pub(crate) fn admitting_token(&self) -> Result<LeaseToken> {
        self.lease.admitting_token().ok_or_else(|| {
            Error::new(
                ErrorKind::Unavailable,
                "this node's lease admits no new work",
            )
        })
    }

    /// This node as an owner: where its objects' messages go.
    pub(crate) fn route(&self) -> &OwnerRoute {
        &self.route
    }

    /// Every turn loop this node runs, for its stop to halt.
    pub(crate) fn running(&self) -> &Arc<StopList> {
        &self.running
    }

    /// The one-ways this node accepted and could not deliver.
    pub(crate) fn lost_sends(&self) -> &Arc<LostSends> {
        &self.lost_sends
    }

    /// The tasks of the object layer, waited for when it stops.
    pub(crate) fn tracker(&self) -> &TaskTracker {
        &self.tracker
    }

    /// Cancelled when the object layer stops.
    pub(crate) fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Stops the object layer: [`cancel`](Self::cancel) fires and
    /// [`is_stopping`](Self::is_stopping) holds from now on.
    pub(crate) fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        self.cancel.cancel();
    }

    /// Whether the object layer is stopping, without the token's lock.
    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Cancelled when the node is killed (a test's crash): moves running on a caller's
    /// task end on the spot, as they would with the process.
    pub(crate) fn killed(&self) -> &CancellationToken {
        &self.killed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::OwnerLeaseSettings;

    fn env_of(handle: &Handle) -> ObjectEnv {
        let lease = OwnerLease::new(OwnerLeaseSettings::default());
        ObjectEnv::new(handle, <dyn LocationStore>::in_memory(), lease)
    }

    fn handle() -> Handle {
        Handle::unstarted()
    }

    #[test]
    fn this_node_as_an_owner_is_its_mesh_rid_and_generation() {
        let handle = handle();
        let env = env_of(&handle);
        let route = env.route();
        assert_eq!((route.mesh_name.as_str(), route.rid.as_str()), ("m", "n1"));
        assert_eq!(route.node_generation, handle.generation());
    }

    #[test]
    fn once_the_node_is_gone_the_environment_answers_shutting_down() {
        let handle = handle();
        let env = env_of(&handle);
        assert!(env.node().is_some());
        assert!(env.handle().is_ok());
        drop(handle);
        assert!(
            env.node().is_none(),
            "the environment keeps the node only weakly"
        );
        let err = env.handle().expect_err("the handle is gone");
        assert!(err.is(ErrorKind::ShuttingDown), "{err}");
    }

    #[test]
    fn without_a_lease_no_new_object_is_owned_here() {
        let env = env_of(&handle());
        let refused = env.admitting_token().expect_err("no lease taken yet");
        assert!(refused.is(ErrorKind::Unavailable), "{refused}");
    }

    #[test]
    fn stopping_the_layer_is_not_killing_the_node() {
        let env = env_of(&handle());
        assert!(!env.is_stopping());
        env.stop();
        assert!(env.is_stopping() && env.cancel().is_cancelled());
        assert!(!env.killed().is_cancelled());
        assert!(env.tracker().is_empty());
    }
}
