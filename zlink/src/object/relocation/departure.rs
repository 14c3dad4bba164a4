//! The source side of a move, per object: the **ingress hold** that keeps what arrives
//! after the seal, then the **relay** to the target, then the **Message Follow** route that
//! relays what still arrives on the old route for MessageFollowDuration.
//!
//! Every message for a departing object goes through one relay task, so it reaches the
//! target in the order the source accepted it: the saved queue, then the hold, then what
//! follows. A relay keeps the message's packet, payload, metadata, deadline and reply
//! capability (the reply comes back through this node), runs no handler here and reads no
//! store. It counts one more hop; past [`MAX_FOLLOW_HOPS`] the
//! message is `Unavailable`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::record::{FollowNotice, RelayReady};
use super::RelocationFaults;
use super::{HOLD_BYTES, HOLD_MESSAGES, MAX_FOLLOW_HOPS};
use crate::handler::PacketKind;
use crate::mesh::peer_table::PeerLink;
use crate::mesh::MeshNode;
use crate::object::authority::{OwnerFence, OwnerRoute};
use crate::object::id::{ObjectKey, ObjectKind};
use crate::object::live_object::{LiveObject, ObjectJob, ReplyTo};
use crate::object::lost_sends::{LostReason, LostSends};
use crate::object::owner_link::{route_fence, ObjectCommand, OwnerLink};
use crate::object::server::ObjectServer;
use crate::sync::LockUnpoisoned;
use crate::wire::{Command, Metadata, RouteFence};
use crate::{Error, ErrorKind};

/// One message for a departing object, as the source accepted it.
pub(crate) struct Held {
    pub(crate) packet: Arc<str>,
    pub(crate) kind: PacketKind,
    pub(crate) payload: Bytes,
    pub(crate) metadata: Metadata,
    pub(crate) deadline: Option<Instant>,
    pub(crate) reply: Option<ReplyTo>,
    /// The node it came from (`None`: this node), which a notice may go back to.
    pub(crate) sender: Option<String>,
    /// Relays before it reached this node.
    pub(crate) hops: u8,
}

impl Held {
    pub(crate) fn bytes(&self) -> usize {
        self.payload.len()
            + self
                .metadata
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>()
    }

    /// Ends the message with `error`: a request hears it; a one-way is counted as lost
    /// for `reason`, and logged.
    pub(crate) fn refuse(
        self,
        key: &ObjectKey,
        error: Error,
        lost: &LostSends,
        reason: LostReason,
    ) {
        if self.kind == PacketKind::Send {
            lost.record(key, &self.packet, reason, &error);
        }
        if let Some(reply) = self.reply {
            reply.send(Err(error));
        }
    }
}

/// Where the notice to one sender stands (seed 000 §2.5): at most one in flight, and none
/// again once one was sent, for as long as this route lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NoticeState {
    InFlight,
    SentUntilExpiry,
}

enum Phase {
    /// The move was cancelled before relay-ready: what was held is back in the object's
    /// queue, which admits again; nothing is taken here any more.
    Released,
    /// Sealed: what arrives waits here, in order, within the hold's bounds.
    Holding { held: VecDeque<Held>, bytes: usize },
    /// Relay-ready was accepted: everything goes to the target, in order. `until` is set
    /// when the owner change committed (the Message Follow window).
    Relaying {
        to: mpsc::UnboundedSender<RelayItem>,
        target_fence: OwnerFence,
        target_route: OwnerRoute,
        until: Option<Instant>,
        notices: HashMap<String, NoticeState>,
    },
}

/// One object's departure from this node.
pub(crate) struct Departure {
    pub(crate) key: ObjectKey,
    /// Where a one-way this departure cannot deliver is counted.
    lost: Arc<LostSends>,
    relayed: Arc<AtomicU64>,
    /// The fence messages for the old route carry.
    source_fence: OwnerFence,
    source_route: OwnerRoute,
    phase: Mutex<Phase>,
}

/// What the relay task sends, in order.
pub(crate) enum RelayItem {
    Message(Held),
    /// A request of the move itself (the cutover), after everything before it.
    Control {
        command: Command,
        payload: Bytes,
        done: oneshot::Sender<crate::Result<Bytes>>,
    },
    /// A barrier, then the notice to `sender` once the barrier's reply proves the
    /// relayed messages were admitted on the target.
    Notice {
        sender: String,
        notice: FollowNotice,
    },
}

/// The departures of one node, by object and the owner generation they leave from: an
/// object that comes back and leaves again has one route per visit, so a chain of moves
/// through this node keeps every link.
pub(crate) struct Departures {
    map: Mutex<HashMap<(ObjectKey, u64), Arc<Departure>>>,
    /// How many there are: the message path skips the lookup while there are none.
    count: AtomicUsize,
    /// The node's count of one-ways it could not deliver.
    lost: Arc<LostSends>,
    /// Messages relayed to a moved object's new owner, all departures together.
    relayed: Arc<AtomicU64>,
}

/// What became of a message offered to the departures.
#[allow(clippy::large_enum_variant)] // returned at once to the caller that owns the message
pub(crate) enum Offer {
    /// Not a departing object's (or not for its old route): the normal path takes it.
    NotDeparting(Held),
    /// Held, relayed, or refused with its answer given.
    Taken,
}

impl Departures {
    /// The departures of a node that counts its lost one-ways in `lost`.
    pub(crate) fn new(lost: Arc<LostSends>) -> Self {
        Departures {
            map: Mutex::new(HashMap::new()),
            count: AtomicUsize::new(0),
            lost,
            relayed: Arc::default(),
        }
    }

    /// Messages relayed so far by every departure of this node (the saved queue, the
    /// hold, and what followed on the old route).
    pub(crate) fn relayed(&self) -> u64 {
        self.relayed.load(Ordering::Relaxed)
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<(ObjectKey, u64), Arc<Departure>>> {
        self.map.lock_unpoisoned()
    }

    /// Starts holding for `key` (at its seal).
    pub(crate) fn hold(
        &self,
        key: &ObjectKey,
        source_fence: OwnerFence,
        source_route: OwnerRoute,
    ) -> Arc<Departure> {
        let slot = (key.clone(), source_fence.owner_generation);
        let departure = Arc::new(Departure {
            key: key.clone(),
            lost: self.lost.clone(),
            relayed: self.relayed.clone(),
            source_fence,
            source_route,
            phase: Mutex::new(Phase::Holding {
                held: VecDeque::new(),
                bytes: 0,
            }),
        });
        let mut map = self.map();
        if map.insert(slot, departure.clone()).is_none() {
            self.count.fetch_add(1, Ordering::Relaxed);
        }
        departure
    }

    /// Removes exactly this departure.
    pub(crate) fn remove(&self, departure: &Arc<Departure>) {
        let mut map = self.map();
        let slot = (
            departure.key.clone(),
            departure.source_fence.owner_generation,
        );
        if map.get(&slot).is_some_and(|d| Arc::ptr_eq(d, departure)) {
            map.remove(&slot);
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Whether `key` is departing (held or followed) on the route `fence`.
    pub(crate) fn get(&self, key: &ObjectKey, fence: &RouteFence) -> Option<Arc<Departure>> {
        if self.count.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let slot = (key.clone(), fence.owner_generation);
        let departure = self.map().get(&slot).cloned()?;
        (departure.source_fence.lease_generation == fence.lease_generation).then_some(departure)
    }

    /// Offers a message that arrived for `key` on the route `fence`. A message resolved
    /// for another incarnation than the one moving is refused as `InvalidOperation`: the
    /// follow route carries only work of the incarnation that moved (seed 000 §2.5).
    pub(crate) fn offer(&self, key: &ObjectKey, fence: &RouteFence, held: Held) -> Offer {
        match self.get(key, fence) {
            None => Offer::NotDeparting(held),
            Some(departure)
                if departure.source_fence.object_generation != fence.object_generation =>
            {
                let error = Error::new(
                    ErrorKind::InvalidOperation,
                    format!(
                        "{key} moved as generation {}, and the message was sent to generation {} {}",
                        departure.source_fence.object_generation,
                        fence.object_generation,
                        crate::object::direct::STALE_ROUTE
                    ),
                );
                held.refuse(key, error, &self.lost, LostReason::OtherIncarnation);
                Offer::Taken
            }
            Some(departure) => match departure.take(held) {
                Ok(()) => Offer::Taken,
                // The follow window closed: the old route is stale like any other.
                Err(held) => {
                    self.remove(&departure);
                    Offer::NotDeparting(held)
                }
            },
        }
    }
}

impl Departure {
    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase.lock_unpoisoned()
    }

    /// Holds or relays `held`; `Err` gives it back once the follow window has closed.
    #[allow(clippy::result_large_err)] // handed straight back to the caller, not stored
    fn take(&self, held: Held) -> Result<(), Held> {
        if held.hops >= MAX_FOLLOW_HOPS {
            let error = Error::new(
                ErrorKind::Unavailable,
                format!(
                    "{} moved more than {MAX_FOLLOW_HOPS} times within the follow window {}",
                    self.key,
                    crate::object::direct::STALE_ROUTE
                ),
            );
            held.refuse(&self.key, error, &self.lost, LostReason::FollowHops);
            return Ok(());
        }
        let mut phase = self.phase();
        match &mut *phase {
            Phase::Released => Err(held),
            Phase::Holding { held: queue, bytes } => {
                let size = held.bytes();
                if queue.len() >= HOLD_MESSAGES || *bytes + size > HOLD_BYTES {
                    drop(phase);
                    let error = Error::new(
                        ErrorKind::Unavailable,
                        format!("{} is moving and its hold is full", self.key),
                    );
                    held.refuse(&self.key, error, &self.lost, LostReason::Full);
                    return Ok(());
                }
                *bytes += size;
                queue.push_back(held);
                Ok(())
            }
            Phase::Relaying {
                to,
                target_fence,
                target_route,
                until,
                notices,
            } => {
                if until.is_some_and(|until| Instant::now() >= until) {
                    return Err(held);
                }
                let notice = match (&held.sender, held.hops) {
                    (Some(sender), 0) if !notices.contains_key(sender) => {
                        notices.insert(sender.clone(), NoticeState::InFlight);
                        Some(RelayItem::Notice {
                            sender: sender.clone(),
                            notice: FollowNotice {
                                kind: match self.key.kind {
                                    ObjectKind::Spot => 's',
                                    ObjectKind::Actor => 'a',
                                },
                                id: self.key.id.to_string(),
                                source_fence: self.source_fence.clone(),
                                source_route: self.source_route.clone(),
                                target_fence: target_fence.clone(),
                                target_route: target_route.clone(),
                                hops: held.hops + 1,
                            },
                        })
                    }
                    _ => None,
                };
                if let Err(mpsc::error::SendError(RelayItem::Message(held))) =
                    to.send(RelayItem::Message(held))
                {
                    drop(phase);
                    let error = unreachable_target(&self.key);
                    held.refuse(&self.key, error, &self.lost, LostReason::TargetUnreachable);
                    return Ok(());
                }
                if let Some(notice) = notice {
                    let _ = to.send(notice);
                }
                Ok(())
            }
        }
    }

    /// The move was cancelled before relay-ready: `backlog` (the captured queue) goes back
    /// ahead in `live`'s queue, then what the hold kept, and the queue admits again. One
    /// step under the hold's lock, so a message that arrives meanwhile queues after them.
    pub(crate) fn cancel(&self, live: &LiveObject, backlog: Vec<(ObjectJob, usize)>) {
        let mut phase = self.phase();
        let held = match std::mem::replace(&mut *phase, Phase::Released) {
            Phase::Holding { held, .. } => held,
            other => {
                *phase = other;
                VecDeque::new()
            }
        };
        let held = held
            .into_iter()
            .filter_map(|held| super::held_to_job(&live.key, &live.object_type, held, &self.lost))
            .collect();
        live.reopen_after_move(backlog, held);
    }

    /// Relay-ready was accepted: `saved` (the captured queue) goes first, then the hold,
    /// then everything that arrives later, all through one relay task to `link`.
    pub(crate) fn start_relay(
        self: &Arc<Self>,
        server: &ObjectServer,
        node: &Arc<MeshNode>,
        link: PeerLink,
        ready: &RelayReady,
        saved: Vec<Held>,
    ) -> mpsc::UnboundedSender<RelayItem> {
        let (target_fence, target_route) = (ready.target_fence.clone(), ready.target_route.clone());
        let (tracker, stop) = (&server.tracker, &server.cancel);
        let (to, from) = mpsc::unbounded_channel();
        let mut phase = self.phase();
        let held = match &mut *phase {
            Phase::Holding { held, .. } => std::mem::take(held),
            Phase::Relaying { to, .. } => return to.clone(),
            Phase::Released => VecDeque::new(),
        };
        for message in saved.into_iter().chain(held) {
            let _ = to.send(RelayItem::Message(message));
        }
        let fence = route_fence(&target_fence);
        *phase = Phase::Relaying {
            to: to.clone(),
            target_fence,
            target_route,
            until: None,
            notices: HashMap::new(),
        };
        drop(phase);
        let relay = Relay {
            owner_link: OwnerLink::new(Arc::downgrade(node)),
            tracker: tracker.clone(),
            stop: stop.clone(),
            terminals: server.relocation_store.clone(),
            link,
            key: self.key.clone(),
            fence,
            departure: Arc::downgrade(self),
            lost: self.lost.clone(),
            relayed: self.relayed.clone(),
            faults: server.faults,
        };
        tracker.spawn(relay.run(from));
        to
    }

    /// The route this departure leaves from, once it relays (past relay-ready there is
    /// no way back, so that route is old): its fence and owner.
    pub(crate) fn relaying_from(&self) -> Option<(OwnerFence, OwnerRoute)> {
        matches!(*self.phase(), Phase::Relaying { .. })
            .then(|| (self.source_fence.clone(), self.source_route.clone()))
    }

    /// The owner change committed: the old route is followed until `until`.
    pub(crate) fn committed(&self, until: Instant) {
        if let Phase::Relaying { until: at, .. } = &mut *self.phase() {
            *at = Some(until);
        }
    }

    fn notice_done(&self, sender: &str, sent: bool) {
        if let Phase::Relaying { notices, .. } = &mut *self.phase() {
            if sent {
                notices.insert(sender.to_string(), NoticeState::SentUntilExpiry);
            } else {
                notices.remove(sender);
            }
        }
    }
}

fn unreachable_target(key: &ObjectKey) -> Error {
    Error::new(
        ErrorKind::Unavailable,
        format!(
            "{key} moved and its new owner cannot be reached {}",
            crate::object::direct::STALE_ROUTE
        ),
    )
}

/// The task that carries one departure's messages to the target, in order.
struct Relay {
    owner_link: OwnerLink,
    /// The object layer's tasks: replies still to come are waited for on it.
    tracker: TaskTracker,
    /// The object layer stopping: what is still queued is refused.
    stop: CancellationToken,
    /// Where the new owner records relayed requests' results.
    terminals: Option<Arc<dyn crate::store::RelocationStore>>,
    link: PeerLink,
    key: ObjectKey,
    /// The fence the target admits the object's messages under.
    fence: RouteFence,
    departure: Weak<Departure>,
    lost: Arc<LostSends>,
    relayed: Arc<AtomicU64>,
    faults: RelocationFaults,
}

impl Relay {
    async fn run(self, mut from: mpsc::UnboundedReceiver<RelayItem>) {
        loop {
            let item = tokio::select! {
                biased;
                _ = self.stop.cancelled() => None,
                item = from.recv() => item,
            };
            let Some(item) = item else {
                from.close();
                while let Ok(item) = from.try_recv() {
                    refuse(item, &self.key, &self.lost);
                }
                return;
            };
            let Ok(node) = self.owner_link.node() else {
                refuse(item, &self.key, &self.lost);
                continue;
            };
            match item {
                RelayItem::Message(held) => self.relay(&node, held).await,
                RelayItem::Control {
                    command,
                    payload,
                    done,
                } => {
                    let submitted = self.control(&node, command, payload).await;
                    let stop = self.stop.clone();
                    self.tracker.spawn(async move {
                        let result = match submitted {
                            Ok(submitted) => until_stopped(&stop, submitted.reply()).await,
                            Err(e) => Err(e),
                        };
                        let _ = done.send(result);
                    });
                }
                RelayItem::Notice { sender, notice } => {
                    let barrier = self
                        .control(&node, Command::RelocationBarrier, Bytes::new())
                        .await;
                    let departure = self.departure.clone();
                    let owner_link = self.owner_link.clone();
                    let stop = self.stop.clone();
                    self.tracker.spawn(async move {
                        let admitted = match barrier {
                            Ok(submitted) => until_stopped(&stop, submitted.reply()).await.is_ok(),
                            Err(_) => false,
                        };
                        let sent = admitted && send_notice(&owner_link, &sender, &notice).await;
                        if let Some(departure) = departure.upgrade() {
                            departure.notice_done(&sender, sent);
                        }
                    });
                }
            }
        }
    }

    async fn control(
        &self,
        node: &Arc<MeshNode>,
        command: Command,
        payload: Bytes,
    ) -> crate::Result<crate::mesh::calls::SubmittedRequest> {
        let settings = node.settings();
        let now = Instant::now();
        let call = ObjectCommand::control(command, &self.key.id, payload);
        self.owner_link
            .submit_request(
                &self.link,
                &call,
                now + settings.request_timeout,
                now + settings.send_timeout,
            )
            .await
    }

    async fn relay(&self, node: &Arc<MeshNode>, held: Held) {
        self.relayed.fetch_add(1, Ordering::Relaxed);
        let settings = node.settings();
        let now = Instant::now();
        let request = held.kind == PacketKind::Request;
        // A request carries a relay ID: the new owner records its result under it, so a
        // reply lost with the connection can still be delivered.
        let mut metadata = held.metadata.clone();
        let barrier = &*held.packet == crate::object::route_switch::FOLLOW_BARRIER;
        let relay_id = match (&self.terminals, request) {
            (Some(_), true) if !barrier => {
                let id = crate::object::id_uuid_v4();
                metadata
                    .insert(super::RELAY_ID_KEY, id.clone())
                    .ok()
                    .map(|()| id)
            }
            _ => None,
        };
        let call = ObjectCommand::message(
            &self.key,
            held.kind,
            &held.packet,
            self.fence,
            &metadata,
            held.payload.clone(),
        )
        .followed(held.hops + 1);
        let admit_by = now + settings.send_timeout;
        if !request {
            let sent = self.owner_link.send(&self.link, &call, admit_by).await;
            if let Err(e) = &sent {
                self.lost
                    .record(&self.key, &held.packet, LostReason::TargetUnreachable, e);
            }
            if let Some(reply) = held.reply {
                reply.send(sent.map(|()| Bytes::new()));
            }
            return;
        }
        let deadline = held.deadline.unwrap_or(now + settings.request_timeout);
        if deadline <= now {
            let error = Error::new(
                ErrorKind::DeadlineExceeded,
                "the request's deadline passed while its object moved",
            );
            return held.refuse(&self.key, error, &self.lost, LostReason::Stopped);
        }
        match self
            .owner_link
            .submit_request(&self.link, &call, deadline, admit_by.min(deadline))
            .await
        {
            Ok(submitted) => {
                let reply = held.reply;
                let stop = self.stop.clone();
                let terminals = self.terminals.clone().zip(relay_id);
                let lose = self.faults.loses_relayed_replies();
                self.tracker.spawn(async move {
                    let mut result = until_stopped(&stop, submitted.reply()).await;
                    if lose {
                        result = Err(Error::new(ErrorKind::Unavailable, crate::call::CONNECTION_LOST));
                    }
                    let lost = result
                        .as_ref()
                        .is_err_and(|e| e.to_string().contains(crate::call::CONNECTION_LOST));
                    if let (true, Some((store, id))) = (lost, terminals) {
                        let recovered = tokio::select! {
                            found = super::terminal::recover(store.as_ref(), &id, deadline) => found,
                            _ = stop.cancelled() => None,
                        };
                        if let Some(recorded) = recovered {
                            result = recorded;
                        }
                    }
                    if let Some(reply) = reply {
                        reply.send(result);
                    }
                });
            }
            Err(e) => {
                if let Some(reply) = held.reply {
                    reply.send(Err(e));
                }
            }
        }
    }
}

/// A relayed request's reply, or `ShuttingDown` once the object layer stops.
async fn until_stopped(
    stop: &CancellationToken,
    reply: impl std::future::Future<Output = crate::Result<Bytes>>,
) -> crate::Result<Bytes> {
    tokio::select! {
        result = reply => result,
        _ = stop.cancelled() => Err(Error::new(ErrorKind::ShuttingDown, "the node stopped before the relayed reply")),
    }
}

/// Ends an item the relay will not carry (its node is stopping).
fn refuse(item: RelayItem, key: &ObjectKey, lost: &LostSends) {
    match item {
        RelayItem::Message(held) => {
            let error = Error::new(
                ErrorKind::ShuttingDown,
                format!("the node stopped while relaying a message for {key}"),
            );
            held.refuse(key, error, lost, LostReason::Stopped)
        }
        RelayItem::Control { done, .. } => {
            let _ = done.send(Err(Error::new(
                ErrorKind::ShuttingDown,
                "the node is stopping",
            )));
        }
        RelayItem::Notice { .. } => {}
    }
}

/// Tells `sender` the object moved (command 50, one way). A lost notice is harmless: the
/// sender's cached route expires anyway.
async fn send_notice(owner_link: &OwnerLink, sender: &str, notice: &FollowNotice) -> bool {
    let (Ok(payload), Ok(node)) = (notice.encode(), owner_link.node()) else {
        return false;
    };
    let by = Instant::now() + node.settings().send_timeout;
    let Ok(link) = owner_link.peer(sender, by).await else {
        return false;
    };
    let call = ObjectCommand::control(Command::MessageFollow, &notice.id, payload);
    owner_link.send(&link, &call, by).await.is_ok()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::call::PendingTable;
    use crate::object::id::ActorId;

    fn key() -> ObjectKey {
        ObjectKey::from(&ActorId::new("walker").unwrap())
    }

    fn fence(object_generation: u64, owner_generation: u64) -> OwnerFence {
        OwnerFence {
            object_generation,
            owner_generation,
            owner: "a".into(),
            lease_generation: 7,
        }
    }

    fn wire(fence: &OwnerFence) -> RouteFence {
        RouteFence {
            object_generation: fence.object_generation,
            owner_generation: fence.owner_generation,
            lease_generation: fence.lease_generation,
        }
    }

    fn route(rid: &str) -> OwnerRoute {
        OwnerRoute {
            mesh_name: "m".into(),
            rid: rid.into(),
            node_generation: 1,
        }
    }

    /// A request from node `sender` whose answer the returned receiver hears.
    fn request(
        table: &Arc<PendingTable>,
        sender: &str,
    ) -> (Held, oneshot::Receiver<crate::Result<Bytes>>) {
        let deadline = Instant::now() + Duration::from_secs(5);
        let (guard, rx) = table
            .register(
                crate::object::direct::LOCAL_CALLS,
                deadline,
                Duration::from_secs(5),
            )
            .unwrap();
        let held = Held {
            packet: "Step".into(),
            kind: PacketKind::Request,
            payload: Bytes::from_static(b"x"),
            metadata: Metadata::new(),
            deadline: Some(deadline),
            reply: Some(ReplyTo::Pending {
                table: table.clone(),
                correlation: guard.correlation,
            }),
            sender: Some(sender.into()),
            hops: 0,
        };
        std::mem::forget(guard); // the entry stays until the reply completes it
        (held, rx)
    }

    /// A departure already relaying to `b`; what the relay task would send comes out of
    /// the returned receiver.
    fn relaying(
        departures: &Departures,
        until: Option<Instant>,
    ) -> (Arc<Departure>, mpsc::UnboundedReceiver<RelayItem>) {
        let departure = departures.hold(&key(), fence(3, 1), route("a"));
        let (to, from) = mpsc::unbounded_channel();
        *departure.phase() = Phase::Relaying {
            to,
            target_fence: fence(3, 2),
            target_route: route("b"),
            until,
            notices: HashMap::new(),
        };
        (departure, from)
    }

    #[test]
    fn a_follow_route_relays_only_the_incarnation_that_moved() {
        let departures = Departures::new(Arc::default());
        let (_departure, mut relayed) = relaying(&departures, None);
        let table = Arc::new(PendingTable::default());
        // Resolved for generation 2 (an older incarnation on the same owner route).
        let (held, mut answer) = request(&table, "c");
        let stale = RouteFence {
            object_generation: 2,
            ..wire(&fence(3, 1))
        };
        assert!(matches!(
            departures.offer(&key(), &stale, held),
            Offer::Taken
        ));
        let error = answer.try_recv().unwrap().unwrap_err();
        assert_eq!(error.kind(), Some(ErrorKind::InvalidOperation), "{error}");
        assert!(relayed.try_recv().is_err(), "nothing was relayed");
        // The incarnation that moved is relayed.
        let (held, _answer) = request(&table, "c");
        assert!(matches!(
            departures.offer(&key(), &wire(&fence(3, 1)), held),
            Offer::Taken
        ));
        assert!(matches!(relayed.try_recv(), Ok(RelayItem::Message(_))));
    }

    #[test]
    fn an_expired_follow_route_gives_the_message_back_and_is_removed() {
        let departures = Departures::new(Arc::default());
        let (_departure, mut relayed) =
            relaying(&departures, Some(Instant::now() - Duration::from_millis(1)));
        let table = Arc::new(PendingTable::default());
        let (held, _answer) = request(&table, "c");
        let Offer::NotDeparting(_held) = departures.offer(&key(), &wire(&fence(3, 1)), held) else {
            panic!("an expired route must not take the message");
        };
        assert!(relayed.try_recv().is_err(), "nothing was relayed");
        assert!(departures.get(&key(), &wire(&fence(3, 1))).is_none());
    }

    #[test]
    fn a_sender_gets_one_notice_per_route_and_another_after_a_failed_one() {
        let departures = Departures::new(Arc::default());
        let (departure, mut relayed) = relaying(&departures, None);
        let table = Arc::new(PendingTable::default());
        let offer = |sender: &str| {
            let (held, _answer) = request(&table, sender);
            assert!(matches!(
                departures.offer(&key(), &wire(&fence(3, 1)), held),
                Offer::Taken
            ));
        };
        let notices = |relayed: &mut mpsc::UnboundedReceiver<RelayItem>| {
            let mut to = Vec::new();
            while let Ok(item) = relayed.try_recv() {
                if let RelayItem::Notice { sender, notice } = item {
                    assert_eq!(notice.target_route.rid, "b");
                    to.push(sender);
                }
            }
            to
        };
        offer("c");
        offer("c");
        offer("d");
        assert_eq!(
            notices(&mut relayed),
            ["c", "d"],
            "one each while in flight"
        );
        departure.notice_done("c", true);
        departure.notice_done("d", false);
        offer("c");
        offer("d");
        assert_eq!(
            notices(&mut relayed),
            ["d"],
            "c was told; d's notice failed"
        );
    }
}
