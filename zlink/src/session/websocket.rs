//! Sessions over WebSocket, for browsers: the same packets, one per binary message. The
//! upgrade has a deadline; the socket's buffers are sized for many idle sessions
//! (tungstenite reads into 128 KiB by default, which at 10k sockets is most of the RSS).

use std::time::Duration;

use bytes::Bytes;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

use super::connection::Connection;
use super::packet::{check_prefix, CloseReason, RawPacket, ReadError, PREFIX_LEN};
use super::transport::{PacketSink, PacketSource};

/// How long a client has to finish the upgrade.
const UPGRADE_DEADLINE: Duration = Duration::from_secs(10);
/// Read chunk of the WebSocket codec.
const READ_BUFFER: usize = 4 * 1024;

/// Upgrades `stream` and runs the session on it.
pub(crate) async fn run<S>(connection: Connection, stream: S)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let max_message = connection.limits.max_message_size;
    let cap = (max_message != 0).then_some(max_message + PREFIX_LEN);
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .max_message_size(cap)
        .max_frame_size(cap);
    let upgraded = tokio::time::timeout(
        UPGRADE_DEADLINE,
        tokio_tungstenite::accept_async_with_config(stream, Some(config)),
    )
    .await;
    let socket = match upgraded {
        Ok(Ok(socket)) => socket,
        Ok(Err(e)) => {
            tracing::debug!(session = %connection.peer.id, error = %e, "WebSocket upgrade failed");
            connection
                .peer
                .close(CloseReason::ProtocolError, "WebSocket upgrade failed");
            connection.peer.ended.cancel();
            return;
        }
        Err(_) => {
            tracing::debug!(session = %connection.peer.id, "WebSocket upgrade timed out");
            connection
                .peer
                .close(CloseReason::ProtocolError, "WebSocket upgrade timed out");
            connection.peer.ended.cancel();
            return;
        }
    };
    let (sink, source) = socket.split();
    connection
        .run(
            WsSource {
                socket: source,
                max_message,
            },
            WsSink { socket: sink },
        )
        .await;
}

/// Upgrades a connection the listener refuses, tells it why (the closing `notice`, then
/// a close frame), and closes it.
pub(crate) async fn refuse<S>(stream: S, notice: Bytes, reason: CloseReason, detail: &str)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .max_message_size(Some(READ_BUFFER))
        .max_frame_size(Some(READ_BUFFER));
    let upgraded = tokio_tungstenite::accept_async_with_config(stream, Some(config)).await;
    if let Ok(mut socket) = upgraded {
        let _ = socket.send(Message::Binary(notice)).await;
        let _ = socket
            .send(Message::Close(Some(close_frame(reason, detail))))
            .await;
        let _ = socket.close(None).await;
    }
}

struct WsSource<S> {
    socket: SplitStream<WebSocketStream<S>>,
    max_message: usize,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> PacketSource for WsSource<S> {
    async fn next(&mut self) -> Result<RawPacket, ReadError> {
        loop {
            let message = match self.socket.next().await {
                None => return Err(ReadError::Closed),
                Some(Err(WsError::Capacity(e))) => {
                    return Err(ReadError::Malformed(format!(
                        "a WebSocket message over the session's cap of {} bytes: {e}",
                        self.max_message
                    )))
                }
                Some(Err(WsError::Protocol(e))) => {
                    return Err(ReadError::Malformed(format!("WebSocket protocol: {e}")))
                }
                Some(Err(WsError::ConnectionClosed | WsError::AlreadyClosed)) => {
                    return Err(ReadError::Closed)
                }
                Some(Err(e)) => return Err(ReadError::Io(std::io::Error::other(e.to_string()))),
                Some(Ok(message)) => message,
            };
            match message {
                Message::Binary(bytes) => return packet_of(bytes, self.max_message),
                Message::Close(_) => return Err(ReadError::Closed),
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
                Message::Text(_) => {
                    return Err(ReadError::Malformed(
                        "a text WebSocket message: packets travel in binary messages".into(),
                    ))
                }
            }
        }
    }
}

/// One binary message as one packet: its prefix must account for exactly its bytes.
fn packet_of(bytes: Bytes, max_message: usize) -> Result<RawPacket, ReadError> {
    if bytes.len() < PREFIX_LEN {
        return Err(ReadError::Truncated {
            received: bytes.len(),
            expected: PREFIX_LEN,
        });
    }
    let header_len = usize::from(u16::from_be_bytes([bytes[0], bytes[1]]));
    let payload_len = u32::from_be_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]);
    check_prefix(header_len, payload_len, max_message)?;
    let expected = PREFIX_LEN + header_len + payload_len as usize;
    if bytes.len() != expected {
        return Err(ReadError::Malformed(format!(
            "a WebSocket message of {} bytes holds a packet of {expected}: one packet per message",
            bytes.len()
        )));
    }
    Ok(RawPacket {
        body: bytes.slice(PREFIX_LEN..),
        header_len,
    })
}

struct WsSink<S> {
    socket: SplitSink<WebSocketStream<S>, Message>,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> PacketSink for WsSink<S> {
    async fn write(&mut self, batch: &[Bytes]) -> std::io::Result<()> {
        for packet in batch {
            self.socket
                .feed(Message::Binary(packet.clone()))
                .await
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        }
        self.socket
            .flush()
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))
    }

    async fn finish(&mut self, closing: Option<(CloseReason, String)>) {
        let frame = closing.map(|(reason, diagnostic)| close_frame(reason, &diagnostic));
        let _ = self.socket.send(Message::Close(frame)).await;
        let _ = self.socket.close().await;
    }
}

/// The close code of a session that ends with `reason`: 4000 plus its number (RFC 6455
/// leaves 4000..=4999 to applications), so a browser's `CloseEvent.code` says what the
/// closing notice says.
pub(crate) fn close_code(reason: CloseReason) -> u16 {
    4000 + reason as u16
}

/// The longest reason text a close frame carries (125 bytes less the code).
const MAX_CLOSE_REASON: usize = 123;

/// A close frame: the reason's code, and its name with the diagnostic, cut at a
/// character boundary to fit.
fn close_frame(reason: CloseReason, diagnostic: &str) -> CloseFrame {
    let mut text = format!("{reason:?}: {diagnostic}");
    let mut cut = text.len().min(MAX_CLOSE_REASON);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    CloseFrame {
        code: CloseCode::from(close_code(reason)),
        reason: text.into(),
    }
}
