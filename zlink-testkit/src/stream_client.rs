//! A STREAM client written from the packet format alone (it shares no code with zlink's
//! `session` module), over TCP or WebSocket, with a hand-driven mode for attacks:
//! arbitrary bytes, lying prefixes, silence and never reading.
//!
//! Format: a 6-byte prefix (`u16` header length, `u32` payload size, big-endian), then
//! the header `0xF2 | kind | codec | flags | [request_seq u64] | name (u8 len) |
//! [metadata u16 len + block] | [correlation u8 len] | [flow 36 B + origin u8]`, then the
//! payload. Over WebSocket each packet is one binary message.

use std::collections::VecDeque;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::WebSocketStream;

/// Packet kinds.
pub mod kind {
    /// One-way.
    pub const SEND: u8 = 1;
    /// Expects one Response or Error.
    pub const REQUEST: u8 = 2;
    /// Answers a request.
    pub const RESPONSE: u8 = 3;
    /// A failed request, or a session-level error.
    pub const ERROR: u8 = 4;
    /// Heartbeats and the closing notice.
    pub const CONTROL: u8 = 5;
}

/// Header flag: a request sequence follows.
pub const FLAG_REQUEST_SEQ: u8 = 0x01;
/// Header flag: a metadata block follows.
pub const FLAG_METADATA: u8 = 0x02;
/// Header flag: a correlation follows.
pub const FLAG_CORRELATION: u8 = 0x08;
/// Header flag: a flow ID and origin follow.
pub const FLAG_FLOW: u8 = 0x10;

/// One packet, as the client writes or reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamPacket {
    /// The kind (see [`kind`]).
    pub kind: u8,
    /// 0 Raw, 1 JSON.
    pub codec: u8,
    /// The client's request sequence.
    pub request_seq: Option<u64>,
    /// The packet name.
    pub name: String,
    /// Metadata entries, in order.
    pub metadata: Vec<(String, String)>,
    /// The correlation bytes.
    pub correlation: Option<Vec<u8>>,
    /// The flow ID (36 bytes) and origin.
    pub flow: Option<(String, u8)>,
    /// The payload.
    pub payload: Vec<u8>,
    /// Extra flag bits to set (for attacks).
    pub extra_flags: u8,
}

impl StreamPacket {
    /// A JSON packet of `kind` named `name`.
    pub fn json(kind: u8, name: &str, value: &serde_json::Value) -> StreamPacket {
        StreamPacket {
            kind,
            codec: 1,
            name: name.to_string(),
            payload: serde_json::to_vec(value).unwrap_or_default(),
            ..StreamPacket::default()
        }
    }

    /// The payload as JSON (`Null` when it is not JSON).
    pub fn value(&self) -> serde_json::Value {
        serde_json::from_slice(&self.payload).unwrap_or(serde_json::Value::Null)
    }

    /// For a closing notice: its reason code and diagnostic.
    pub fn closing(&self) -> Option<(u8, String)> {
        if self.kind != kind::CONTROL || self.name != "session-closing" {
            return None;
        }
        let [1, reason, hi, lo, rest @ ..] = self.payload.as_slice() else {
            return None;
        };
        let len = usize::from(u16::from_be_bytes([*hi, *lo]));
        let diagnostic = rest.get(..len)?;
        Some((*reason, String::from_utf8_lossy(diagnostic).into_owned()))
    }

    /// For an Error packet: its `code` (zlink's `ErrorKind` number) and `message`.
    pub fn error(&self) -> Option<(u8, String)> {
        if self.kind != kind::ERROR {
            return None;
        }
        let value = self.value();
        let code = value["code"].as_u64().and_then(|c| u8::try_from(c).ok())?;
        Some((
            code,
            value["message"].as_str().unwrap_or_default().to_string(),
        ))
    }

    /// The whole packet's bytes: prefix, header, payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut header = vec![0xF2, self.kind, self.codec];
        let mut flags = self.extra_flags;
        if self.request_seq.is_some() {
            flags |= FLAG_REQUEST_SEQ;
        }
        if !self.metadata.is_empty() {
            flags |= FLAG_METADATA;
        }
        if self.correlation.is_some() {
            flags |= FLAG_CORRELATION;
        }
        if self.flow.is_some() {
            flags |= FLAG_FLOW;
        }
        header.push(flags);
        if let Some(seq) = self.request_seq {
            header.extend_from_slice(&seq.to_be_bytes());
        }
        header.push(self.name.len() as u8);
        header.extend_from_slice(self.name.as_bytes());
        if !self.metadata.is_empty() {
            let mut block = vec![self.metadata.len() as u8];
            for (key, value) in &self.metadata {
                block.push(key.len() as u8);
                block.extend_from_slice(key.as_bytes());
                block.extend_from_slice(&(value.len() as u16).to_be_bytes());
                block.extend_from_slice(value.as_bytes());
            }
            header.extend_from_slice(&(block.len() as u16).to_be_bytes());
            header.extend_from_slice(&block);
        }
        if let Some(correlation) = &self.correlation {
            header.push(correlation.len() as u8);
            header.extend_from_slice(correlation);
        }
        if let Some((id, origin)) = &self.flow {
            header.extend_from_slice(id.as_bytes());
            header.push(*origin);
        }
        let mut out = prefix(header.len() as u16, self.payload.len() as u32).to_vec();
        out.extend_from_slice(&header);
        out.extend_from_slice(&self.payload);
        out
    }

    /// Decodes a header and payload (the prefix already read).
    pub fn decode(header: &[u8], payload: Vec<u8>) -> Result<StreamPacket, String> {
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8], String> {
            let part = header
                .get(at..at + n)
                .ok_or_else(|| format!("header ends at {at}, needs {n} more"))?;
            at += n;
            Ok(part)
        };
        let fixed = take(4)?;
        if fixed[0] != 0xF2 {
            return Err(format!("marker {:#x}", fixed[0]));
        }
        let (kind, codec, flags) = (fixed[1], fixed[2], fixed[3]);
        let request_seq = if flags & FLAG_REQUEST_SEQ != 0 {
            let bytes: [u8; 8] = take(8)?.try_into().map_err(|_| "seq")?;
            Some(u64::from_be_bytes(bytes))
        } else {
            None
        };
        let name_len = usize::from(take(1)?[0]);
        let name = String::from_utf8(take(name_len)?.to_vec()).map_err(|e| e.to_string())?;
        let mut metadata = Vec::new();
        if flags & FLAG_METADATA != 0 {
            let len = take(2)?;
            let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
            let block = take(len)?.to_vec();
            let mut b = block.as_slice();
            let count = *b.first().ok_or("empty metadata")?;
            b = &b[1..];
            for _ in 0..count {
                let key_len = usize::from(*b.first().ok_or("metadata key")?);
                let key = String::from_utf8_lossy(b.get(1..1 + key_len).ok_or("key")?).into_owned();
                b = &b[1 + key_len..];
                let value_len = usize::from(u16::from_be_bytes([
                    *b.first().ok_or("len")?,
                    *b.get(1).ok_or("len")?,
                ]));
                let value =
                    String::from_utf8_lossy(b.get(2..2 + value_len).ok_or("value")?).into_owned();
                b = &b[2 + value_len..];
                metadata.push((key, value));
            }
        }
        let correlation = if flags & FLAG_CORRELATION != 0 {
            let len = usize::from(take(1)?[0]);
            Some(take(len)?.to_vec())
        } else {
            None
        };
        let flow = if flags & FLAG_FLOW != 0 {
            let id = String::from_utf8_lossy(take(36)?).into_owned();
            Some((id, take(1)?[0]))
        } else {
            None
        };
        Ok(StreamPacket {
            kind,
            codec,
            request_seq,
            name,
            metadata,
            correlation,
            flow,
            payload,
            extra_flags: 0,
        })
    }
}

/// A prefix declaring `header_len` and `payload_len`, whatever follows.
pub fn prefix(header_len: u16, payload_len: u32) -> [u8; 6] {
    let mut out = [0u8; 6];
    out[..2].copy_from_slice(&header_len.to_be_bytes());
    out[2..].copy_from_slice(&payload_len.to_be_bytes());
    out
}

/// Why reading stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadEnd {
    /// The server closed the connection.
    Closed,
    /// Nothing arrived in time.
    Timeout,
    /// The bytes were not a packet.
    Malformed(String),
}

/// A byte stream the client speaks over: TCP, or TLS over TCP.
trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Io for T {}

enum Conn {
    Stream(Box<dyn Io>),
    Ws(Box<WebSocketStream<Box<dyn Io>>>),
}

/// A self-signed certificate for `localhost` and its key, in PEM.
pub fn self_signed_localhost() -> (String, String) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
        .expect("rcgen makes a certificate");
    (certified.cert.pem(), certified.signing_key.serialize_pem())
}

/// TLS to `addr` trusting only `root_pem`, for the name `localhost`.
async fn tls_to(addr: &str, root_pem: &str) -> Result<Box<dyn Io>, String> {
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(root_pem.as_bytes()) {
        roots
            .add(cert.map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let name = ServerName::try_from("localhost").map_err(|e| e.to_string())?;
    let tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Box::new(tls))
}

/// A STREAM client. By default it answers heartbeat pings with pongs and does not
/// return them from [`next`](StreamClient::next).
pub struct StreamClient {
    conn: Conn,
    answer_pings: bool,
    pings_seen: usize,
    websocket_close: Option<(u16, String)>,
    /// Packets [`call_json`](Self::call_json) read before its answer, for [`next`](Self::next).
    skipped: VecDeque<StreamPacket>,
}

impl StreamClient {
    fn over(conn: Conn) -> StreamClient {
        StreamClient {
            conn,
            answer_pings: true,
            pings_seen: 0,
            websocket_close: None,
            skipped: VecDeque::new(),
        }
    }

    /// Connects over TCP to `addr` (`host:port`).
    pub async fn tcp(addr: &str) -> std::io::Result<StreamClient> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(StreamClient::over(Conn::Stream(Box::new(stream))))
    }

    /// Connects over TLS to `addr`, trusting only `root_pem` (a certificate for
    /// `localhost`).
    pub async fn tls(addr: &str, root_pem: &str) -> Result<StreamClient, String> {
        Ok(StreamClient::over(Conn::Stream(
            tls_to(addr, root_pem).await?,
        )))
    }

    /// Connects over WebSocket to `addr` (`host:port`).
    pub async fn websocket(addr: &str) -> Result<StreamClient, String> {
        let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        StreamClient::upgrade(format!("ws://{addr}/"), Box::new(tcp)).await
    }

    /// Connects over WebSocket inside TLS (`wss://`) to `addr`, trusting only `root_pem`.
    pub async fn websocket_tls(addr: &str, root_pem: &str) -> Result<StreamClient, String> {
        let io = tls_to(addr, root_pem).await?;
        StreamClient::upgrade(format!("wss://localhost:{}/", port_of(addr)), io).await
    }

    async fn upgrade(url: String, io: Box<dyn Io>) -> Result<StreamClient, String> {
        let (ws, _) = tokio_tungstenite::client_async(url, io)
            .await
            .map_err(|e| e.to_string())?;
        Ok(StreamClient::over(Conn::Ws(Box::new(ws))))
    }

    /// Whether to answer heartbeat pings (off: a client that lets its heartbeat lapse).
    pub fn answer_pings(mut self, answer: bool) -> StreamClient {
        self.answer_pings = answer;
        self
    }

    /// Pings the server sent so far.
    pub fn pings_seen(&self) -> usize {
        self.pings_seen
    }

    /// The code and reason of the WebSocket close frame the server sent, once read.
    pub fn websocket_close(&self) -> Option<(u16, String)> {
        self.websocket_close.clone()
    }

    /// Writes `bytes` as they are (over WebSocket: as one binary message).
    pub async fn write_raw(&mut self, bytes: &[u8]) -> Result<(), String> {
        match &mut self.conn {
            Conn::Stream(stream) => stream.write_all(bytes).await.map_err(|e| e.to_string()),
            Conn::Ws(ws) => ws
                .send(WsMessage::Binary(bytes.to_vec().into()))
                .await
                .map_err(|e| e.to_string()),
        }
    }

    /// Writes one packet.
    pub async fn write(&mut self, packet: &StreamPacket) -> Result<(), String> {
        self.write_raw(&packet.encode()).await
    }

    /// Sends a one-way JSON packet.
    pub async fn send_json(&mut self, name: &str, value: serde_json::Value) -> Result<(), String> {
        self.write(&StreamPacket::json(kind::SEND, name, &value))
            .await
    }

    /// Sends a JSON request with sequence `seq`.
    pub async fn request_json(
        &mut self,
        seq: u64,
        name: &str,
        value: serde_json::Value,
    ) -> Result<(), String> {
        let mut packet = StreamPacket::json(kind::REQUEST, name, &value);
        packet.request_seq = Some(seq);
        self.write(&packet).await
    }

    /// Sends a request and waits for its answer. Other packets read before it (a push may
    /// come before the answer) are kept: [`next`](Self::next) returns them first.
    pub async fn call_json(
        &mut self,
        seq: u64,
        name: &str,
        value: serde_json::Value,
        timeout: Duration,
    ) -> Result<StreamPacket, ReadEnd> {
        self.request_json(seq, name, value)
            .await
            .map_err(ReadEnd::Malformed)?;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let packet = self.next_read(left).await?;
            if packet.request_seq == Some(seq)
                && (packet.kind == kind::RESPONSE || packet.kind == kind::ERROR)
            {
                return Ok(packet);
            }
            self.skipped.push_back(packet);
        }
    }

    /// The next packet within `timeout`: those [`call_json`](Self::call_json) kept first,
    /// then what the server sends (pings answered and skipped when so set).
    pub async fn next(&mut self, timeout: Duration) -> Result<StreamPacket, ReadEnd> {
        match self.skipped.pop_front() {
            Some(packet) => Ok(packet),
            None => self.next_read(timeout).await,
        }
    }

    /// The next packet read from the connection within `timeout`.
    async fn next_read(&mut self, timeout: Duration) -> Result<StreamPacket, ReadEnd> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let packet = match tokio::time::timeout(left, self.read_packet()).await {
                Ok(result) => result?,
                Err(_) => return Err(ReadEnd::Timeout),
            };
            if packet.kind == kind::CONTROL && packet.name == "$zlink.heartbeat.ping" {
                self.pings_seen += 1;
                if self.answer_pings {
                    let pong = StreamPacket {
                        kind: kind::CONTROL,
                        codec: 0,
                        name: "$zlink.heartbeat.pong".into(),
                        payload: packet.payload.clone(),
                        ..StreamPacket::default()
                    };
                    // A pong the server no longer reads is not this read's concern.
                    let _ = self.write(&pong).await;
                    continue;
                }
            }
            return Ok(packet);
        }
    }

    /// Reads until the server closes; returns the closing notice it sent, if any.
    pub async fn closed_with(
        &mut self,
        timeout: Duration,
    ) -> Result<Option<(u8, String)>, ReadEnd> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut notice = None;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next(left).await {
                Ok(packet) => {
                    if let Some(closing) = packet.closing() {
                        notice = Some(closing);
                    }
                }
                Err(ReadEnd::Closed) => return Ok(notice),
                Err(other) => return Err(other),
            }
        }
    }

    async fn read_packet(&mut self) -> Result<StreamPacket, ReadEnd> {
        match &mut self.conn {
            Conn::Stream(stream) => {
                let mut head = [0u8; 6];
                read_exact(stream, &mut head).await?;
                let header_len = usize::from(u16::from_be_bytes([head[0], head[1]]));
                let payload_len = u32::from_be_bytes([head[2], head[3], head[4], head[5]]) as usize;
                if header_len > 1024 * 4 || payload_len > 16 * 1024 * 1024 {
                    return Err(ReadEnd::Malformed(format!(
                        "prefix declares {header_len} + {payload_len} bytes"
                    )));
                }
                let mut header = vec![0u8; header_len];
                read_exact(stream, &mut header).await?;
                let mut payload = vec![0u8; payload_len];
                read_exact(stream, &mut payload).await?;
                StreamPacket::decode(&header, payload).map_err(ReadEnd::Malformed)
            }
            Conn::Ws(ws) => loop {
                let message = match ws.next().await {
                    None => return Err(ReadEnd::Closed),
                    Some(Err(_)) => return Err(ReadEnd::Closed),
                    Some(Ok(message)) => message,
                };
                match message {
                    WsMessage::Binary(bytes) => {
                        if bytes.len() < 6 {
                            return Err(ReadEnd::Malformed("short binary message".into()));
                        }
                        let header_len = usize::from(u16::from_be_bytes([bytes[0], bytes[1]]));
                        let header = bytes
                            .get(6..6 + header_len)
                            .ok_or_else(|| ReadEnd::Malformed("short header".into()))?;
                        let payload = bytes[6 + header_len..].to_vec();
                        return StreamPacket::decode(header, payload).map_err(ReadEnd::Malformed);
                    }
                    WsMessage::Close(frame) => {
                        self.websocket_close =
                            frame.map(|f| (u16::from(f.code), f.reason.to_string()));
                        return Err(ReadEnd::Closed);
                    }
                    _ => continue,
                }
            },
        }
    }
}

fn port_of(addr: &str) -> &str {
    addr.rsplit_once(':').map_or(addr, |(_, port)| port)
}

async fn read_exact(stream: &mut Box<dyn Io>, buf: &mut [u8]) -> Result<(), ReadEnd> {
    match stream.read_exact(buf).await {
        Ok(_) => Ok(()),
        Err(_) => Err(ReadEnd::Closed),
    }
}
