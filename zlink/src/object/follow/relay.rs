//! The relay task of one departure: it carries the object's messages to the new owner in
//! order, with the move's own control requests and the barriers before follow notices.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::departures::Departure;
use super::held::Held;
use super::notice::send_notice;
use super::FollowNotice;
use crate::address::ObjectKey;
use crate::call::PacketKind;
use crate::mesh::peer_table::PeerLink;
use crate::mesh::MeshNode;
use crate::object::lost_sends::{LostReason, LostSends};
use crate::object::owner_link::{ObjectCommand, OwnerLink};
use crate::object::relocation_faults::RelocationFaults;
use crate::telemetry::FollowCounters;
use crate::wire::trace_context::TraceContext;
use crate::wire::{Command, Payload, RouteFence};
use crate::{Error, ErrorKind};

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
    Notice(Box<OwedNotice>),
}

/// A follow notice the registry let out, and the key it answers for.
pub(crate) struct OwedNotice {
    pub(crate) key: super::suppression::NoticeKey,
    pub(crate) notice: FollowNotice,
}

/// What every relay of one node runs with.
#[derive(Clone)]
pub(crate) struct RelayServices {
    /// The object layer's tasks: relays run on it.
    pub(crate) tracker: TaskTracker,
    /// The object layer stopping: what a relay still has queued is refused.
    pub(crate) stop: CancellationToken,
    /// Where the new owner records relayed requests' results.
    pub(crate) terminals: Option<Arc<dyn crate::store::RelocationStore>>,
    pub(crate) faults: RelocationFaults,
    /// Counts relays, notices and barriers.
    pub(crate) counters: FollowCounters,
}

impl Default for RelayServices {
    /// Services that relay nowhere in particular and count into no instrument (tests).
    fn default() -> Self {
        RelayServices {
            tracker: TaskTracker::default(),
            stop: CancellationToken::default(),
            terminals: None,
            faults: RelocationFaults::default(),
            counters: FollowCounters::default(),
        }
    }
}

/// The task that carries one departure's messages to the target, in order.
pub(super) struct FollowRelay {
    pub(super) owner_link: OwnerLink,
    /// The object layer's tasks: replies still to come are waited for on it.
    pub(super) tracker: TaskTracker,
    /// The object layer stopping: what is still queued is refused.
    pub(super) stop: CancellationToken,
    /// Where the new owner records relayed requests' results.
    pub(super) terminals: Option<Arc<dyn crate::store::RelocationStore>>,
    pub(super) link: PeerLink,
    pub(super) key: ObjectKey,
    /// The fence the target admits the object's messages under.
    pub(super) fence: RouteFence,
    pub(super) departure: Weak<Departure>,
    pub(super) lost: Arc<LostSends>,
    pub(super) relayed: Arc<AtomicU64>,
    pub(super) counters: FollowCounters,
    pub(super) faults: RelocationFaults,
}

impl FollowRelay {
    pub(super) async fn run(self, mut from: mpsc::UnboundedReceiver<RelayItem>) {
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
                RelayItem::Notice(owed) => {
                    let OwedNotice { key, notice } = *owed;
                    let barrier = self
                        .control(&node, Command::RelocationBarrier, Bytes::new())
                        .await;
                    self.counters.barriers.increment(1);
                    let notices = self.counters.notices.clone();
                    let departure = self.departure.clone();
                    let owner_link = self.owner_link.clone();
                    let stop = self.stop.clone();
                    self.tracker.spawn(async move {
                        let admitted = match barrier {
                            Ok(submitted) => until_stopped(&stop, submitted.reply()).await.is_ok(),
                            Err(_) => false,
                        };
                        let sent = admitted && send_notice(&owner_link, &key.sender, &notice).await;
                        if sent {
                            notices.increment(1);
                        }
                        if let Some(departure) = departure.upgrade() {
                            departure.notice_done(&key, sent);
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

    /// Relays `held` in a `zlink.follow_relay` span that names this node, the object, the
    /// packet and the message's trace.
    async fn relay(&self, node: &Arc<MeshNode>, held: Held) {
        let identity = node.identity();
        let span = tracing::debug_span!(
            "zlink.follow_relay",
            mesh = identity.mesh_name(),
            rid = identity.rid(),
            object = %self.key,
            packet = &*held.packet,
            hops = held.hops + 1,
            to = %self.link.rid(),
            trace_id = tracing::field::Empty,
            flow_id = tracing::field::Empty,
        );
        if let Some(context) = TraceContext::of(&held.metadata) {
            span.record("trace_id", context.trace_id().unwrap_or("malformed"));
            span.record("flow_id", context.flow_id.as_str());
        }
        self.relay_in_span(node, held).instrument(span).await
    }

    async fn relay_in_span(&self, node: &Arc<MeshNode>, mut held: Held) {
        self.relayed.fetch_add(1, Ordering::Relaxed);
        self.counters.relayed.increment(1);
        let size = held.bytes();
        if let Some(departure) = self.departure.upgrade() {
            departure.relayed_one(size);
        }
        let settings = node.settings();
        let now = Instant::now();
        let request = held.kind == PacketKind::Request;
        // A request carries a relay ID: the new owner records its result under it, so a
        // reply lost with the connection can still be delivered.
        let mut metadata = held.metadata.clone();
        let barrier = &*held.packet == crate::object::route_cache::FOLLOW_BARRIER;
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
        // A value a caller on this node handed over is encoded to leave it.
        let payload = match std::mem::take(&mut held.payload).into_bytes() {
            Ok(payload) => payload,
            Err(e) => return held.refuse(&self.key, e, &self.lost, LostReason::TargetUnreachable),
        };
        let call = ObjectCommand::message(
            &self.key,
            held.kind,
            &held.packet,
            self.fence,
            &metadata,
            payload,
        )
        .followed(held.hops + 1, held.operation);
        let admit_by = now + settings.send_timeout;
        if !request {
            let sent = self.owner_link.send(&self.link, &call, admit_by).await;
            if let Err(e) = &sent {
                self.lost
                    .record(&self.key, &held.packet, LostReason::TargetUnreachable, e);
            }
            if let Some(reply) = held.reply {
                reply.send(sent.map(|()| Payload::default()));
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
                        result = Err(Error::refused(ErrorKind::Unavailable, crate::Refusal::ConnectionLost, crate::call::CONNECTION_LOST));
                    }
                    let lost = result
                        .as_ref()
                        .is_err_and(|e| e.is_refusal(crate::Refusal::ConnectionLost));
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
                        reply.send(result.map(Payload::encoded));
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
        RelayItem::Notice(_) => {}
    }
}
