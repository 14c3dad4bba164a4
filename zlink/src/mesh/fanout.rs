//! The fanout publishers and subscribers a process runs next to its RouteMesh node.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::node::{lock, MeshNode};
use crate::channel::fanout::publisher::Advertising;
use crate::channel::fanout::{FanoutDeclaration, FanoutPublisher, FanoutSubscriber};
use crate::{Error, ErrorKind, Result};

/// The fanout roles of one process.
#[derive(Default)]
pub(crate) struct FanoutSet {
    pub(crate) publishers: BTreeMap<String, Arc<FanoutPublisher>>,
    pub(crate) subscribers: BTreeMap<String, Arc<FanoutSubscriber>>,
}

impl MeshNode {
    /// Starts the declared publishers (binding their listeners) and subscribers. The
    /// beacon interval and silence deadline are the liveness timings (5 s / 15 s).
    pub(crate) async fn start_fanout(self: &Arc<Self>) -> Result<()> {
        let liveness = self.settings.liveness;
        for role in &self.settings.fanout {
            match role {
                FanoutDeclaration::Publisher(spec) => {
                    let advertising = self.discovery().map(|d| Advertising {
                        store: d.settings.store.clone(),
                        lease: d.lease.clone(),
                        interval: d.settings.interval,
                        rid: self.settings.rid.clone(),
                        curve_key: self.settings.security.public_key(),
                    });
                    let publisher = FanoutPublisher::start(
                        spec,
                        liveness.probe_interval,
                        advertising,
                        (
                            self.settings.security.server(),
                            self.settings.limits.handshake_timeout,
                        ),
                    )
                    .await?;
                    lock(&self.fanout)
                        .publishers
                        .insert(spec.channel.clone(), publisher);
                }
                FanoutDeclaration::Subscriber(spec) => {
                    let discovery = spec
                        .automatic
                        .then(|| {
                            self.discovery()
                                .map(|d| (d.settings.store.clone(), d.settings.interval))
                        })
                        .flatten();
                    let subscriber = FanoutSubscriber::start(
                        spec,
                        Arc::downgrade(self),
                        liveness.deadline,
                        discovery,
                    );
                    lock(&self.fanout)
                        .subscribers
                        .insert(spec.channel.clone(), subscriber);
                }
            }
        }
        Ok(())
    }

    pub(crate) fn fanout_publisher(&self, channel: &str) -> Result<Arc<FanoutPublisher>> {
        lock(&self.fanout)
            .publishers
            .get(channel)
            .cloned()
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NotConfigured,
                    format!("this node is not a fanout publisher of {channel}"),
                )
            })
    }

    pub(crate) fn fanout_subscriber(&self, channel: &str) -> Option<Arc<FanoutSubscriber>> {
        lock(&self.fanout).subscribers.get(channel).cloned()
    }

    /// Stops every subscriber and closes every publisher.
    pub(crate) async fn stop_fanout(&self) {
        let (publishers, subscribers) = {
            let mut set = lock(&self.fanout);
            (
                std::mem::take(&mut set.publishers),
                std::mem::take(&mut set.subscribers),
            )
        };
        for subscriber in subscribers.values() {
            subscriber.close().await;
        }
        for publisher in publishers.values() {
            publisher.close().await;
        }
    }
}
