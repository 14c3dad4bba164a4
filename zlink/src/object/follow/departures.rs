//! The departures of one node: each departing object's hold, then its relay, then its
//! Message Follow route, and the follow notices owed to its senders.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::held::Held;
use super::relay::{FollowRelay, OwedNotice, RelayItem, RelayServices};
use super::suppression::{FencedRoute, NoticeKey, NoticeRegistry};
use super::FollowNotice;
use super::{HOLD_BYTES, HOLD_MESSAGES, MAX_FOLLOW_HOPS};
use crate::address::{ObjectKey, ObjectKind};
use crate::mesh::peer_table::PeerLink;
use crate::mesh::MeshNode;
use crate::object::authority::{OwnerFence, OwnerRoute};
use crate::object::live_object::LiveObject;
use crate::object::lost_sends::{LostReason, LostSends};
use crate::object::object_job::ObjectJob;
use crate::object::owner_link::{route_fence, OwnerLink};
use crate::sync::LockUnpoisoned;
use crate::wire::RouteFence;
use crate::{Error, ErrorKind};

enum Phase {
    /// The move was cancelled before relay-ready: what was held is back in the object's
    /// queue, which admits again; nothing is taken here any more.
    Released,
    /// Sealed: what arrives waits here, in order, within the hold's bounds.
    Holding { held: VecDeque<Held>, bytes: usize },
    /// FollowRelay-ready was accepted: everything goes to the target, in order. `until` is set
    /// when the owner change committed (the Message Follow window).
    Relaying {
        to: mpsc::UnboundedSender<RelayItem>,
        target_fence: OwnerFence,
        target_route: OwnerRoute,
        until: Option<Instant>,
    },
}

/// What waits in a relay's queue: the messages taken and not yet handed to the target,
/// and their bytes (what a follow notice reports as the queue at the relay).
#[derive(Default)]
struct RelayQueue {
    messages: AtomicU64,
    bytes: AtomicU64,
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
    /// The node's notice suppression registry.
    notices: Arc<NoticeRegistry>,
    queue: RelayQueue,
    relays: Arc<RelayServices>,
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
    notices: Arc<NoticeRegistry>,
    /// What their relays run with.
    relays: Arc<RelayServices>,
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
    /// The departures of a node that counts its lost one-ways in `lost` and whose relays
    /// run with `relays`.
    pub(crate) fn new(lost: Arc<LostSends>, relays: RelayServices) -> Self {
        Departures {
            map: Mutex::new(HashMap::new()),
            count: AtomicUsize::new(0),
            lost,
            relayed: Arc::default(),
            notices: Arc::default(),
            relays: Arc::new(relays),
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
            notices: self.notices.clone(),
            queue: RelayQueue::default(),
            relays: self.relays.clone(),
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
            drop(map);
            self.notices
                .route_ended(&departure.key, &departure.source());
        }
    }

    /// Whether `key` is departing (held or followed) on the route `fence`. A route to a
    /// newer incarnation than the one that left is not: that incarnation was created
    /// here after the move (a new one starts its owner changes at 1 again, so its route
    /// can look like the old one's), and its messages are its own.
    pub(crate) fn get(&self, key: &ObjectKey, fence: &RouteFence) -> Option<Arc<Departure>> {
        if self.count.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let slot = (key.clone(), fence.owner_generation);
        let departure = self.map().get(&slot).cloned()?;
        let source = &departure.source_fence;
        (source.lease_generation == fence.lease_generation
            && source.object_generation >= fence.object_generation)
            .then_some(departure)
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
                let error = Error::refused(
                    ErrorKind::InvalidOperation,
                    crate::Refusal::StaleRoute,
                    format!(
                        "{key} moved as generation {}, and the message was sent to generation {} {}",
                        departure.source_fence.object_generation,
                        fence.object_generation,
                        crate::object::owner_link::STALE_ROUTE
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
    fn take(&self, mut held: Held) -> Result<(), Held> {
        if held.hops >= MAX_FOLLOW_HOPS {
            let error = Error::refused(
                ErrorKind::Unavailable,
                crate::Refusal::StaleRoute,
                format!(
                    "{} moved more than {MAX_FOLLOW_HOPS} times within the follow window {}",
                    self.key,
                    crate::object::owner_link::STALE_ROUTE
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
            } => {
                if until.is_some_and(|until| Instant::now() >= until) {
                    return Err(held);
                }
                let size = held.bytes();
                let notice = match (&held.sender, held.hops) {
                    (Some(sender), 0) => {
                        let key = NoticeKey {
                            sender: sender.clone(),
                            object: self.key.clone(),
                            source: self.source(),
                            target: FencedRoute {
                                fence: target_fence.clone(),
                                route: target_route.clone(),
                            },
                        };
                        self.notices.acquire(&key).then(|| {
                            let notice = self.notice(&key, &held, size);
                            RelayItem::Notice(Box::new(OwedNotice { key, notice }))
                        })
                    }
                    _ => None,
                };
                self.queue.add(size);
                if let Err(mpsc::error::SendError(RelayItem::Message(held))) =
                    to.send(RelayItem::Message(held))
                {
                    drop(phase);
                    self.queue.remove(size);
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

    /// Relay-ready was accepted from the target that will own the object under
    /// `target_fence` at `target_route`: `saved` (the captured queue) goes first, then the
    /// hold, then everything that arrives later, all through one relay task to `link`.
    pub(crate) fn start_relay(
        self: &Arc<Self>,
        node: &Arc<MeshNode>,
        link: PeerLink,
        (target_fence, target_route): (OwnerFence, OwnerRoute),
        saved: Vec<Held>,
    ) -> mpsc::UnboundedSender<RelayItem> {
        let relays = &self.relays;
        let (to, from) = mpsc::unbounded_channel();
        let mut phase = self.phase();
        let held = match &mut *phase {
            Phase::Holding { held, .. } => std::mem::take(held),
            Phase::Relaying { to, .. } => return to.clone(),
            Phase::Released => VecDeque::new(),
        };
        for mut message in saved.into_iter().chain(held) {
            self.queue.add(message.bytes());
            let _ = to.send(RelayItem::Message(message));
        }
        let fence = route_fence(&target_fence);
        *phase = Phase::Relaying {
            to: to.clone(),
            target_fence,
            target_route,
            until: None,
        };
        drop(phase);
        let relay = FollowRelay {
            owner_link: OwnerLink::new(Arc::downgrade(node)),
            tracker: relays.tracker.clone(),
            stop: relays.stop.clone(),
            terminals: relays.terminals.clone(),
            link,
            key: self.key.clone(),
            fence,
            departure: Arc::downgrade(self),
            lost: self.lost.clone(),
            relayed: self.relayed.clone(),
            counters: relays.counters.clone(),
            faults: relays.faults,
        };
        relays.tracker.spawn(relay.run(from));
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

    /// The notice of `key` was sent, or failed (then a later message may try again).
    pub(super) fn notice_done(&self, key: &NoticeKey, sent: bool) {
        self.notices.finished(key, sent);
    }

    /// The relay handed one message of `bytes` to the target.
    pub(super) fn relayed_one(&self, bytes: usize) {
        self.queue.remove(bytes);
    }

    /// The route this departure leaves from, whole.
    fn source(&self) -> FencedRoute {
        FencedRoute {
            fence: self.source_fence.clone(),
            route: self.source_route.clone(),
        }
    }

    /// The notice for `key` about `held` (of `size` bytes), which joins the relay queue
    /// behind what waits there now.
    fn notice(&self, key: &NoticeKey, held: &Held, size: usize) -> FollowNotice {
        let (messages, bytes) = self.queue.now();
        FollowNotice {
            kind: match self.key.kind {
                ObjectKind::Spot => 's',
                ObjectKind::Actor => 'a',
            },
            id: self.key.id.to_string(),
            source_fence: key.source.fence.clone(),
            source_route: key.source.route.clone(),
            target_fence: key.target.fence.clone(),
            target_route: key.target.route.clone(),
            hops: held.hops + 1,
            queued_messages: messages + 1,
            queued_bytes: bytes + size as u64,
            operation: held.operation,
            reply_correlation: held.reply_correlation(),
        }
    }
}

impl RelayQueue {
    fn add(&self, bytes: usize) {
        self.messages.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn remove(&self, bytes: usize) {
        self.messages.fetch_sub(1, Ordering::Relaxed);
        self.bytes.fetch_sub(bytes as u64, Ordering::Relaxed);
    }

    fn now(&self) -> (u64, u64) {
        (
            self.messages.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }
}

fn unreachable_target(key: &ObjectKey) -> Error {
    Error::new(
        ErrorKind::Unavailable,
        format!(
            "{key} moved and its new owner cannot be reached {}",
            crate::object::owner_link::STALE_ROUTE
        ),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::address::ActorId;
    use crate::call::PacketKind;
    use crate::object::object_job::ReplyTo;
    use crate::wire::Metadata;
    use bytes::Bytes;
    use tokio::sync::oneshot;

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
    fn request(sender: &str) -> (Held, oneshot::Receiver<crate::Result<crate::wire::Payload>>) {
        let deadline = Instant::now() + Duration::from_secs(5);
        let (tx, rx) = oneshot::channel();
        let held = Held {
            packet: "Step".into(),
            kind: PacketKind::Request,
            payload: crate::wire::Payload::encoded(Bytes::from_static(b"x")),
            metadata: Metadata::new(),
            deadline: Some(deadline),
            reply: Some(ReplyTo::Local(tx)),
            sender: Some(sender.into()),
            hops: 0,
            operation: 41,
        };
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
        };
        (departure, from)
    }

    #[test]
    fn a_follow_route_relays_only_the_incarnation_that_moved() {
        let departures = Departures::new(Arc::default(), RelayServices::default());
        assert_eq!(departures.relayed(), 0, "a new node has relayed nothing");
        let (_departure, mut relayed) = relaying(&departures, None);
        // Resolved for generation 2 (an older incarnation on the same owner route).
        let (held, mut answer) = request("c");
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
        let (held, _answer) = request("c");
        assert!(matches!(
            departures.offer(&key(), &wire(&fence(3, 1)), held),
            Offer::Taken
        ));
        assert!(matches!(relayed.try_recv(), Ok(RelayItem::Message(_))));
    }

    #[test]
    fn a_newer_incarnation_created_where_an_older_one_left_is_not_followed() {
        let departures = Departures::new(Arc::default(), RelayServices::default());
        let (_departure, mut relayed) = relaying(&departures, None);
        // Generation 4 was created here after generation 3 moved away, with an owner
        // generation (1) and lease that the old route shares.
        let newer = RouteFence {
            object_generation: 4,
            ..wire(&fence(3, 1))
        };
        assert!(departures.get(&key(), &newer).is_none());
        let (held, _answer) = request("c");
        let Offer::NotDeparting(_held) = departures.offer(&key(), &newer, held) else {
            panic!("the newer incarnation's message must reach it, not the follow route");
        };
        assert!(relayed.try_recv().is_err(), "nothing was relayed");
    }

    #[test]
    fn an_expired_follow_route_gives_the_message_back_and_is_removed() {
        let departures = Departures::new(Arc::default(), RelayServices::default());
        let (_departure, mut relayed) =
            relaying(&departures, Some(Instant::now() - Duration::from_millis(1)));
        let (held, _answer) = request("c");
        let Offer::NotDeparting(_held) = departures.offer(&key(), &wire(&fence(3, 1)), held) else {
            panic!("an expired route must not take the message");
        };
        assert!(relayed.try_recv().is_err(), "nothing was relayed");
        assert!(departures.get(&key(), &wire(&fence(3, 1))).is_none());
    }

    #[test]
    fn a_sender_gets_one_notice_per_route_and_another_after_a_failed_one() {
        let departures = Departures::new(Arc::default(), RelayServices::default());
        let (departure, mut relayed) = relaying(&departures, None);
        let offer = |sender: &str| {
            let (held, _answer) = request(sender);
            assert!(matches!(
                departures.offer(&key(), &wire(&fence(3, 1)), held),
                Offer::Taken
            ));
        };
        let notices = |relayed: &mut mpsc::UnboundedReceiver<RelayItem>| {
            let mut to = Vec::new();
            while let Ok(item) = relayed.try_recv() {
                if let RelayItem::Notice(owed) = item {
                    let OwedNotice { key, notice } = *owed;
                    assert_eq!(notice.target_route.rid, "b");
                    assert_eq!(notice.operation, 41, "the relayed message's own");
                    assert!(notice.queued_messages >= 1);
                    to.push(key);
                }
            }
            to
        };
        offer("c");
        offer("c");
        offer("d");
        let told = notices(&mut relayed);
        let senders: Vec<&str> = told.iter().map(|k| k.sender.as_str()).collect();
        assert_eq!(senders, ["c", "d"], "one each while in flight");
        departure.notice_done(&told[0], true);
        departure.notice_done(&told[1], false);
        offer("c");
        offer("d");
        let again = notices(&mut relayed);
        let senders: Vec<&str> = again.iter().map(|k| k.sender.as_str()).collect();
        assert_eq!(senders, ["d"], "c was told; d's notice failed");
        // The route ends: its markers go with it.
        departures.remove(&departure);
        assert_eq!(departures.notices.len(), 0);
    }
}
