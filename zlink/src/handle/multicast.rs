//! [`Multicast`]: Logical Multicast from outside a Spot (a Spot publishes through its
//! context, the same way).

use std::future::IntoFuture;

use bytes::Bytes;

use super::call_builder::option_setters;
use super::Handle;
use crate::call::{BoxFuture, CallOptions};
use crate::wire::Message;
use crate::Result;

/// Logical Multicast: events to the Spots that subscribe to a topic on a RouteMesh
/// channel, from [`Handle::multicast`] (a `Runtime` dereferences to its handle).
#[derive(Clone, Copy)]
pub struct Multicast<'a> {
    handle: &'a Handle,
}

impl<'a> Multicast<'a> {
    pub(crate) fn new(handle: &'a Handle) -> Self {
        Multicast { handle }
    }

    /// Publishes `event` to `topic` on the RouteMesh channel `channel`: every Spot whose
    /// type subscribes to that topic (`#[subscribe(channel = .., topic = ..)]`), on every
    /// ready Server member of the channel with weight > 0, this node included, runs its
    /// handler with it. One record goes to each such node, whatever its weight. Completes
    /// once every target had its turn: zero targets is success, and a target that fails
    /// (unreachable, a full queue) is skipped, never reported. At most once and in order
    /// per publisher; nothing is stored or resent. `DeadlineExceeded`, with nothing sent,
    /// when the publish could not start within the send timeout.
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
    /// # struct Announcement { text: String }
    /// # async fn run(rt: zlink::Runtime) -> zlink::Result<()> {
    /// let news = Announcement { text: "servers restart at 04:00".into() };
    /// rt.multicast().publish("rooms", "announce", &news).await?;
    /// # Ok(()) }
    /// ```
    pub fn publish<M: Message>(
        self,
        channel: &'a str,
        topic: &'a str,
        event: &M,
    ) -> MulticastPublish<'a> {
        MulticastPublish {
            handle: self.handle,
            channel,
            topic,
            packet: M::PACKET_NAME,
            payload: event.encode(),
            options: CallOptions::default(),
        }
    }
}

/// One Logical Multicast publish, ready to go: `.await` it, or first set its timeout and
/// metadata.
#[must_use = "a publish does nothing until it is awaited"]
pub struct MulticastPublish<'a> {
    handle: &'a Handle,
    channel: &'a str,
    topic: &'a str,
    packet: &'static str,
    payload: Result<Bytes>,
    options: CallOptions,
}

impl MulticastPublish<'_> {
    option_setters!(
        /// How long the publish may wait to start and for room on each link (default:
        /// the send timeout, 1 s).
    );
}

impl<'a> IntoFuture for MulticastPublish<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Result<()>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            self.handle.ensure_running()?;
            let port = self.handle.objects()?;
            let payload = self.payload?;
            let send_timeout = self.handle.send_timeout_or(self.options.timeout);
            port.publish(
                self.channel,
                self.topic,
                self.packet,
                payload,
                self.options.metadata,
                send_timeout,
            )
            .await
        })
    }
}
