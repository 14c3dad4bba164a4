//! The SUB side of fanout: one connection to a publisher, subscriptions sent as messages
//! (`0x01` + topic, understood by every ZMTP 3 PUB), events read with backpressure.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::mpsc;

use super::connection::{Delivery, ZmtpConnection};
use super::handshake::SocketType;
use super::transport::dial;
use crate::link::transport::{ConnectOptions, Connection, Frames, LinkError};

/// How many whole events may wait between the socket and the subscriber's loop.
const INBOUND_BACKLOG: usize = 64;

/// A subscription connection to one publisher.
pub(crate) struct SubConnection {
    conn: Arc<ZmtpConnection>,
    inbound: mpsc::Receiver<Frames>,
}

impl SubConnection {
    /// Connects to the publisher at `endpoint` and subscribes to `topics`.
    pub(crate) async fn connect(
        endpoint: &str,
        options: &ConnectOptions,
        topics: &[&[u8]],
    ) -> Result<Self, LinkError> {
        let (tx, inbound) = mpsc::channel(INBOUND_BACKLOG);
        let conn = dial(endpoint, options, SocketType::Sub, Delivery::Channel(tx)).await?;
        for topic in topics {
            let mut message = BytesMut::with_capacity(1 + topic.len());
            message.put_u8(1);
            message.put_slice(topic);
            conn.send(vec![message.freeze()]).await?;
        }
        Ok(SubConnection { conn, inbound })
    }

    /// The next event, or `None` once the connection has ended.
    pub(crate) async fn recv(&mut self) -> Option<Vec<Bytes>> {
        self.inbound.recv().await
    }
}

impl Drop for SubConnection {
    fn drop(&mut self) {
        self.conn.close();
    }
}
