//! [`FanoutHandle`]: publishing on fanout channels, and what this process's publishers and
//! subscribers see.

use std::future::IntoFuture;

use bytes::Bytes;

use super::call_builder::option_setters;
use super::Handle;
use crate::call::{BoxFuture, CallOptions};
use crate::wire::Message;
use crate::{Error, ErrorKind, Result};

/// One publisher as a subscriber sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PublisherStatus {
    /// The publisher's endpoint.
    pub endpoint: String,
    /// Whether a beacon or a well-formed event arrived within the liveness deadline.
    pub ready: bool,
    /// How many times its SUB socket was recreated (after silence or a protocol error).
    pub resubscribed: u64,
}

/// The fanout side of a handle, from [`Handle::fanout`] (a
/// `Runtime` dereferences to its handle).
#[derive(Clone, Copy)]
pub struct FanoutHandle<'a> {
    handle: &'a Handle,
}

impl<'a> FanoutHandle<'a> {
    pub(crate) fn new(handle: &'a Handle) -> Self {
        FanoutHandle { handle }
    }

    /// Publishes `event` on fanout `channel`, with its packet name as topic unless
    /// [`Publish::topic`] names another. Completes when queued locally; zero subscribers
    /// is success.
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
    /// # struct Tick;
    /// # async fn run(rt: zlink::Runtime) -> zlink::Result<()> {
    /// rt.fanout().publish("prices", &Tick).await?;
    /// rt.fanout().publish("prices", &Tick).topic("prices.eu").await?;
    /// # Ok(()) }
    /// ```
    pub fn publish<M: Message>(self, channel: &'a str, event: &M) -> Publish<'a> {
        Publish {
            handle: self.handle,
            channel,
            topic: None,
            packet: M::PACKET_NAME,
            payload: event.encode(),
            options: CallOptions::default(),
        }
    }

    /// Where subscribers reach this process's fanout publisher of `channel`.
    pub fn endpoint(self, channel: &str) -> Option<String> {
        self.handle.fanout_port().ok()?.endpoint(channel)
    }

    /// How many subscriber copies this process's publisher of `channel` dropped at the
    /// SendHighWaterMark. `NotConfigured` when this process publishes no such channel.
    pub fn dropped(self, channel: &str) -> Result<u64> {
        self.handle.fanout_port()?.dropped(channel)
    }

    /// The publishers this process's subscriber of `channel` follows. `NotConfigured` when
    /// this process does not subscribe to `channel`.
    pub fn publishers(self, channel: &str) -> Result<Vec<PublisherStatus>> {
        self.handle.fanout_port()?.publishers(channel)
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
    pub async fn ready(self, channel: &str, publishers: usize) -> Result<()> {
        let mut ready = self.handle.fanout_port()?.ready_publishers(channel)?;
        let timeout = self.handle.node().settings().request_timeout;
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
}

/// One publish, ready to go: `.await` it, or first set its topic, timeout and metadata.
#[must_use = "a publish does nothing until it is awaited"]
pub struct Publish<'a> {
    handle: &'a Handle,
    channel: &'a str,
    topic: Option<&'a str>,
    packet: &'static str,
    payload: Result<Bytes>,
    options: CallOptions,
}

impl<'a> Publish<'a> {
    /// Publishes under `topic` instead of the packet name. The reserved beacon topic
    /// `01 5A 4C 46 31` is an argument error.
    pub fn topic(mut self, topic: &'a str) -> Self {
        self.topic = Some(topic);
        self
    }

    option_setters!(
        /// With NoDrop, how long the publish may wait for room (default: the send timeout)
        /// before `DeadlineExceeded`.
    );
}

impl<'a> IntoFuture for Publish<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Result<()>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            self.handle.ensure_running()?;
            let port = self.handle.fanout_port()?;
            let payload = self.payload?;
            let topic = Bytes::copy_from_slice(self.topic.unwrap_or(self.packet).as_bytes());
            let timeout = self.handle.send_timeout_or(self.options.timeout);
            port.publish(
                self.channel,
                topic,
                self.packet,
                &self.options.metadata,
                payload,
                timeout,
            )
            .await
        })
    }
}
