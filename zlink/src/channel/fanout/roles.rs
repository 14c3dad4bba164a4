//! The fanout publishers and subscribers of one process. The beacon interval and silence
//! deadline are the liveness timings (5 s / 15 s).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::publisher::Advertising;
use super::{FanoutDeclaration, FanoutPublisher, FanoutSubscriber};
use bytes::Bytes;

use crate::call::BoxFuture;
use crate::handle::{FanoutPort, Handle, PublisherStatus};
use crate::mesh::{Drained, Subsystem, Teardown};
use crate::wire::Metadata;
use crate::{Error, ErrorKind, Result};

/// Every fanout role of a process, by ChannelName.
pub(crate) struct FanoutRoles {
    publishers: BTreeMap<String, Arc<FanoutPublisher>>,
    subscribers: BTreeMap<String, Arc<FanoutSubscriber>>,
}

impl FanoutRoles {
    /// Starts the publishers (binding their listeners) and subscribers `process`
    /// declares; subscriber handlers see `process` as their runtime.
    pub(crate) async fn start(
        handle: &Handle,
        declared: &[FanoutDeclaration],
    ) -> Result<Arc<Self>> {
        let process = handle.node();
        let settings = process.settings();
        let liveness = settings.liveness;
        let services = process.services();
        let interval = process.discovery().map(|d| d.interval());
        let mut roles = FanoutRoles {
            publishers: BTreeMap::new(),
            subscribers: BTreeMap::new(),
        };
        for role in declared {
            match role {
                FanoutDeclaration::Publisher(spec) => {
                    let advertising = match (services.store(), services.lease(), interval) {
                        (Some(store), Some(lease), Some(interval)) => Some(Advertising {
                            store: store.clone(),
                            lease: lease.clone(),
                            interval,
                            rid: settings.rid.clone(),
                            curve_key: settings.security.public_key(),
                        }),
                        _ => None,
                    };
                    let started = FanoutPublisher::start(
                        spec,
                        liveness.probe_interval,
                        advertising,
                        (
                            settings.security.server(),
                            settings.limits.handshake_timeout,
                        ),
                    )
                    .await;
                    match started {
                        Ok(publisher) => {
                            roles.publishers.insert(spec.channel.clone(), publisher);
                        }
                        Err(e) => {
                            roles.stop(false).await;
                            return Err(e);
                        }
                    }
                }
                FanoutDeclaration::Subscriber(spec) => {
                    let discovery = match (spec.automatic, services.store(), interval) {
                        (true, Some(store), Some(interval)) => Some((store.clone(), interval)),
                        _ => None,
                    };
                    let subscriber = FanoutSubscriber::start(
                        spec,
                        handle.downgrade(),
                        liveness.deadline,
                        discovery,
                    );
                    roles.subscribers.insert(spec.channel.clone(), subscriber);
                }
            }
        }
        Ok(Arc::new(roles))
    }

    /// This process's publisher of `channel`.
    pub(crate) fn publisher(&self, channel: &str) -> Result<&Arc<FanoutPublisher>> {
        self.publishers
            .get(channel)
            .ok_or_else(|| not_publisher(channel))
    }

    /// The published channels and their endpoints and drop counts, by name.
    pub(crate) fn publisher_statuses(&self) -> Vec<(String, String, u64)> {
        self.publishers
            .iter()
            .map(|(name, p)| (name.clone(), p.endpoint().to_string(), p.dropped()))
            .collect()
    }

    /// The subscribed channels and the publishers each follows, by name.
    pub(crate) fn subscriber_statuses(&self) -> Vec<(String, Vec<super::PublisherStatus>)> {
        self.subscribers
            .iter()
            .map(|(name, s)| (name.clone(), s.statuses()))
            .collect()
    }

    /// This process's subscriber of `channel`.
    pub(crate) fn subscriber(&self, channel: &str) -> Option<&Arc<FanoutSubscriber>> {
        self.subscribers.get(channel)
    }

    /// This process's subscriber of `channel`, or why there is none.
    fn subscribed(&self, channel: &str) -> Result<&Arc<FanoutSubscriber>> {
        self.subscriber(channel).ok_or_else(|| {
            Error::new(
                ErrorKind::NotConfigured,
                format!("this node does not subscribe to fanout {channel}"),
            )
        })
    }
}

/// The error for a channel this process does not publish.
pub(crate) fn not_publisher(channel: &str) -> Error {
    Error::new(
        ErrorKind::NotConfigured,
        format!("this node is not a fanout publisher of {channel}"),
    )
}

#[async_trait]
impl Subsystem for FanoutRoles {
    fn name(&self) -> &'static str {
        "fanout"
    }

    /// Fanout holds no accepted work: publishing is refused once the runtime stops
    /// serving, and a subscriber's handler call finishes with its feed.
    async fn drain(&self, _grace: Duration) -> Drained {
        Drained::Finished
    }

    /// Stops every subscriber and closes every publisher.
    async fn stop(&self, _crashed: bool) -> Teardown {
        for subscriber in self.subscribers.values() {
            subscriber.close().await;
        }
        for publisher in self.publishers.values() {
            publisher.close().await;
        }
        Teardown::Clean
    }
}

impl FanoutPort for FanoutRoles {
    fn publish<'a>(
        &'a self,
        channel: &'a str,
        topic: Bytes,
        packet: &'static str,
        metadata: &'a Metadata,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.publisher(channel)?
                .publish(topic, packet, metadata, payload, timeout)
                .await
        })
    }

    fn endpoint(&self, channel: &str) -> Option<String> {
        Some(self.publisher(channel).ok()?.endpoint().to_string())
    }

    fn dropped(&self, channel: &str) -> Result<u64> {
        Ok(self.publisher(channel)?.dropped())
    }

    fn publishers(&self, channel: &str) -> Result<Vec<PublisherStatus>> {
        Ok(self.subscribed(channel)?.statuses())
    }

    fn ready_publishers(&self, channel: &str) -> Result<tokio::sync::watch::Receiver<usize>> {
        Ok(self.subscribed(channel)?.ready_publishers())
    }
}
