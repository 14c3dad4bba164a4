//! Reading packets off a byte stream (TCP or TLS) with the limits checked before anything
//! is allocated for them. An idle session holds no read buffer: it waits on a small array
//! in the reading future, and a body is allocated only once its prefix passed the cap.

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::PREFIX_LEN;

/// The smallest header: marker, kind, codec, flags and the name's length.
const MIN_HEADER_LEN: usize = 5;
/// How much of a long body is reserved at a time: a peer that declares a large message
/// and sends it slowly holds only what it sent, plus this.
const BODY_STEP: usize = 64 * 1024;
/// Read-ahead kept while packets come back to back.
const READ_AHEAD: usize = 4 * 1024;

/// Why no packet came.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The peer closed between packets.
    Closed,
    /// The peer closed inside a packet.
    Truncated { received: usize, expected: usize },
    /// The prefix declares a message over the cap: nothing of it is read.
    Oversize { declared: u64, max: usize },
    /// The prefix declares a header too short to hold its fixed part.
    BadPrefix { header_len: usize },
    /// The transport carried something that is no packet (a WebSocket text message).
    Malformed(String),
    /// The connection failed.
    Io(std::io::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Closed => write!(f, "the client closed the connection"),
            ReadError::Truncated { received, expected } => write!(
                f,
                "the connection closed {received} bytes into a packet of {expected}"
            ),
            ReadError::Oversize { declared, max } => write!(
                f,
                "a message of {declared} bytes (header and payload) exceeds the session's cap of {max}"
            ),
            ReadError::BadPrefix { header_len } => write!(
                f,
                "the prefix declares a header of {header_len} bytes (at least {MIN_HEADER_LEN})"
            ),
            ReadError::Malformed(detail) => f.write_str(detail),
            ReadError::Io(e) => write!(f, "the connection failed: {e}"),
        }
    }
}

/// One packet as read: the header and payload bytes, and where the header ends.
pub(crate) struct RawPacket {
    pub(crate) body: Bytes,
    pub(crate) header_len: usize,
}

/// Reads packets from `io`, each at most `max_message` bytes of header and payload
/// (`0`: no cap of the framework's, so only the length fields bound it).
pub(crate) struct PacketReader<R> {
    io: R,
    buf: BytesMut,
    max_message: usize,
    back_to_back: bool,
}

impl<R: AsyncRead + Unpin> PacketReader<R> {
    pub(crate) fn new(io: R, max_message: usize) -> Self {
        PacketReader {
            io,
            buf: BytesMut::new(),
            max_message,
            back_to_back: false,
        }
    }

    /// The next packet.
    pub(crate) async fn next(&mut self) -> Result<RawPacket, ReadError> {
        while self.buf.len() < PREFIX_LEN {
            self.fill_small().await?;
        }
        let header_len = usize::from(u16::from_be_bytes([self.buf[0], self.buf[1]]));
        let payload_len = u32::from_be_bytes([self.buf[2], self.buf[3], self.buf[4], self.buf[5]]);
        check_prefix(header_len, payload_len, self.max_message)?;
        let expected = PREFIX_LEN + header_len + payload_len as usize;
        while self.buf.len() < expected {
            let missing = expected - self.buf.len();
            let ahead = if self.back_to_back { READ_AHEAD } else { 0 };
            self.buf.reserve(missing.min(BODY_STEP) + ahead);
            let before = self.buf.len();
            let read = self
                .io
                .read_buf(&mut self.buf)
                .await
                .map_err(ReadError::Io)?;
            if read == 0 {
                return Err(ReadError::Truncated {
                    received: before,
                    expected,
                });
            }
            self.back_to_back = self.buf.len() > expected;
        }
        let mut packet = self.buf.split_to(expected);
        packet.advance(PREFIX_LEN);
        if self.buf.is_empty() {
            // Idle sessions keep no buffer: the next wait reads into the future's array.
            self.buf = BytesMut::new();
        }
        Ok(RawPacket {
            body: packet.freeze(),
            header_len,
        })
    }

    async fn fill_small(&mut self) -> Result<(), ReadError> {
        let mut small = [0u8; 128];
        let read = self.io.read(&mut small).await.map_err(ReadError::Io)?;
        if read == 0 {
            return Err(if self.buf.is_empty() {
                ReadError::Closed
            } else {
                ReadError::Truncated {
                    received: self.buf.len(),
                    expected: PREFIX_LEN,
                }
            });
        }
        self.back_to_back = read == small.len();
        self.buf.extend_from_slice(&small[..read]);
        Ok(())
    }
}

/// Checks a prefix against the cap; also what a WebSocket message's prefix must pass.
pub(crate) fn check_prefix(
    header_len: usize,
    payload_len: u32,
    max_message: usize,
) -> Result<(), ReadError> {
    if header_len < MIN_HEADER_LEN {
        return Err(ReadError::BadPrefix { header_len });
    }
    let declared = header_len as u64 + u64::from(payload_len);
    if max_message != 0 && declared > max_message as u64 {
        return Err(ReadError::Oversize {
            declared,
            max: max_message,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    fn packet(name: &str, payload: &[u8]) -> Vec<u8> {
        let header_len = 5 + name.len();
        let mut out = Vec::new();
        out.extend_from_slice(&(header_len as u16).to_be_bytes());
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(&[0xF2, 1, 1, 0, name.len() as u8]);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(payload);
        out
    }

    #[tokio::test]
    async fn packets_split_across_reads_and_packets_sharing_a_read_both_arrive_whole() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut reader = PacketReader::new(server, 64 * 1024);
        let mut bytes = packet("A", &[7u8; 300]);
        bytes.extend(packet("B", b"x"));
        bytes.extend(packet("C", b""));
        tokio::spawn(async move {
            for chunk in bytes.chunks(13) {
                let _ = client.write_all(chunk).await;
            }
        });
        let a = reader.next().await.expect("A");
        assert_eq!(a.body.len(), 6 + 300);
        assert_eq!(&a.body[a.header_len..], &[7u8; 300][..]);
        assert_eq!(&reader.next().await.expect("B").body[6..], b"x");
        assert_eq!(reader.next().await.expect("C").body.len(), 6);
        assert!(matches!(reader.next().await, Err(ReadError::Closed)));
    }

    #[tokio::test]
    async fn a_prefix_declaring_4_gib_is_refused_before_any_of_it_is_read() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut reader = PacketReader::new(server, 64 * 1024);
        client
            .write_all(&[0, 6, 0xFF, 0xFF, 0xFF, 0xFF])
            .await
            .expect("write");
        match reader.next().await {
            Err(ReadError::Oversize { declared, max }) => {
                assert_eq!(declared, 6 + u64::from(u32::MAX));
                assert_eq!(max, 64 * 1024);
            }
            other => panic!("expected Oversize, got {:?}", other.map(|p| p.body)),
        }
        assert!(reader.buf.capacity() < 1024);
    }

    #[tokio::test]
    async fn a_close_inside_a_packet_is_truncated_not_closed() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut reader = PacketReader::new(server, 64 * 1024);
        let bytes = packet("A", b"hello");
        client.write_all(&bytes[..9]).await.expect("write");
        drop(client);
        assert!(matches!(
            reader.next().await,
            Err(ReadError::Truncated { .. })
        ));
    }
}
