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

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use tokio::sync::{watch, Notify};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::identity::NodeIdentity;
use super::links::{DialTarget, Links, Membership};
use super::policy::RolePolicy;
use super::{DiscoverySettings, MeshSettings};
use crate::link::CurvePublicKey;
use crate::store::{DescriptorKey, LeaseToken, MeshDescriptor, OwnerId, OwnerLease};
use crate::sync::LockUnpoisoned;
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

/// The discovery side of one node: it publishes the node's descriptor and turns the
/// member list into dial intents on the node's [`Links`].
pub(crate) struct Discovery {
    settings: DiscoverySettings,
    lease: Arc<OwnerLease>,
    state: Mutex<DiscoveryState>,
    /// Wakes the loop early (a weight change to publish, a hello from an unknown RID).
    wake: Arc<Notify>,
    /// Counts the changes of the member list, for whoever waits on one (placement
    /// readiness).
    members_changed: watch::Sender<u64>,
    identity: Arc<NodeIdentity>,
    policy: RolePolicy,
    node_settings: Arc<MeshSettings>,
    links: Arc<Links>,
    /// Stops the loops that keep the lease and the descriptor up (a child of the node's
    /// stop, set when they start; a leave cancels it first).
    stop: std::sync::OnceLock<CancellationToken>,
    /// Those loops: a leave waits for them, so none renews, claims or publishes again
    /// after the release.
    background: TaskTracker,
}

impl Discovery {
    /// Discovery with its own owner lease, or with the lease of the process's RouteMesh
    /// node (ClientServer nodes publish and read under that one).
    pub(crate) fn new(
        settings: DiscoverySettings,
        lease: Option<Arc<OwnerLease>>,
        node_settings: Arc<MeshSettings>,
        identity: Arc<NodeIdentity>,
        links: Arc<Links>,
    ) -> Arc<Self> {
        let discovery = Arc::new(Discovery {
            lease: lease.unwrap_or_else(|| OwnerLease::new(settings.lease)),
            settings,
            state: Mutex::new(DiscoveryState::default()),
            wake: Arc::new(Notify::new()),
            members_changed: watch::Sender::new(0),
            identity,
            policy: links.policy().clone(),
            node_settings,
            links,
            stop: std::sync::OnceLock::new(),
            background: TaskTracker::new(),
        });
        let membership: Arc<dyn Membership> = discovery.clone();
        discovery.links.set_membership(Arc::downgrade(&membership));
        discovery
    }

    /// The owner lease this node acts under.
    pub(crate) fn lease(&self) -> &Arc<OwnerLease> {
        &self.lease
    }

    /// How often the member list is read.
    pub(crate) fn interval(&self) -> std::time::Duration {
        self.settings.interval
    }

    /// Publishes again soon (a weight change raised the revision).
    pub(crate) fn republish(&self) {
        self.wake.notify_one();
    }

    /// Publishes the descriptor now if it changed (bounded by the renew timeout), for a
    /// change others must see before the next step (a shutdown's Draining).
    pub(crate) async fn publish_now(&self) {
        publish::publish_descriptor(self).await;
    }

    fn state(&self) -> std::sync::MutexGuard<'_, DiscoveryState> {
        self.state.lock_unpoisoned()
    }

    /// Changes whenever the member list does.
    pub(crate) fn watch_members(&self) -> watch::Receiver<u64> {
        self.members_changed.subscribe()
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

    /// Another live node holds our RID in the store.
    pub(crate) fn rid_taken_by(&self) -> Option<OwnerId> {
        self.state().rid_taken_by.clone()
    }
}

impl Discovery {
    fn descriptor_key(&self) -> DescriptorKey {
        DescriptorKey {
            scope: self.policy.descriptor_scope(),
            id: self.identity.rid().to_string(),
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
        } = self.identity.admission();
        MeshDescriptor {
            mesh_name,
            rid,
            generation,
            revision,
            endpoint,
            protocol,
            channels,
            curve_key: self.node_settings.security.public_key().map(|k| k.to_z85()),
            spot_types: self.node_settings.served_objects.spot_types.clone(),
            instance_spot_types: self
                .node_settings
                .served_objects
                .instance_spot_types
                .clone(),
            actor_types: self.node_settings.served_objects.actor_types.clone(),
            entry_spot: self.node_settings.served_objects.entry_spot.clone(),
            placement_weight: self.node_settings.placement_weight,
            draining: self.identity.is_draining(),
        }
    }

    /// Whether a manual peer names `rid`: discovery leaves such peers alone.
    fn is_manual(&self, rid: &str) -> bool {
        self.node_settings
            .peers
            .iter()
            .any(|p| p.expected_rid.as_deref() == Some(rid))
    }

    /// With a store: claims the owner lease (when this node holds it) and publishes the
    /// descriptor once, each bounded by the renew timeout. A store that does not answer
    /// does not stop the start: the loop keeps trying.
    pub(crate) async fn join(&self) {
        if self.lease.claim(self.settings.store.as_ref()).await {
            publish::publish_descriptor(self).await;
        }
    }

    /// Runs discovery until `cancel`: publish, read, apply, wait. The node's owner lease
    /// is kept alive alongside when this node holds it.
    pub(crate) fn spawn(self: &Arc<Self>, cancel: CancellationToken) {
        let cancel = cancel.child_token();
        let _ = self.stop.set(cancel.clone());
        if self.policy.owns_lease() {
            // One lease per process: ClientServer nodes act under the RouteMesh node's.
            let lateness =
                crate::telemetry::lease_lateness(self.identity.mesh_name(), self.identity.rid());
            let keep =
                self.lease
                    .clone()
                    .keep(self.settings.store.clone(), cancel.clone(), lateness);
            self.links
                .spawn_background(self.background.track_future(keep));
        }
        let me = Arc::downgrade(self);
        let interval = self.settings.interval;
        let mut lease_changes = self.lease.subscribe();
        let wake_up = self.wake.clone();
        let rounds = self.background.track_future(async move {
            loop {
                let Some(discovery) = me.upgrade() else {
                    return;
                };
                discovery.round().await;
                drop(discovery);
                let wake = wake_up.notified();
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(interval) => {}
                    _ = wake => {}
                    changed = lease_changes.changed() => if changed.is_err() { return },
                }
            }
        });
        self.links.spawn_background(rounds);
    }

    async fn round(self: &Arc<Self>) {
        if self.policy.publishes() {
            publish::publish_descriptor(self).await;
        }
        if !self.policy.reads() {
            return;
        }
        let scope = self.policy.descriptor_scope();
        let store = self.settings.store.as_ref();
        match crate::store::read_scope(store, &scope, self.settings.lease.renew_timeout).await {
            Ok(entries) => apply::apply_members(self, entries),
            Err(e) => apply::store_outage(self, e),
        }
    }

    /// At shutdown: withdraw the descriptor and release the lease (best effort).
    pub(crate) async fn leave(&self) {
        let store = self.settings.store.as_ref();
        let rid = self.identity.rid();
        // A clean stop gives the store up to the lease TTL for both steps (past it the
        // lease expires by itself anyway), not one renewal's bound: a store slowed by load
        // must not leave the RID taken, or the node's restart is refused until then.
        let until = tokio::time::Instant::now() + self.settings.lease.ttl;
        // The loops stop first (each after the store call it has under way): a renew or a
        // claim after the release would keep the RID taken for another TTL.
        if let Some(stop) = self.stop.get() {
            stop.cancel();
        }
        self.background.close();
        if tokio::time::timeout_at(until, self.background.wait())
            .await
            .is_err()
        {
            tracing::warn!(rid = %rid, "discovery loops did not stop in time");
        }
        let published = self.state().published.take();
        if let Some((token, _)) = published {
            let key = self.descriptor_key();
            let withdraw = store.withdraw_descriptor(&token, &key);
            match tokio::time::timeout_at(until, withdraw).await {
                Ok(Ok(_)) => tracing::info!(rid = %rid, "descriptor withdrawn"),
                _ => {
                    tracing::warn!(rid = %rid, "descriptor withdraw failed; it stops counting when the lease expires")
                }
            }
        }
        if self.policy.owns_lease() {
            self.lease.release(store, until).await;
        }
        for (_, (_, cancel)) in self.state().dialers.drain() {
            cancel.cancel();
        }
    }
}

impl Membership for Discovery {
    /// Inbound admission against the store: a member known with another generation, or
    /// one whose lease is gone, is refused. Unknown RIDs pass (manual peers, or members
    /// not read yet); the handshake still proves who they are.
    fn refuses(&self, adm: &Admission) -> Option<String> {
        if !self.policy.owns_lease() || self.is_manual(&adm.rid) {
            return None;
        }
        let s = self.state();
        if s.departed.contains_key(&adm.rid) {
            return Some(format!("{}'s owner lease is gone", adm.rid));
        }
        match s.members.get(&adm.rid) {
            Some(d) if d.generation != adm.generation => Some(format!(
                "{} has lifecycle generation {} in the store, {} in its hello",
                adm.rid, d.generation, adm.generation
            )),
            Some(_) => None,
            None => {
                // A member that started after our last read: read the list now rather
                // than at the next interval, so what it serves is known as soon as its
                // connection is (one extra read however many hellos arrive meanwhile).
                if self.policy.reads() {
                    self.wake.notify_one();
                }
                None
            }
        }
    }

    fn published_key(&self, rid: &str) -> Option<CurvePublicKey> {
        self.member_key(rid)
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
