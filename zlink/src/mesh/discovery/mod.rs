//! Automatic RouteMesh discovery through the Location Store.
//!
//! Each node publishes its [`MeshDescriptor`] under its owner lease and re-reads the whole
//! member list every discovery interval. A descriptor is an intent; the handshake is the
//! proof: the node with the smaller RID dials the endpoint expecting that RID and lifecycle
//! generation. A member whose lease is gone is dropped; a restarted member (new
//! generation) is dialed afresh and its old connection closed. While the store is out, the
//! last complete list keeps its connection intents for StoreFailureGrace, and no new
//! member is connected until the list has been read completely again.

mod apply;
mod publish;
mod read;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::dialer::DialTarget;
use super::node::{lock, MeshNode};
use crate::config::{DiscoverySettings, Topology};
use crate::store::{
    DescriptorKey, DescriptorKind, DescriptorScope, LeaseToken, MeshDescriptor, OwnerId,
    OwnerLease, OwnerLeaseStatus,
};
use crate::wire::Admission;

/// What this node knows from the Location Store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryStatus {
    /// The other members of the mesh with a live lease, as of the last complete read,
    /// sorted by RID.
    pub members: Vec<MeshDescriptor>,
    /// Whether the last store call succeeded.
    pub store_reachable: bool,
    /// When the member list was last read completely.
    pub last_complete_read: Option<Instant>,
    /// Whether StoreFailureGrace has run out: the old list no longer keeps connection
    /// intents, and no new connection opens until the list is read again.
    pub grace_expired: bool,
    /// The descriptor revision this node last published, if any.
    pub published_revision: Option<u64>,
}

impl DiscoveryState {
    pub(super) fn prune_departed(&mut self, after: std::time::Duration) {
        self.departed.retain(|_, at| at.elapsed() < after);
    }
}

#[derive(Default)]
pub(crate) struct DiscoveryState {
    members: BTreeMap<String, MeshDescriptor>,
    complete_at: Option<Instant>,
    reachable: bool,
    grace_expired: bool,
    /// Members dropped because their lease is gone (and when); refused until they
    /// reappear, forgotten after twice the lease TTL (a fresh RID per start would grow the
    /// set forever).
    departed: HashMap<String, Instant>,
    dialers: HashMap<String, (DialTarget, CancellationToken)>,
    published: Option<(LeaseToken, u64)>,
    /// Another live node holds this node's RID.
    rid_taken_by: Option<OwnerId>,
}

/// The discovery side of one node.
pub(crate) struct Discovery {
    pub(crate) settings: DiscoverySettings,
    pub(crate) lease: Arc<OwnerLease>,
    state: Mutex<DiscoveryState>,
    /// Wakes the loop early (a weight change to publish).
    pub(crate) wake: Arc<Notify>,
}

impl Discovery {
    /// Discovery with its own owner lease, or with the lease of the process's RouteMesh
    /// node (ClientServer nodes publish and read under that one).
    pub(crate) fn new(settings: DiscoverySettings, lease: Option<Arc<OwnerLease>>) -> Self {
        Discovery {
            lease: lease.unwrap_or_else(|| OwnerLease::new(settings.lease)),
            settings,
            state: Mutex::new(DiscoveryState::default()),
            wake: Arc::new(Notify::new()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, DiscoveryState> {
        lock(&self.state)
    }

    /// The CURVE key member `rid` publishes, if it is a live member with one.
    pub(crate) fn member_key(&self, rid: &str) -> Option<crate::link::CurvePublicKey> {
        self.state().members.get(rid)?.curve_public_key()
    }

    pub(crate) fn status(&self) -> DiscoveryStatus {
        let s = self.state();
        DiscoveryStatus {
            members: s.members.values().cloned().collect(),
            store_reachable: s.reachable,
            last_complete_read: s.complete_at,
            grace_expired: s.grace_expired,
            published_revision: s.published.as_ref().map(|(_, rev)| *rev),
        }
    }

    pub(crate) fn lease_status(&self) -> OwnerLeaseStatus {
        self.lease.status()
    }

    /// Another live node holds our RID in the store.
    pub(crate) fn rid_taken_by(&self) -> Option<OwnerId> {
        self.state().rid_taken_by.clone()
    }
}

impl MeshNode {
    pub(crate) fn discovery(&self) -> Option<&Discovery> {
        self.discovery.as_ref()
    }

    /// The descriptors this node publishes and reads: its mesh, or its ClientServer
    /// channel's servers.
    fn descriptor_scope(&self) -> DescriptorScope {
        match self.topology() {
            Topology::RouteMesh => DescriptorScope {
                kind: DescriptorKind::MeshNode,
                scope: self.settings.mesh_name.clone(),
            },
            Topology::ClientServerServer | Topology::ClientServerClient => DescriptorScope {
                kind: DescriptorKind::ClientServer,
                scope: self
                    .settings
                    .channels
                    .keys()
                    .next()
                    .cloned()
                    .unwrap_or_default(),
            },
        }
    }

    fn descriptor_key(&self) -> DescriptorKey {
        DescriptorKey {
            scope: self.descriptor_scope(),
            id: self.settings.rid.clone(),
        }
    }

    /// Whether this node publishes a descriptor (RouteMesh members and ClientServer
    /// servers) and whether it reads the others' (RouteMesh members and ClientServer
    /// clients).
    pub(super) fn publishes(&self) -> bool {
        match self.topology() {
            Topology::RouteMesh => self.settings.mesh,
            Topology::ClientServerServer => true,
            Topology::ClientServerClient => false,
        }
    }

    fn reads(&self) -> bool {
        match self.topology() {
            Topology::RouteMesh => self.settings.mesh,
            Topology::ClientServerServer => false,
            Topology::ClientServerClient => true,
        }
    }

    fn descriptor(&self) -> MeshDescriptor {
        let Admission {
            mesh_name,
            rid,
            generation,
            revision,
            protocol,
            endpoint,
            channels,
            ..
        } = self.admission();
        MeshDescriptor {
            mesh_name,
            rid,
            generation,
            revision,
            endpoint,
            protocol,
            channels,
            curve_key: self.settings.security.public_key().map(|k| k.to_z85()),
        }
    }

    /// Whether a manual peer names `rid`: discovery leaves such peers alone.
    fn is_manual(&self, rid: &str) -> bool {
        self.settings
            .peers
            .iter()
            .any(|p| p.expected_rid.as_deref() == Some(rid))
    }

    /// Inbound admission against the store: a member known with another generation, or
    /// one whose lease is gone, is refused. Unknown RIDs pass (manual peers, or members
    /// not read yet); the handshake still proves who they are.
    pub(crate) fn stale_by_discovery(&self, adm: &Admission) -> Option<String> {
        if self.topology() != Topology::RouteMesh {
            return None;
        }
        let discovery = self.discovery()?;
        if self.is_manual(&adm.rid) {
            return None;
        }
        let s = discovery.state();
        if s.departed.contains_key(&adm.rid) {
            return Some(format!("{}'s owner lease is gone", adm.rid));
        }
        match s.members.get(&adm.rid) {
            Some(d) if d.generation != adm.generation => Some(format!(
                "{} has lifecycle generation {} in the store, {} in its hello",
                adm.rid, d.generation, adm.generation
            )),
            _ => None,
        }
    }

    /// Runs discovery until shutdown: publish, read, apply, wait.
    pub(crate) fn spawn_discovery(self: &Arc<Self>) {
        let Some(discovery) = self.discovery() else {
            return;
        };
        if self.topology() == Topology::RouteMesh {
            // One lease per process: ClientServer nodes act under the RouteMesh node's.
            let store = discovery.settings.store.clone();
            let lease = discovery.lease.clone();
            self.background
                .spawn(lease.keep(store, self.cancel.clone()));
        }
        let me = Arc::downgrade(self);
        let cancel = self.cancel.clone();
        let interval = discovery.settings.interval;
        let mut lease_changes = discovery.lease.subscribe();
        let wake_up = discovery.wake.clone();
        self.background.spawn(async move {
            loop {
                let Some(node) = me.upgrade() else { return };
                node.discovery_round().await;
                drop(node);
                let wake = wake_up.notified();
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(interval) => {}
                    _ = wake => {}
                    changed = lease_changes.changed() => if changed.is_err() { return },
                }
            }
        });
    }

    async fn discovery_round(self: &Arc<Self>) {
        if self.publishes() {
            self.publish_descriptor().await;
        }
        if !self.reads() {
            return;
        }
        match self.read_members().await {
            Ok(entries) => self.apply_members(entries),
            Err(e) => self.store_outage(e),
        }
    }

    /// At shutdown: withdraw the descriptor and release the lease (best effort).
    pub(crate) async fn leave_store(&self) {
        let Some(discovery) = self.discovery() else {
            return;
        };
        let store = discovery.settings.store.as_ref();
        let published = discovery.state().published.take();
        if let Some((token, _)) = published {
            let key = self.descriptor_key();
            let withdraw = store.withdraw_descriptor(&token, &key);
            match tokio::time::timeout(discovery.settings.lease.renew_timeout, withdraw).await {
                Ok(Ok(_)) => tracing::info!(rid = %self.settings.rid, "descriptor withdrawn"),
                _ => {
                    tracing::warn!(rid = %self.settings.rid, "descriptor withdraw failed; it stops counting when the lease expires")
                }
            }
        }
        if self.topology() == Topology::RouteMesh {
            discovery.lease.release(store).await;
        }
        for (_, (_, cancel)) in discovery.state().dialers.drain() {
            cancel.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn departed_members_are_forgotten_after_the_window() {
        let mut state = DiscoveryState::default();
        state
            .departed
            .insert("old".into(), Instant::now() - Duration::from_secs(60));
        state.departed.insert("recent".into(), Instant::now());
        state.prune_departed(Duration::from_secs(30));
        assert!(!state.departed.contains_key("old"));
        assert!(state.departed.contains_key("recent"));
    }
}
