//! The two ends of a session's connection, whatever carries it: packets come out of a
//! [`PacketSource`] and batches of encoded packets go into a [`PacketSink`]. A byte
//! stream (TCP, TLS) frames packets by their prefix; WebSocket carries one per message.

use std::future::Future;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::packet::{CloseReason, PacketReader, RawPacket, ReadError};

/// Where a session reads its client's packets.
pub(crate) trait PacketSource: Send + 'static {
    fn next(&mut self) -> impl Future<Output = Result<RawPacket, ReadError>> + Send;
}

/// Where a session writes to its client.
pub(crate) trait PacketSink: Send + 'static {
    /// Writes the encoded packets, in order.
    fn write(&mut self, batch: &[Bytes]) -> impl Future<Output = std::io::Result<()>> + Send;
    /// Ends the connection's sending side, saying why where the transport can (a
    /// WebSocket close frame).
    fn finish(&mut self, closing: Option<(CloseReason, String)>)
        -> impl Future<Output = ()> + Send;
}

impl<R: AsyncRead + Unpin + Send + 'static> PacketSource for PacketReader<R> {
    fn next(&mut self) -> impl Future<Output = Result<RawPacket, ReadError>> + Send {
        PacketReader::next(self)
    }
}

/// Packets written to a byte stream; small batches are joined into one write.
pub(crate) struct StreamSink<W> {
    io: W,
}

/// Batches up to this size go out in one write.
const JOIN_BELOW: usize = 16 * 1024;

impl<W> StreamSink<W> {
    pub(crate) fn new(io: W) -> Self {
        StreamSink { io }
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> PacketSink for StreamSink<W> {
    async fn write(&mut self, batch: &[Bytes]) -> std::io::Result<()> {
        let total: usize = batch.iter().map(Bytes::len).sum();
        if batch.len() > 1 && total <= JOIN_BELOW {
            // Joined per batch, not kept: an idle session holds no write buffer.
            let mut joined = Vec::with_capacity(total);
            for packet in batch {
                joined.extend_from_slice(packet);
            }
            self.io.write_all(&joined).await?;
        } else {
            for packet in batch {
                self.io.write_all(packet).await?;
            }
        }
        self.io.flush().await
    }

    async fn finish(&mut self, _closing: Option<(CloseReason, String)>) {
        let _ = self.io.shutdown().await;
    }
}
