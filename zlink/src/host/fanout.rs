//! [`FanoutHandle`]: the runtime's handle for fanout roles.

use super::Runtime;
use crate::call::CallOptions;
use crate::wire::Message;
use crate::{Error, ErrorKind, Result};

/// The fanout side of a runtime, from [`Runtime::fanout`].
#[derive(Clone, Copy)]
pub struct FanoutHandle<'a> {
    runtime: &'a Runtime,
}

impl<'a> FanoutHandle<'a> {
    pub(crate) fn new(runtime: &'a Runtime) -> Self {
        FanoutHandle { runtime }
    }

    /// Publishes `event` on fanout `channel` with its packet name as topic. Completes when
    /// queued locally; zero subscribers is success. See [`publish_topic_with`](Self::publish_topic_with).
    pub async fn publish<M: Message>(&self, channel: &str, event: &M) -> Result<()> {
        self.publish_topic_with(channel, M::PACKET_NAME, event, CallOptions::default())
            .await
    }

    /// Publishes `event` on fanout `channel` under an explicit `topic`.
    pub async fn publish_topic<M: Message>(
        &self,
        channel: &str,
        topic: &str,
        event: &M,
    ) -> Result<()> {
        self.publish_topic_with(channel, topic, event, CallOptions::default())
            .await
    }

    /// [`publish_topic`](Self::publish_topic) with a timeout: with NoDrop, how long publish
    /// may wait for room (default: the send timeout) before `DeadlineExceeded`. The reserved
    /// beacon topic `01 5A 4C 46 31` is an argument error.
    pub async fn publish_topic_with<M: Message>(
        &self,
        channel: &str,
        topic: &str,
        event: &M,
        options: CallOptions,
    ) -> Result<()> {
        if !self.runtime.node.is_running() {
            return Err(Error::new(
                ErrorKind::ShuttingDown,
                "the runtime is shutting down",
            ));
        }
        let roles = self.runtime.fanout_roles()?;
        let publisher = roles.publisher(channel)?;
        let payload = event.encode()?;
        let timeout = options
            .timeout
            .unwrap_or(self.runtime.node.settings().send_timeout);
        publisher
            .publish(
                bytes::Bytes::copy_from_slice(topic.as_bytes()),
                M::PACKET_NAME,
                &options.metadata,
                payload,
                timeout,
            )
            .await
    }

    /// Where subscribers reach this process's fanout publisher of `channel`.
    pub fn endpoint(&self, channel: &str) -> Option<String> {
        let roles = self.runtime.fanout_roles().ok()?;
        let endpoint = roles.publisher(channel).ok()?.endpoint().to_string();
        Some(endpoint)
    }

    /// How many subscriber copies this process's publisher of `channel` dropped at the
    /// SendHighWaterMark. `NotConfigured` when this process publishes no such channel.
    pub fn dropped(&self, channel: &str) -> Result<u64> {
        Ok(self.runtime.fanout_roles()?.publisher(channel)?.dropped())
    }

    /// The publishers this process's subscriber of `channel` follows. `NotConfigured` when
    /// this process does not subscribe to `channel`.
    pub fn publishers(
        &self,
        channel: &str,
    ) -> Result<Vec<crate::channel::fanout::PublisherStatus>> {
        Ok(self.subscriber(channel)?.statuses())
    }

    /// Waits until this process's subscriber of `channel` follows at least `publishers`
    /// ready publishers (a beacon or an event arrived within the liveness deadline), woken
    /// by readiness changes rather than polling. PUB/SUB drops what is published before a
    /// subscription arrives, so a subscriber that must not miss the first events waits
    /// for this before they are published. Fails `DeadlineExceeded` after the runtime's
    /// request timeout, `ShuttingDown` if the runtime stops meanwhile, and
    /// `NotConfigured` when this process does not subscribe to `channel`.
    ///
    /// ```no_run
    /// # async fn run(rt: zlink::Runtime) -> zlink::Result<()> {
    /// rt.fanout().ready("prices", 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn ready(&self, channel: &str, publishers: usize) -> Result<()> {
        let mut ready = self.subscriber(channel)?.ready_publishers();
        let timeout = self.runtime.node.settings().request_timeout;
        let waited = tokio::time::timeout(timeout, async {
            ready.wait_for(|n| *n >= publishers).await.map(|_| ())
        })
        .await;
        match waited {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(Error::new(
                ErrorKind::ShuttingDown,
                format!("the subscriber of fanout {channel} stopped"),
            )),
            Err(_) => Err(Error::new(
                ErrorKind::DeadlineExceeded,
                format!("fanout {channel} did not reach {publishers} ready publisher(s) in time"),
            )),
        }
    }

    fn subscriber(
        &self,
        channel: &str,
    ) -> Result<std::sync::Arc<crate::channel::fanout::FanoutSubscriber>> {
        let roles = self.runtime.fanout_roles()?;
        roles.subscriber(channel).cloned().ok_or_else(|| {
            Error::new(
                ErrorKind::NotConfigured,
                format!("this node does not subscribe to fanout {channel}"),
            )
        })
    }
}
