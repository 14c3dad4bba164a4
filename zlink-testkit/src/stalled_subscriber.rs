//! [`StalledSubscriber`]: a ZMTP SUB that subscribes and then never reads, the slowest
//! subscriber there is. Its socket buffers fill, then the publisher's queue for it.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A subscriber connection that has stopped reading. Dropping it closes the connection.
pub struct StalledSubscriber {
    _stream: TcpStream,
}

impl StalledSubscriber {
    /// Connects to the PUB at `endpoint` (`tcp://host:port`), subscribes to `topic` and
    /// stops reading.
    pub async fn connect(endpoint: &str, topic: &[u8]) -> std::io::Result<Self> {
        let address = endpoint.strip_prefix("tcp://").unwrap_or(endpoint);
        let mut stream = TcpStream::connect(address).await?;
        let mut greeting = [0u8; 64];
        greeting[0] = 0xFF;
        greeting[9] = 0x7F;
        greeting[10] = 3;
        greeting[12..16].copy_from_slice(b"NULL");
        stream.write_all(&greeting).await?;
        let mut theirs = [0u8; 64];
        stream.read_exact(&mut theirs).await?;
        // READY with Socket-Type SUB, as a command frame.
        let mut ready = vec![5u8];
        ready.extend_from_slice(b"READY");
        ready.push(11);
        ready.extend_from_slice(b"Socket-Type");
        ready.extend_from_slice(&3u32.to_be_bytes());
        ready.extend_from_slice(b"SUB");
        let mut out = vec![0x04, ready.len() as u8];
        out.extend_from_slice(&ready);
        // The subscription, as a message: 0x01 + topic.
        out.push(0x00);
        out.push((topic.len() + 1) as u8);
        out.push(0x01);
        out.extend_from_slice(topic);
        stream.write_all(&out).await?;
        // Their READY: flags, size, body.
        let _flags = stream.read_u8().await?;
        let size = stream.read_u8().await?;
        let mut body = vec![0u8; usize::from(size)];
        stream.read_exact(&mut body).await?;
        Ok(StalledSubscriber { _stream: stream })
    }
}
