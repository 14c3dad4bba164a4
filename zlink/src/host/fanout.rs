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
        let roles = self.runtime.fanout_roles()?;
        let subscriber = roles.subscriber(channel).ok_or_else(|| {
            Error::new(
                ErrorKind::NotConfigured,
                format!("this node does not subscribe to fanout {channel}"),
            )
        })?;
        Ok(subscriber.statuses())
    }
}
