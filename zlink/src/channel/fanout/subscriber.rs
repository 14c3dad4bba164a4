//! The subscriber side: one SUB socket and receive loop per publisher, liveness by beacon,
//! and (with a Location Store) publishers found by descriptor.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::link::zmtp::SubConnection;
use crate::link::{ConnectOptions, CurvePublicKey};
use bytes::Bytes;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::record::{self, Inbound, BEACON_TOPIC};
use super::FanoutSubscriberSpec;
use crate::call::PacketKind;
use crate::handle::{PublisherStatus, WeakHandle};
use crate::handler::{CallFacts, HandlerContext, HandlerTable};
use crate::link::reconnect_delay;
use crate::store::{read_scope, DescriptorKind, DescriptorScope, LocationStore, MeshDescriptor};
use crate::sync::LockUnpoisoned;

struct Feed {
    status: PublisherStatus,
    /// The CURVE key the publisher must prove; a new key restarts the feed.
    key: Option<CurvePublicKey>,
    cancel: CancellationToken,
}

/// One fanout subscriber: a feed per publisher.
pub(crate) struct FanoutSubscriber {
    channel: String,
    channel_name: Arc<str>,
    handlers: HandlerTable,
    topics: Vec<String>,
    /// The process's handle: the node it subscribes for, and what handlers call through.
    handle: WeakHandle,
    deadline: Duration,
    feeds: Mutex<BTreeMap<String, Feed>>,
    /// How many followed publishers are ready, for waiters (changed with `feeds`).
    ready_count: tokio::sync::watch::Sender<usize>,
    cancel: CancellationToken,
    tasks: TaskTracker,
}

impl FanoutSubscriber {
    /// Starts feeds for the manual endpoints, or the discovery of publishers.
    pub(crate) fn start(
        spec: &FanoutSubscriberSpec,
        handle: WeakHandle,
        deadline: Duration,
        discovery: Option<(Arc<dyn LocationStore>, Duration)>,
    ) -> Arc<Self> {
        let topics = if spec.topics.is_empty() {
            spec.handlers
                .packets()
                .into_iter()
                .map(|(name, _)| name)
                .collect()
        } else {
            spec.topics.clone()
        };
        let subscriber = Arc::new(FanoutSubscriber {
            channel: spec.channel.clone(),
            channel_name: Arc::from(spec.channel.as_str()),
            handlers: HandlerTable::new(spec.handlers.clone()),
            topics,
            handle,
            deadline,
            feeds: Mutex::new(BTreeMap::new()),
            ready_count: tokio::sync::watch::Sender::new(0),
            cancel: CancellationToken::new(),
            tasks: TaskTracker::new(),
        });
        for (endpoint, key) in &spec.connect {
            subscriber.ensure_feed(endpoint, *key);
        }
        if let Some((store, interval)) = discovery {
            let finder = subscriber.clone();
            subscriber
                .tasks
                .spawn(async move { finder.discover(store, interval).await });
        }
        subscriber
    }

    fn feeds(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Feed>> {
        self.feeds.lock_unpoisoned()
    }

    pub(crate) fn statuses(&self) -> Vec<PublisherStatus> {
        self.feeds().values().map(|f| f.status.clone()).collect()
    }

    /// The number of ready publishers, as it changes.
    pub(crate) fn ready_publishers(&self) -> tokio::sync::watch::Receiver<usize> {
        self.ready_count.subscribe()
    }

    /// Publishes the ready count of `feeds` (called with the feeds' lock held, so counts
    /// go out in the order the changes happened).
    fn count_ready(&self, feeds: &BTreeMap<String, Feed>) {
        let ready = feeds.values().filter(|f| f.status.ready).count();
        self.ready_count.send_if_modified(|count| {
            let changed = *count != ready;
            *count = ready;
            changed
        });
    }

    fn ensure_feed(self: &Arc<Self>, endpoint: &str, key: Option<CurvePublicKey>) {
        let mut feeds = self.feeds();
        match feeds.get(endpoint) {
            Some(feed) if feed.key == key => return,
            // The publisher restarted with another key: dial it with the new one.
            Some(feed) => feed.cancel.cancel(),
            None => {}
        }
        let cancel = self.cancel.child_token();
        feeds.insert(
            endpoint.to_string(),
            Feed {
                status: PublisherStatus {
                    endpoint: endpoint.to_string(),
                    ready: false,
                    resubscribed: 0,
                },
                key,
                cancel: cancel.clone(),
            },
        );
        self.count_ready(&feeds);
        let me = self.clone();
        let endpoint = endpoint.to_string();
        self.tasks
            .spawn(async move { me.feed(endpoint, key, cancel).await });
    }

    fn set_ready(&self, endpoint: &str, ready: bool) {
        let mut feeds = self.feeds();
        if let Some(feed) = feeds.get_mut(endpoint) {
            if feed.status.ready != ready {
                tracing::info!(channel = %self.channel, endpoint, ready, "fanout publisher readiness changed");
            }
            feed.status.ready = ready;
        }
        self.count_ready(&feeds);
    }

    /// One publisher's feed: a fresh SUB socket each round; a round ends after silence
    /// past the deadline or a protocol error.
    async fn feed(
        self: Arc<Self>,
        endpoint: String,
        key: Option<CurvePublicKey>,
        cancel: CancellationToken,
    ) {
        loop {
            let round = self.round(&endpoint, key, &cancel);
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = round => {}
            }
            self.set_ready(&endpoint, false);
            if let Some(feed) = self.feeds().get_mut(&endpoint) {
                feed.status.resubscribed += 1;
            }
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(reconnect_delay()) => {}
            }
        }
    }

    async fn round(&self, endpoint: &str, key: Option<CurvePublicKey>, cancel: &CancellationToken) {
        let Some(handle) = self.handle.upgrade() else {
            return;
        };
        let node = handle.node();
        let Some(security) = node.settings().security.client(key) else {
            return tracing::warn!(channel = %self.channel, endpoint, "not subscribing: this node runs CURVE and the publisher's key is unknown");
        };
        let options = ConnectOptions {
            limits: node.links().limits(),
            security,
        };
        drop(handle);
        // The beacon's subscription goes last: the publisher takes one connection's
        // subscriptions in order, so the first beacon heard proves every topic before it
        // is in effect, and `ready` means no event published from then on is missed.
        let mut topics: Vec<&[u8]> = self.topics.iter().map(String::as_bytes).collect();
        topics.push(BEACON_TOPIC);
        let mut socket = match SubConnection::connect(endpoint, &options, &topics).await {
            Ok(socket) => socket,
            Err(e) => return tracing::debug!(endpoint, error = %e, "fanout connect failed"),
        };
        let mut heard = Instant::now();
        loop {
            let received = tokio::select! {
                biased;
                _ = cancel.cancelled() => return,
                received = socket.recv() => received,
                _ = tokio::time::sleep_until(heard + self.deadline) => {
                    return tracing::warn!(channel = %self.channel, endpoint, "fanout publisher silent past the deadline; resubscribing");
                }
            };
            let Some(frames) = received else {
                return tracing::debug!(endpoint, "fanout receive ended");
            };
            let event = match record::parse(&frames) {
                Ok(Inbound::Beacon) => None,
                Ok(Inbound::Event {
                    packet,
                    metadata,
                    payload,
                }) => Some((packet, metadata, payload)),
                Err(reason) => {
                    return tracing::warn!(channel = %self.channel, endpoint, reason, "protocol_error from fanout publisher; resubscribing");
                }
            };
            heard = Instant::now();
            self.set_ready(endpoint, true);
            if let Some((packet, metadata, payload)) = event.filter(|_| self.wants(&frames[0])) {
                // One event at a time, in order: a slow handler slows this feed's reads,
                // so the publisher's high-water mark (not this process's memory) absorbs
                // the difference.
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = self.dispatch(packet, metadata, payload) => {}
                }
                heard = Instant::now();
            }
        }
    }

    /// SUB filtering is by prefix and the beacon subscription is one more prefix: check
    /// that an event's topic matches one of ours.
    fn wants(&self, topic: &[u8]) -> bool {
        self.topics.iter().any(|t| topic.starts_with(t.as_bytes()))
    }

    async fn dispatch(&self, packet: String, metadata: crate::wire::Metadata, payload: Bytes) {
        let Some(slot) = self.handlers.find(&packet, PacketKind::Send) else {
            return tracing::warn!(channel = %self.channel, packet, "no_handler for fanout event");
        };
        let Some(handle) = self.handle.upgrade() else {
            return;
        };
        let ctx = HandlerContext::new(
            handle,
            CallFacts {
                packet: slot.packet.clone(),
                channel: Some(self.channel_name.clone()),
                source_rid: None,
                metadata,
                deadline: None,
            },
        );
        let index = slot.index;
        if let Err(e) = self.handlers.group().handle(ctx, index, payload).await {
            tracing::warn!(packet, error = %e, "fanout handler failed");
        }
    }

    /// Follows the channel's publisher descriptors: a feed per live publisher, none for
    /// the others.
    async fn discover(self: Arc<Self>, store: Arc<dyn LocationStore>, interval: Duration) {
        let scope = DescriptorScope {
            kind: DescriptorKind::Fanout,
            scope: self.channel.clone(),
        };
        loop {
            let bound = interval.max(Duration::from_millis(500));
            if let Ok(entries) = read_scope(store.as_ref(), &scope, bound).await {
                let live: Vec<(String, Option<CurvePublicKey>)> = entries
                    .iter()
                    .filter(|e| e.owner_alive)
                    .filter_map(|e| match MeshDescriptor::decode(&e.body) {
                        Ok(d) => Some(d),
                        Err(error) => {
                            tracing::warn!(channel = %self.channel, id = %e.id, %error, "undecodable publisher descriptor skipped");
                            None
                        }
                    })
                    .map(|d| {
                        let key = d.curve_public_key();
                        (d.endpoint, key)
                    })
                    .collect();
                let gone: Vec<String> = self
                    .feeds()
                    .keys()
                    .filter(|e| !live.iter().any(|(l, _)| l == *e))
                    .cloned()
                    .collect();
                for endpoint in gone {
                    let mut feeds = self.feeds();
                    if let Some(feed) = feeds.remove(&endpoint) {
                        feed.cancel.cancel();
                    }
                    self.count_ready(&feeds);
                }
                for (endpoint, key) in &live {
                    self.ensure_feed(endpoint, *key);
                }
            }
            tokio::select! {
                _ = self.cancel.cancelled() => return,
                _ = tokio::time::sleep(interval) => {}
            }
        }
    }

    /// Stops every feed.
    pub(crate) async fn close(&self) {
        self.cancel.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }
}
