//! [`RawZmtp`]: a ZMTP 3.1 peer on a plain socket that says exactly what a test tells it
//! to, including what no well-behaved peer would: length bombs, too many frames, silence,
//! or never reading. It speaks only NULL security.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A raw ZMTP connection.
pub struct RawZmtp {
    stream: TcpStream,
}

/// The 64-byte ZMTP 3.1 greeting with the NULL mechanism.
pub fn null_greeting() -> [u8; 64] {
    let mut g = [0u8; 64];
    g[0] = 0xFF;
    g[9] = 0x7F;
    g[10] = 3;
    g[11] = 1;
    g[12..16].copy_from_slice(b"NULL");
    g
}

/// A frame: flags (MORE 0x01, COMMAND 0x04; LONG is chosen by size) and body.
pub fn frame(flags: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 9);
    if body.len() > 255 {
        out.push(flags | 0x02);
        out.extend_from_slice(&(body.len() as u64).to_be_bytes());
    } else {
        out.push(flags);
        out.push(body.len() as u8);
    }
    out.extend_from_slice(body);
    out
}

/// A NULL READY command announcing `socket_type`.
pub fn ready(socket_type: &str) -> Vec<u8> {
    let mut body = vec![5u8];
    body.extend_from_slice(b"READY");
    body.push(11);
    body.extend_from_slice(b"Socket-Type");
    body.extend_from_slice(&(socket_type.len() as u32).to_be_bytes());
    body.extend_from_slice(socket_type.as_bytes());
    frame(0x04, &body)
}

/// The header of a long frame that declares `size` bytes and sends none of them.
pub fn length_bomb(size: u64) -> Vec<u8> {
    let mut out = vec![0x02];
    out.extend_from_slice(&size.to_be_bytes());
    out
}

fn address(endpoint: &str) -> &str {
    endpoint.strip_prefix("tcp://").unwrap_or(endpoint)
}

impl RawZmtp {
    /// Opens a TCP connection and sends nothing.
    pub async fn connect(endpoint: &str) -> std::io::Result<Self> {
        let stream = TcpStream::connect(address(endpoint)).await?;
        Ok(RawZmtp { stream })
    }

    /// Wraps an accepted stream (a fake server).
    pub fn from_stream(stream: TcpStream) -> Self {
        RawZmtp { stream }
    }

    /// Connects, exchanges greetings and NULL READY as a DEALER: the ZMTP layer is done,
    /// no zlink hello has been sent.
    pub async fn dealer(endpoint: &str) -> std::io::Result<Self> {
        let mut raw = Self::connect(endpoint).await?;
        raw.handshake("DEALER").await?;
        Ok(raw)
    }

    /// Greets and sends READY as `socket_type`, then reads the peer's greeting and READY.
    pub async fn handshake(&mut self, socket_type: &str) -> std::io::Result<()> {
        self.write(&null_greeting()).await?;
        let mut theirs = [0u8; 64];
        self.stream.read_exact(&mut theirs).await?;
        self.write(&ready(socket_type)).await?;
        self.read_frame(1 << 16).await?;
        Ok(())
    }

    /// Writes raw bytes.
    pub async fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// Sends a multipart message (MORE on all frames but the last).
    pub async fn send(&mut self, frames: &[&[u8]]) -> std::io::Result<()> {
        let mut out = Vec::new();
        for (i, f) in frames.iter().enumerate() {
            let more = if i + 1 < frames.len() { 0x01 } else { 0 };
            out.extend(frame(more, f));
        }
        self.write(&out).await
    }

    /// Reads one frame (flags and body), refusing bodies over `max`.
    pub async fn read_frame(&mut self, max: usize) -> std::io::Result<(u8, Vec<u8>)> {
        let flags = self.stream.read_u8().await?;
        let size = if flags & 0x02 != 0 {
            self.stream.read_u64().await? as usize
        } else {
            usize::from(self.stream.read_u8().await?)
        };
        if size > max {
            return Err(std::io::Error::other("frame over the test's limit"));
        }
        let mut body = vec![0u8; size];
        self.stream.read_exact(&mut body).await?;
        Ok((flags, body))
    }

    /// Reads one whole message.
    pub async fn recv(&mut self) -> std::io::Result<Vec<Vec<u8>>> {
        let mut frames = Vec::new();
        loop {
            let (flags, body) = self.read_frame(16 << 20).await?;
            if flags & 0x04 != 0 {
                continue;
            }
            frames.push(body);
            if flags & 0x01 == 0 {
                return Ok(frames);
            }
        }
    }

    /// Whether the peer closes the connection within `within` (reading and discarding
    /// whatever it still sends).
    pub async fn closed_within(&mut self, within: Duration) -> bool {
        let mut sink = [0u8; 4096];
        let until = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(until, self.stream.read(&mut sink)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
                Err(_) => return false,
            }
        }
    }
}
