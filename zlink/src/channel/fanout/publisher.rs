//! The publisher side: one PUB listener, the delivery policy, the liveness beacon and (with
//! a Location Store) the publisher descriptor.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::record::{self, BEACON_TOPIC};
use super::FanoutPublisherSpec;
use crate::link::zmtp::{PubListener, PubOptions};
use crate::store::resolve::publish_resolving;
use crate::store::{
    DescriptorKey, DescriptorKind, DescriptorScope, LeaseToken, LocationStore, MeshDescriptor,
    OwnerLease, PublishOutcome,
};
use crate::sync::LockUnpoisoned;
use crate::{Error, ErrorKind, Result};

/// Where and under which lease a publisher advertises itself.
pub(crate) struct Advertising {
    pub(crate) store: Arc<dyn LocationStore>,
    pub(crate) lease: Arc<OwnerLease>,
    pub(crate) interval: Duration,
    pub(crate) rid: String,
    /// The process's CURVE key, published with the endpoint.
    pub(crate) curve_key: Option<crate::link::CurvePublicKey>,
}

/// One fanout publisher.
pub(crate) struct FanoutPublisher {
    channel: String,
    listener: PubListener,
    endpoint: String,
    no_drop: bool,
    generation: u64,
    published: Mutex<Option<LeaseToken>>,
    cancel: CancellationToken,
    tasks: TaskTracker,
    /// The operation identities of the events it publishes.
    operations: crate::wire::OperationIds,
}

impl FanoutPublisher {
    /// Binds the listener and starts the beacon (every `beacon_interval`) and, with a
    /// store, the descriptor upkeep.
    pub(crate) async fn start(
        spec: &FanoutPublisherSpec,
        beacon_interval: Duration,
        advertising: Option<Advertising>,
        link: (crate::link::ServerSecurity, Duration),
    ) -> Result<Arc<Self>> {
        let (security, handshake_timeout) = link;
        let options = PubOptions {
            high_water_mark: spec.high_water_mark,
            max_subscribers: spec.max_subscribers.max(1),
            max_subscriptions: spec.max_subscriptions.max(1),
            handshake_timeout,
            security,
            greeting: Some(record::beacon()),
        };
        let listener = PubListener::bind(&spec.listen, options)
            .await
            .map_err(|e| {
                Error::new(
                    ErrorKind::Unavailable,
                    format!(
                        "fanout {}: cannot listen on {}: {e}",
                        spec.channel, spec.listen
                    ),
                )
            })?;
        let endpoint = crate::link::advertised(listener.endpoint(), spec.advertise_host.as_deref());
        let publisher = Arc::new(FanoutPublisher {
            channel: spec.channel.clone(),
            listener,
            endpoint,
            no_drop: spec.no_drop,
            generation: crate::mesh::generate_generation(),
            published: Mutex::new(None),
            cancel: CancellationToken::new(),
            tasks: TaskTracker::new(),
            operations: crate::wire::OperationIds::default(),
        });
        let beacon = publisher.clone();
        publisher.tasks.spawn(async move {
            let mut ticker = tokio::time::interval(beacon_interval);
            loop {
                tokio::select! {
                    _ = beacon.cancel.cancelled() => return,
                    _ = ticker.tick() => beacon.listener.publish_dropping(record::beacon()),
                }
            }
        });
        if let Some(advertising) = advertising {
            let upkeep = publisher.clone();
            publisher
                .tasks
                .spawn(async move { upkeep.advertise(advertising).await });
        }
        tracing::info!(channel = %spec.channel, endpoint = %publisher.endpoint(), "fanout publisher listening");
        Ok(publisher)
    }

    /// The endpoint subscribers dial (advertised host, real port).
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.listener.dropped()
    }

    /// Publishes one event. Completes on local admission; zero subscribers is success.
    pub(crate) async fn publish(
        &self,
        topic: Bytes,
        packet: &str,
        metadata: &crate::wire::Metadata,
        payload: Bytes,
        timeout: Duration,
    ) -> Result<()> {
        if topic.as_ref() == BEACON_TOPIC {
            return Err(Error::InvalidArgument(
                "the topic 01 5A 4C 46 31 is reserved for the fanout liveness beacon".into(),
            ));
        }
        let record = record::event(topic, (packet, self.operations.next()), metadata, payload);
        if !self.no_drop {
            self.listener.publish_dropping(record);
            return Ok(());
        }
        self.listener
            .publish_waiting(record, Instant::now() + timeout)
            .await
            .map_err(|()| {
                Error::new(
                    ErrorKind::DeadlineExceeded,
                    format!(
                        "fanout {}: a subscriber had no room within {timeout:?}",
                        self.channel
                    ),
                )
            })
    }

    fn key(&self, rid: &str) -> DescriptorKey {
        DescriptorKey {
            scope: DescriptorScope {
                kind: DescriptorKind::Fanout,
                scope: self.channel.clone(),
            },
            id: rid.to_string(),
        }
    }

    /// Keeps the publisher descriptor published under the process's lease.
    async fn advertise(&self, ad: Advertising) {
        let descriptor = MeshDescriptor {
            mesh_name: format!("fanout:{}", self.channel),
            rid: ad.rid.clone(),
            generation: self.generation,
            revision: 1,
            endpoint: self.endpoint().to_string(),
            protocol: crate::wire::PROTOCOL_MAJOR,
            channels: Vec::new(),
            curve_key: ad.curve_key.map(|k| k.to_z85()),
            spot_types: Vec::new(),
            instance_spot_types: Vec::new(),
            actor_types: Vec::new(),
            entry_spot: None,
            placement_weight: 0,
            draining: false,
        };
        loop {
            if let (Some(token), Ok(body)) = (ad.lease.admitting_token(), descriptor.encode()) {
                let current = self.published.lock_unpoisoned().clone();
                if current.as_ref() != Some(&token) {
                    let key = self.key(&ad.rid);
                    if let Ok(Ok(PublishOutcome::Published)) = tokio::time::timeout(
                        ad.interval.max(Duration::from_millis(500)),
                        publish_resolving(ad.store.as_ref(), &token, &key, &body),
                    )
                    .await
                    {
                        *self.published.lock_unpoisoned() = Some(token);
                    }
                }
            }
            tokio::select! {
                _ = self.cancel.cancelled() => {
                    let token = self.published.lock_unpoisoned().take();
                    if let Some(token) = token {
                        let key = self.key(&ad.rid);
                        let _ = tokio::time::timeout(Duration::from_secs(1), ad.store.withdraw_descriptor(&token, &key)).await;
                    }
                    return;
                }
                _ = tokio::time::sleep(ad.interval) => {}
            }
        }
    }

    /// Stops the beacon, withdraws the descriptor and closes the listener.
    pub(crate) async fn close(&self) {
        self.cancel.cancel();
        self.tasks.close();
        self.tasks.wait().await;
        self.listener.close().await;
    }
}
