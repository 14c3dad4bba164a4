//! MeshNode: one node's components wired together. It owns the [`Links`], the
//! [`PeerTable`], the pending table, the [`Dispatcher`], the outbound [`Calls`] and, with a
//! Location Store, the [`Discovery`]; each of them owns its state and lock. A RouteMesh
//! member is one MeshNode; each ClientServer role of a process is another, with its own
//! links and peers under a ClientServer [`RolePolicy`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::calls::Calls;
use super::channel_registry::ChannelRegistry;
use super::discovery::Discovery;
use super::dispatch::Dispatcher;
use super::identity::NodeIdentity;
use super::links::{LinkParts, Links};
use super::peer_table::{PeerStatus, PeerTable};
use super::policy::RolePolicy;
use super::services::NodeServices;
use super::settings::{MeshSettings, MAX_WEIGHT};
use super::subsystem::Subsystem;
use super::work::HandlerWork;
use crate::call::PendingTable;
use crate::store::OwnerLease;
use crate::sync::LockUnpoisoned;
use crate::telemetry::{Happened, HostState, Instruments};
use crate::wire::{Command, ControlHeader};

/// One node: a RouteMesh member, or one ClientServer role.
pub(crate) struct MeshNode {
    settings: Arc<MeshSettings>,
    identity: Arc<NodeIdentity>,
    peers: Arc<PeerTable>,
    pending: Arc<PendingTable>,
    dispatcher: Arc<Dispatcher>,
    links: Arc<Links>,
    calls: Calls,
    discovery: Option<Arc<Discovery>>,
    services: NodeServices,
    work: Arc<HandlerWork>,
    cancel: CancellationToken,
    /// What the runtime started next to this node, in start order.
    subsystems: Mutex<Vec<Arc<dyn Subsystem>>>,
    /// Its metrics, in the recorder installed when it started.
    instruments: Instruments,
}

impl MeshNode {
    /// A node from validated settings. `lease` is the process's owner lease when another
    /// node holds it.
    pub(crate) fn new(settings: MeshSettings, lease: Option<Arc<OwnerLease>>) -> Arc<MeshNode> {
        let settings = Arc::new(settings);
        let registry = Arc::new(ChannelRegistry::new(&settings.channels));
        let max_message = match settings.max_message {
            // 0 is "no cap of its own" (ClientServer roles): the link limit applies.
            0 => settings.limits.max_message,
            own => own,
        };
        let identity = Arc::new(NodeIdentity::new(
            settings.mesh_name.clone(),
            settings.rid.clone(),
            settings.generation,
            registry,
            max_message,
        ));
        let configured = settings.peers.iter().filter_map(|p| p.expected_rid.clone());
        let instruments = Instruments::new(&settings.mesh_name, &settings.rid);
        let peers = Arc::new(
            PeerTable::new(configured, max_message)
                .metered(instruments.peers.clone(), instruments.events.clone()),
        );
        let pending = Arc::new(PendingTable::default());
        let dispatcher = Arc::new(Dispatcher::default());
        let cancel = CancellationToken::new();
        let work = Arc::new(HandlerWork::new(cancel.clone()));
        let policy = RolePolicy::of(&settings);
        let links = Links::new(LinkParts {
            identity: identity.clone(),
            policy,
            settings: settings.clone(),
            peers: peers.clone(),
            pending: pending.clone(),
            dispatcher: dispatcher.clone(),
            work: work.clone(),
            meter: instruments.links.clone(),
            cancel: cancel.clone(),
        });
        let discovery = settings
            .discovery
            .clone()
            .map(|d| Discovery::new(d, lease, settings.clone(), identity.clone(), links.clone()));
        let services = NodeServices::new(
            settings.discovery.as_ref().map(|d| d.store.clone()),
            discovery.as_ref().map(|d| d.lease().clone()),
            super::services::Clock,
        );
        let calls = Calls::new(
            identity.clone(),
            settings.clone(),
            peers.clone(),
            pending.clone(),
            links.clone(),
            services.clock(),
        );
        Arc::new(MeshNode {
            instruments,
            settings,
            identity,
            peers,
            pending,
            dispatcher,
            links,
            calls,
            discovery,
            services,
            work,
            cancel,
            subsystems: Mutex::new(Vec::new()),
        })
    }

    /// This node's metrics.
    pub(crate) fn instruments(&self) -> &Instruments {
        &self.instruments
    }

    pub(crate) fn settings(&self) -> &MeshSettings {
        &self.settings
    }

    pub(crate) fn identity(&self) -> &NodeIdentity {
        &self.identity
    }

    pub(crate) fn registry(&self) -> &Arc<ChannelRegistry> {
        self.identity.registry()
    }

    pub(crate) fn peers(&self) -> &PeerTable {
        &self.peers
    }

    pub(crate) fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
    }

    pub(crate) fn links(&self) -> &Arc<Links> {
        &self.links
    }

    /// The outbound API.
    pub(crate) fn calls(&self) -> &Calls {
        &self.calls
    }

    pub(crate) fn discovery(&self) -> Option<&Arc<Discovery>> {
        self.discovery.as_ref()
    }

    /// Store, lease and clock, for every subsystem.
    pub(crate) fn services(&self) -> &NodeServices {
        &self.services
    }

    pub(crate) fn is_running(&self) -> bool {
        self.identity.is_running()
    }

    pub(crate) fn endpoint(&self) -> String {
        self.identity.endpoint()
    }

    pub(crate) fn rid(&self) -> &str {
        self.identity.rid()
    }

    pub(crate) fn peer_statuses(&self) -> Vec<PeerStatus> {
        self.peers.statuses()
    }

    /// Brings the links up (listener, liveness, manual dialers) and the deadline sweeper;
    /// a ClientServer node with a store also starts its discovery.
    pub(crate) async fn start_links(&self) -> crate::Result<()> {
        self.links.start().await?;
        self.links
            .spawn_background(self.pending.clone().run_sweeper());
        // A ClientServer role runs its discovery from the start; the RouteMesh node joins
        // the store first (`join_store`).
        if !self.links.policy().owns_lease() {
            if let Some(discovery) = &self.discovery {
                discovery.spawn(self.cancel.clone());
            }
        }
        Ok(())
    }

    /// With a Location Store: claims the lease and publishes once (the RouteMesh node).
    pub(crate) async fn join_store(&self) {
        if let Some(discovery) = &self.discovery {
            discovery.join().await;
        }
    }

    /// Keeps the lease and the descriptor up and follows the members, in the background.
    pub(crate) fn run_discovery(&self) {
        if let Some(discovery) = &self.discovery {
            discovery.spawn(self.cancel.clone());
        }
    }

    /// Registers a subsystem started next to this node (drained and stopped in reverse).
    pub(crate) fn add_subsystem(&self, subsystem: Arc<dyn Subsystem>) {
        self.subsystems.lock_unpoisoned().push(subsystem);
    }

    /// The subsystems in reverse start order.
    pub(crate) fn subsystems_reversed(&self) -> Vec<Arc<dyn Subsystem>> {
        let mut all: Vec<Arc<dyn Subsystem>> =
            self.subsystems.lock_unpoisoned().iter().cloned().collect();
        all.reverse();
        all
    }

    /// Sets a server channel's weight and tells every ready peer (and, with a store, the
    /// published descriptor).
    pub(crate) fn set_weight(&self, channel: &str, weight: u32) -> crate::Result<()> {
        if weight > MAX_WEIGHT {
            return Err(crate::Error::InvalidArgument(format!(
                "weight {weight} is outside 0..={}",
                MAX_WEIGHT
            )));
        }
        if !self.registry().set_weight(channel, weight) {
            return Err(crate::Error::new(
                crate::ErrorKind::NotConfigured,
                format!("channel {channel} has no Server role on this node"),
            ));
        }
        self.identity.bump_revision();
        let header = ControlHeader {
            admission: Some(self.identity.admission()),
            ..ControlHeader::default()
        };
        for link in self.peers.links() {
            self.links
                .send_control(link.conn(), Command::Update, header.clone());
        }
        if let Some(discovery) = &self.discovery {
            discovery.republish();
        }
        tracing::info!(channel, weight, "channel weight changed");
        Ok(())
    }

    /// Says in the descriptor that this node takes no new objects (`true`) or serves again;
    /// waits (bounded by the renew timeout) until the store has it. Peers' placement reads
    /// it from there.
    pub(crate) async fn set_draining(&self, draining: bool) {
        if !self.identity.set_draining(draining) {
            return;
        }
        tracing::info!(rid = %self.rid(), draining, "node serving state changed");
        let state = if draining {
            HostState::Draining
        } else {
            HostState::Serving
        };
        self.instruments
            .events
            .emit(|| Happened::HostState { state });
        if let Some(discovery) = &self.discovery {
            discovery.publish_now().await;
        }
    }

    /// Starts shutting down: new calls fail `ShuttingDown`. False when it had begun.
    pub(crate) fn begin_shutdown(&self) -> bool {
        let began = self.identity.begin_shutdown();
        if began {
            self.instruments.events.emit(|| Happened::HostState {
                state: HostState::Stopping,
            });
        }
        began
    }

    /// Lets accepted handler work finish, for at most `grace`; false when some was still
    /// running at the end.
    pub(crate) async fn drain_work(&self, grace: Duration) -> bool {
        let tracker = self.work.tracker();
        tracker.close();
        tokio::time::timeout(grace, tracker.wait()).await.is_ok()
    }

    /// Outstanding outbound requests end `ShuttingDown`; new ones are refused.
    pub(crate) fn end_calls(&self) {
        self.pending.close();
    }

    /// Ends the node: outstanding requests fail `ShuttingDown`, tasks are cancelled,
    /// connections and the listener close; returns once every task has ended.
    pub(crate) async fn close(&self, reason: &'static str) {
        self.pending.close();
        self.cancel.cancel();
        self.links.close_all(reason);
        let tracker = self.work.tracker();
        tracker.close();
        tracker.wait().await;
        self.links.wait_background().await;
        self.identity.mark_stopped();
        self.instruments.events.emit(|| Happened::HostState {
            state: HostState::Stopped,
        });
    }

    /// Withdraws the descriptor and releases the lease (best effort).
    pub(crate) async fn leave_store(&self) {
        if let Some(discovery) = &self.discovery {
            discovery.leave().await;
        }
    }

    /// Waits until a shutdown someone else started has ended.
    pub(crate) async fn wait_closed(&self) {
        self.links.wait_closed().await;
    }
}
