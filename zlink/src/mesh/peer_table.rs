//! PeerTable: the admitted peers of one node (keyed by RID), the RIDs it may wait for, the
//! CURVE key that proved each RID, and per-channel candidate snapshots for select-one.
//!
//! Changes go out as typed [`PeerEvent`]s on a broadcast channel. The candidate snapshot
//! of a channel is rebuilt when a peer with that channel is admitted, updated or lost, so
//! a call picks from a ready list with one lock and no allocation.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::broadcast;

use super::key_bindings::KeyBindings;
use super::select::SmoothWeighted;
use crate::link::{ConnId, Connection, CurvePublicKey};
use crate::sync::{LockUnpoisoned, RwLockUnpoisoned};
use crate::telemetry::{EventHub, Happened, PeerMeter};
use crate::wire::{Admission, RejectReason};

/// What a [`PeerTable`] announces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PeerEvent {
    /// A peer was admitted.
    Ready { rid: Arc<str>, generation: u64 },
    /// A ready peer's advertised weights changed.
    WeightsChanged { rid: Arc<str> },
    /// A peer's connection ended.
    Lost { rid: Arc<str> },
}

/// The way to one ready peer: its RID, the connection that proved it and the largest
/// message both sides accept. Cheap to clone.
#[derive(Clone)]
pub(crate) struct PeerLink {
    rid: Arc<str>,
    conn: Arc<dyn Connection>,
    max_message: usize,
}

impl PeerLink {
    pub(crate) fn rid(&self) -> &Arc<str> {
        &self.rid
    }

    pub(crate) fn conn(&self) -> &Arc<dyn Connection> {
        &self.conn
    }

    /// The smaller of this node's message cap and the peer's.
    pub(crate) fn max_message(&self) -> usize {
        self.max_message
    }
}

impl std::fmt::Debug for PeerLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerLink")
            .field("rid", &self.rid)
            .field("conn", &self.conn.id())
            .finish()
    }
}

struct Peer {
    link: PeerLink,
    /// Claimed by the handshake but not confirmed yet (the connection is not ready, or the
    /// admit is not queued): it holds the RID but nobody may select or reach it.
    ready: bool,
    generation: u64,
    revision: u64,
    endpoint: String,
    channels: HashMap<Arc<str>, u32>,
}

#[derive(Default)]
struct Peers {
    by_rid: HashMap<Arc<str>, Peer>,
    by_conn: HashMap<ConnId, Arc<str>>,
    /// RIDs node-direct may wait for (configured, or seen once).
    known: HashSet<Arc<str>>,
}

/// Waits for the next peer event (any change, or a lag that may hide several): the loop
/// of every "wait until the peers look like this".
pub(crate) async fn next_event(events: &mut broadcast::Receiver<PeerEvent>) {
    match events.recv().await {
        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
        // The table is gone with its node: nothing will change any more.
        Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
    }
}

/// How an update from a ready peer was taken.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum UpdateOutcome {
    Applied,
    /// Not newer than what is applied.
    Stale,
    /// The update names another RID or generation: a protocol error.
    IdentityChanged,
    /// The connection is not (or no longer) the peer's.
    Unknown,
}

/// Peers kept in the known set at most before pruning to configured and connected ones.
const KEEP_KNOWN_AT_MOST: usize = 1024;

/// The admitted peers of one node.
pub(crate) struct PeerTable {
    peers: RwLock<Peers>,
    selectors: Mutex<HashMap<Arc<str>, SmoothWeighted<PeerLink>>>,
    keys: KeyBindings,
    configured: HashSet<Arc<str>>,
    local_max_message: usize,
    events: broadcast::Sender<PeerEvent>,
    meter: Arc<PeerMeter>,
    /// The node's status stream.
    node_events: Arc<EventHub>,
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read_unpoisoned()
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write_unpoisoned()
}

/// A peer's advertised weights, each clamped to 0..=MAX_WEIGHT: an admitted peer cannot
/// draw more than the largest share by claiming a huge weight.
fn clamped(channels: Vec<(String, u32)>) -> HashMap<Arc<str>, u32> {
    channels
        .into_iter()
        .map(|(name, weight)| (Arc::from(name), weight.min(super::MAX_WEIGHT)))
        .collect()
}

impl PeerTable {
    /// A table whose node caps messages at `local_max_message` and may always wait for the
    /// `configured` RIDs.
    pub(crate) fn new(
        configured: impl IntoIterator<Item = String>,
        local_max_message: usize,
    ) -> Self {
        let configured: HashSet<Arc<str>> = configured.into_iter().map(Arc::from).collect();
        let (events, _) = broadcast::channel(256);
        PeerTable {
            peers: RwLock::new(Peers {
                known: configured.clone(),
                ..Peers::default()
            }),
            selectors: Mutex::new(HashMap::new()),
            keys: KeyBindings::default(),
            configured,
            local_max_message,
            events,
            meter: Arc::new(PeerMeter::unregistered()),
            node_events: Arc::default(),
        }
    }

    /// This table, counting its peers in `meter`.
    /// This table, counting its peers in `meter` and telling `node_events` who came and
    /// went.
    pub(crate) fn metered(mut self, meter: Arc<PeerMeter>, node_events: Arc<EventHub>) -> Self {
        meter.counted(self.configured.len(), 0, 0);
        self.meter = meter;
        self.node_events = node_events;
        self
    }

    /// Counts the peers as `peers` has them now.
    fn count(&self, peers: &Peers) {
        let ready = peers.by_rid.values().filter(|p| p.ready).count();
        self.meter
            .counted(self.configured.len(), peers.by_rid.len(), ready);
    }

    /// Typed peer events from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<PeerEvent> {
        self.events.subscribe()
    }

    fn announce(&self, event: PeerEvent) {
        self.node_events.emit(|| match &event {
            PeerEvent::Ready { rid, .. } => Happened::PeerReady {
                peer: rid.to_string(),
            },
            PeerEvent::WeightsChanged { rid } => Happened::PeerWeightsChanged {
                peer: rid.to_string(),
            },
            PeerEvent::Lost { rid } => Happened::PeerLost {
                peer: rid.to_string(),
            },
        });
        // No subscriber is fine.
        let _ = self.events.send(event);
    }

    /// Claims the admission's RID for `conn`. Claiming the RID and binding its CURVE key
    /// happen under the table's lock, so two connections racing for one RID cannot both
    /// win; the loser gets the reason. The peer is not selectable until
    /// [`confirm`](Self::confirm).
    pub(crate) fn admit(
        &self,
        conn: &Arc<dyn Connection>,
        adm: Admission,
    ) -> Result<PeerLink, (RejectReason, String)> {
        let rid: Arc<str> = Arc::from(adm.rid.as_str());
        let link = {
            let mut peers = write(&self.peers);
            if peers
                .by_rid
                .get(&rid)
                .is_some_and(|p| p.link.conn.id() != conn.id())
            {
                let detail = format!("rid {rid} already has a live connection");
                return Err((RejectReason::DuplicateConnection, detail));
            }
            if let Some(key) = conn.peer_key() {
                let live = |rid: &str| peers.by_rid.contains_key(rid);
                self.keys
                    .bind(&rid, key, live)
                    .map_err(|detail| (RejectReason::IdentityMismatch, detail))?;
            }
            let remote = adm
                .max_message
                .and_then(|m| usize::try_from(m).ok())
                .unwrap_or(usize::MAX);
            let link = PeerLink {
                rid: rid.clone(),
                conn: conn.clone(),
                max_message: remote.min(self.local_max_message),
            };
            let peer = Peer {
                link: link.clone(),
                ready: false,
                generation: adm.generation,
                revision: adm.revision,
                endpoint: adm.endpoint,
                channels: clamped(adm.channels),
            };
            peers.by_conn.insert(conn.id(), rid.clone());
            peers.by_rid.insert(rid.clone(), peer);
            self.count(&peers);
            link
        };
        Ok(link)
    }

    /// The claimed peer on `conn` is ready: it becomes selectable and reachable, and the
    /// `Ready` event goes out. False when the claim is gone (the connection ended).
    pub(crate) fn confirm(&self, conn: ConnId) -> bool {
        let (rid, generation) = {
            let mut peers = write(&self.peers);
            let Some(rid) = peers.by_conn.get(&conn).cloned() else {
                return false;
            };
            let Some(peer) = peers.by_rid.get_mut(&rid) else {
                return false;
            };
            peer.ready = true;
            let generation = peer.generation;
            let channels: Vec<Arc<str>> = peer.channels.keys().cloned().collect();
            peers.known.insert(rid.clone());
            self.rebuild(&peers, channels);
            self.count(&peers);
            (rid, generation)
        };
        self.announce(PeerEvent::Ready { rid, generation });
        true
    }

    /// Removes the peer admitted on `conn`, if any; returns its RID.
    pub(crate) fn remove_conn(&self, conn: ConnId) -> Option<Arc<str>> {
        let (rid, was_ready) = {
            let mut peers = write(&self.peers);
            let rid = peers.by_conn.remove(&conn)?;
            let peer = peers.by_rid.remove(&rid)?;
            let was_ready = peer.ready;
            self.rebuild(&peers, peer.channels.into_keys());
            self.count(&peers);
            if peers.known.len() > KEEP_KNOWN_AT_MOST {
                // A mesh where every start brings a fresh RID would grow the known set
                // forever: past a bound, only configured and connected RIDs stay.
                let Peers { by_rid, known, .. } = &mut *peers;
                known.retain(|r| by_rid.contains_key(r) || self.configured.contains(r));
            }
            (rid, was_ready)
        };
        if was_ready {
            self.announce(PeerEvent::Lost { rid: rid.clone() });
        }
        Some(rid)
    }

    /// A newer admission snapshot (weights) from the peer on `conn`.
    pub(crate) fn update(&self, conn: ConnId, adm: Admission) -> UpdateOutcome {
        let Some(rid) = self.rid_of(conn) else {
            return UpdateOutcome::Unknown;
        };
        if *adm.rid != *rid {
            return UpdateOutcome::IdentityChanged;
        }
        self.set_weights(&rid, Some(conn), adm.generation, adm.revision, adm.channels)
    }

    /// Weights for `rid` read from its published descriptor: applied when they belong to
    /// the connected lifecycle and are newer than what the connection delivered.
    pub(crate) fn apply_weights(
        &self,
        rid: &str,
        generation: u64,
        revision: u64,
        channels: Vec<(String, u32)>,
    ) -> bool {
        match self.set_weights(rid, None, generation, revision, channels) {
            UpdateOutcome::Applied => true,
            UpdateOutcome::Stale | UpdateOutcome::Unknown | UpdateOutcome::IdentityChanged => false,
        }
    }

    fn set_weights(
        &self,
        rid: &str,
        conn: Option<ConnId>,
        generation: u64,
        revision: u64,
        channels: Vec<(String, u32)>,
    ) -> UpdateOutcome {
        let rid = {
            let mut peers = write(&self.peers);
            let Some(peer) = peers.by_rid.get_mut(rid) else {
                return UpdateOutcome::Unknown;
            };
            if conn.is_some_and(|c| c != peer.link.conn.id()) {
                return UpdateOutcome::Unknown;
            }
            if generation != peer.generation {
                return match conn {
                    Some(_) => UpdateOutcome::IdentityChanged,
                    None => UpdateOutcome::Stale,
                };
            }
            if revision <= peer.revision {
                return UpdateOutcome::Stale;
            }
            peer.revision = revision;
            let new = clamped(channels);
            let mut touched: Vec<Arc<str>> = peer.channels.keys().cloned().collect();
            touched.extend(new.keys().cloned());
            peer.channels = new;
            let rid = peer.link.rid.clone();
            self.rebuild(&peers, touched);
            rid
        };
        self.announce(PeerEvent::WeightsChanged { rid });
        UpdateOutcome::Applied
    }

    /// The connection and lifecycle generation `rid` is admitted with.
    pub(crate) fn identity(&self, rid: &str) -> Option<(ConnId, u64)> {
        read(&self.peers)
            .by_rid
            .get(rid)
            .map(|p| (p.link.conn.id(), p.generation))
    }

    /// Rebuilds the candidate snapshots of `channels` from `peers`.
    fn rebuild(&self, peers: &Peers, channels: impl IntoIterator<Item = Arc<str>>) {
        let mut selectors = self.selectors.lock_unpoisoned();
        for channel in channels {
            let candidates: Vec<_> = peers
                .by_rid
                .values()
                .filter(|p| p.ready)
                .filter_map(|p| {
                    let weight = *p.channels.get(&channel)?;
                    Some((p.link.rid.clone(), weight, p.link.clone()))
                })
                .collect();
            selectors
                .entry(channel)
                .or_default()
                .set_candidates(candidates);
        }
        selectors.retain(|_, s| !s.is_empty());
    }

    /// Select-one among ready peers serving `channel` with weight > 0, skipping the
    /// connections in `excluded`.
    pub(crate) fn select(&self, channel: &str, excluded: &[ConnId]) -> Option<PeerLink> {
        self.selectors
            .lock_unpoisoned()
            .get_mut(channel)?
            .pick(|link| excluded.contains(&link.conn.id()))
    }

    /// The link to `rid`, when it is ready.
    pub(crate) fn link(&self, rid: &str) -> Option<PeerLink> {
        read(&self.peers)
            .by_rid
            .get(rid)
            .filter(|p| p.ready)
            .map(|p| p.link.clone())
    }

    /// The RID admitted on `conn`.
    pub(crate) fn rid_of(&self, conn: ConnId) -> Option<Arc<str>> {
        read(&self.peers).by_conn.get(&conn).cloned()
    }

    /// Every ready peer's link.
    pub(crate) fn links(&self) -> Vec<PeerLink> {
        read(&self.peers)
            .by_rid
            .values()
            .filter(|p| p.ready)
            .map(|p| p.link.clone())
            .collect()
    }

    /// Whether node-direct to `rid` may wait for it (configured, ready or seen).
    pub(crate) fn is_known(&self, rid: &str) -> bool {
        read(&self.peers).known.contains(rid)
    }

    /// Whether `rid` is admitted on a connection other than `conn`.
    pub(crate) fn admitted_elsewhere(&self, rid: &str, conn: ConnId) -> bool {
        read(&self.peers)
            .by_rid
            .get(rid)
            .is_some_and(|p| p.link.conn.id() != conn)
    }

    /// The CURVE key that first proved `rid`.
    pub(crate) fn bound_key(&self, rid: &str) -> Option<CurvePublicKey> {
        self.keys.get(rid)
    }

    /// A snapshot of every ready peer, sorted by RID.
    pub(crate) fn statuses(&self) -> Vec<PeerStatus> {
        let mut out: Vec<PeerStatus> = read(&self.peers)
            .by_rid
            .values()
            .filter(|p| p.ready)
            .map(PeerStatus::of)
            .collect();
        out.sort_by(|a, b| a.rid.cmp(&b.rid));
        out
    }

    /// The links of the ready peers serving `channel` with weight > 0, at this moment
    /// (Logical Multicast's targets; weight 0 and draining peers are left out).
    pub(crate) fn servers(&self, channel: &str) -> Vec<PeerLink> {
        read(&self.peers)
            .by_rid
            .values()
            .filter(|p| p.ready && p.channels.get(channel).is_some_and(|w| *w > 0))
            .map(|p| p.link.clone())
            .collect()
    }

    /// A call found no server of `channel` to select: counted by why (`no_member`: no
    /// ready peer serves it; `draining`: those that do are at weight 0 or were tried).
    pub(crate) fn selection_failed(&self, channel: &str) {
        let serving = read(&self.peers)
            .by_rid
            .values()
            .any(|p| p.ready && p.channels.contains_key(channel));
        self.meter.selection_failed(!serving);
    }

    /// The number of ready peers serving `channel` with weight > 0.
    pub(crate) fn candidates(&self, channel: &str) -> usize {
        read(&self.peers)
            .by_rid
            .values()
            .filter(|p| p.ready && p.channels.get(channel).is_some_and(|w| *w > 0))
            .count()
    }
}

/// A snapshot of one ready peer, for monitoring and tests.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PeerStatus {
    /// The peer's RID.
    pub rid: String,
    /// Its lifecycle generation (a restart changes it).
    pub generation: u64,
    /// Its descriptor revision as last applied here.
    pub revision: u64,
    /// The endpoint it advertised.
    pub endpoint: String,
    /// Its server channels and weights as known here, sorted by name.
    pub channels: Vec<(String, u32)>,
}

impl PeerStatus {
    fn of(p: &Peer) -> Self {
        let mut channels: Vec<_> = p
            .channels
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        channels.sort();
        PeerStatus {
            rid: p.link.rid.to_string(),
            generation: p.generation,
            revision: p.revision,
            endpoint: p.endpoint.clone(),
            channels,
        }
    }

    /// The weight this node currently uses for the peer on `channel`.
    pub fn weight(&self, channel: &str) -> Option<u32> {
        self.channels
            .iter()
            .find(|(name, _)| name == channel)
            .map(|(_, w)| *w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{Frames, LinkError};

    /// A connection that goes nowhere: the table only needs its id and key.
    struct Idle(ConnId);

    #[async_trait::async_trait]
    impl Connection for Idle {
        fn id(&self) -> ConnId {
            self.0
        }
        async fn send(&self, _frames: Frames) -> Result<(), LinkError> {
            Ok(())
        }
        fn close(&self) {}
    }

    fn conn(id: ConnId) -> Arc<dyn Connection> {
        Arc::new(Idle(id))
    }

    fn admission(rid: &str, generation: u64, revision: u64, channels: &[(&str, u32)]) -> Admission {
        Admission {
            mesh_name: "m".into(),
            rid: rid.into(),
            generation,
            revision,
            protocol: crate::wire::PROTOCOL_MAJOR,
            endpoint: format!("tcp://{rid}"),
            channels: channels.iter().map(|(c, w)| (c.to_string(), *w)).collect(),
            max_message: Some(1024),
        }
    }

    fn admit_ready(table: &PeerTable, id: ConnId, adm: Admission) -> PeerLink {
        let link = table.admit(&conn(id), adm).expect("admitted");
        assert!(table.confirm(id));
        link
    }

    #[test]
    fn a_claimed_peer_is_not_selectable_until_confirmed() {
        let table = PeerTable::new(Vec::new(), 4096);
        table
            .admit(&conn(1), admission("a", 7, 1, &[("greet", 100)]))
            .expect("claimed");
        assert!(table.select("greet", &[]).is_none());
        assert!(table.link("a").is_none());
        assert!(table.statuses().is_empty());
        assert!(table.admitted_elsewhere("a", 2), "the claim holds the RID");
        assert!(table.confirm(1));
        assert_eq!(
            table.link("a").map(|l| l.rid().to_string()).as_deref(),
            Some("a")
        );
        assert!(!table.confirm(9), "no claim on that connection");
    }

    fn picks(table: &PeerTable, channel: &str, n: usize) -> Vec<String> {
        (0..n)
            .filter_map(|_| table.select(channel, &[]))
            .map(|l| l.rid().to_string())
            .collect()
    }

    #[test]
    fn the_candidate_snapshot_follows_admission_updates_and_loss() {
        let table = PeerTable::new(Vec::new(), 4096);
        assert!(table.select("greet", &[]).is_none());
        admit_ready(&table, 1, admission("a", 7, 1, &[("greet", 100)]));
        admit_ready(&table, 2, admission("b", 8, 1, &[("greet", 300)]));
        assert_eq!(picks(&table, "greet", 4), ["b", "a", "b", "b"]);
        // Weight 0 drains b: no new selections.
        let drained = table.update(2, admission("b", 8, 2, &[("greet", 0)]));
        assert_eq!(drained, UpdateOutcome::Applied);
        assert_eq!(picks(&table, "greet", 3), ["a", "a", "a"]);
        // Losing a leaves nobody.
        assert_eq!(table.remove_conn(1).as_deref(), Some("a"));
        assert!(table.select("greet", &[]).is_none());
        assert_eq!(table.candidates("greet"), 0);
    }

    #[test]
    fn an_update_must_be_newer_and_keep_the_identity() {
        let table = PeerTable::new(Vec::new(), 4096);
        admit_ready(&table, 1, admission("a", 7, 2, &[("greet", 100)]));
        let stale = table.update(1, admission("a", 7, 2, &[("greet", 5)]));
        assert_eq!(stale, UpdateOutcome::Stale);
        let other_generation = table.update(1, admission("a", 9, 3, &[]));
        assert_eq!(other_generation, UpdateOutcome::IdentityChanged);
        let other_rid = table.update(1, admission("z", 7, 3, &[]));
        assert_eq!(other_rid, UpdateOutcome::IdentityChanged);
        assert_eq!(
            table.update(5, admission("a", 7, 3, &[])),
            UpdateOutcome::Unknown
        );
        assert_eq!(table.statuses()[0].weight("greet"), Some(100));
    }

    #[test]
    fn advertised_weights_are_clamped_and_the_link_carries_the_smaller_cap() {
        let table = PeerTable::new(Vec::new(), 4096);
        let link = admit_ready(&table, 1, admission("a", 7, 1, &[("greet", u32::MAX)]));
        assert_eq!(link.max_message(), 1024, "the peer's cap is smaller");
        assert_eq!(
            table.statuses()[0].weight("greet"),
            Some(crate::mesh::MAX_WEIGHT)
        );
    }

    #[test]
    fn one_rid_one_live_connection() {
        let table = PeerTable::new(Vec::new(), 4096);
        admit_ready(&table, 1, admission("a", 7, 1, &[]));
        let second = table.admit(&conn(2), admission("a", 7, 1, &[]));
        assert!(matches!(
            second,
            Err((RejectReason::DuplicateConnection, _))
        ));
        assert!(table.admitted_elsewhere("a", 2));
        assert!(!table.admitted_elsewhere("a", 1));
    }

    #[tokio::test]
    async fn changes_are_announced_as_typed_events() {
        let table = PeerTable::new(Vec::new(), 4096);
        let mut events = table.subscribe();
        admit_ready(&table, 1, admission("a", 7, 1, &[("greet", 1)]));
        table.update(1, admission("a", 7, 2, &[("greet", 2)]));
        table.remove_conn(1);
        let rid: Arc<str> = Arc::from("a");
        assert_eq!(
            events.recv().await.expect("ready"),
            PeerEvent::Ready {
                rid: rid.clone(),
                generation: 7
            }
        );
        assert_eq!(
            events.recv().await.expect("weights"),
            PeerEvent::WeightsChanged { rid: rid.clone() }
        );
        assert_eq!(events.recv().await.expect("lost"), PeerEvent::Lost { rid });
    }

    #[test]
    fn configured_rids_stay_known_after_loss() {
        let table = PeerTable::new(vec!["a".to_string()], 4096);
        assert!(table.is_known("a"));
        assert!(!table.is_known("b"));
        admit_ready(&table, 1, admission("b", 7, 1, &[]));
        table.remove_conn(1);
        assert!(
            table.is_known("b"),
            "seen once, node-direct may wait for it"
        );
    }

    #[test]
    fn the_known_set_stays_bounded_and_keeps_configured_connected_and_recent_rids() {
        let table = PeerTable::new(vec!["configured".to_string()], 4096);
        admit_ready(&table, 1, admission("stays-1", 7, 1, &[]));
        admit_ready(&table, 2, admission("stays-2", 7, 1, &[]));
        let known = |t: &PeerTable| read(&t.peers).known.len();
        // Short-lived peers, each with a fresh RID (a mesh whose nodes restart often).
        let mut recent: Vec<String> = Vec::new();
        let mut forgotten: Vec<String> = Vec::new();
        let mut prunes = 0;
        for i in 0..3 * KEEP_KNOWN_AT_MOST {
            let rid = format!("gone-{i}");
            let id = 100 + i as ConnId;
            admit_ready(&table, id, admission(&rid, 7, 1, &[]));
            assert!(known(&table) <= KEEP_KNOWN_AT_MOST + 1);
            let before = known(&table);
            assert_eq!(table.remove_conn(id).as_deref(), Some(rid.as_str()));
            assert!(
                known(&table) <= KEEP_KNOWN_AT_MOST,
                "the known set outgrew its bound"
            );
            if known(&table) < before {
                prunes += 1;
                forgotten.append(&mut recent);
                forgotten.push(rid);
            } else {
                recent.push(rid);
            }
            for always in ["configured", "stays-1", "stays-2"] {
                assert!(table.is_known(always), "{always} was pruned");
            }
        }
        assert!(
            prunes >= 2,
            "{prunes} prunes for {} RIDs",
            3 * KEEP_KNOWN_AT_MOST
        );
        // RIDs that left since the last prune are still known (node-direct may wait for
        // them); the older ones are gone.
        assert!(!recent.is_empty());
        assert!(recent.iter().all(|rid| table.is_known(rid)));
        assert!(forgotten.iter().all(|rid| !table.is_known(rid)));
        assert_eq!(known(&table), 3 + recent.len());
    }
}
