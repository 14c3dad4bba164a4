//! A small chat client, written from the book's STREAM packets section: a 6-byte prefix
//! (u16 header length, u32 payload length, big-endian), a header that starts with
//! `0xF2`, and a JSON payload. Over TCP the packets follow each other on the stream; over
//! WebSocket each is one binary message. It answers the server's heartbeat pings itself.

use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Mutex};
use tokio_tungstenite::tungstenite::Message as WsMessage;

const MARKER: u8 = 0xF2;
/// Packet kinds.
pub const SEND: u8 = 1;
/// A request: it carries a sequence number its answer repeats.
pub const REQUEST: u8 = 2;
/// The answer to a request.
pub const RESPONSE: u8 = 3;
/// A request's failure: `{"code": <ErrorKind>, "message": ...}`.
pub const ERROR: u8 = 4;
/// Heartbeats and the closing notice.
pub const CONTROL: u8 = 5;
const RAW: u8 = 0;
const JSON: u8 = 1;
const FLAG_SEQ: u8 = 0x01;
const FLAG_METADATA: u8 = 0x02;
const FLAG_CORRELATION: u8 = 0x08;
const FLAG_FLOW: u8 = 0x10;
/// The largest packet this client reads.
const MAX_PACKET: usize = 1 << 20;

/// How the client reaches the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Packets on a TCP stream (`HOST:PORT`).
    Tcp,
    /// One packet per binary WebSocket message (`HOST:PORT`, path `/`).
    WebSocket,
}

/// One packet the server sent.
#[derive(Debug, Clone)]
pub struct Incoming {
    /// Its kind ([`SEND`], [`RESPONSE`], [`ERROR`], [`CONTROL`]).
    pub kind: u8,
    /// The request sequence it answers, if any.
    pub seq: Option<u64>,
    /// Its packet name.
    pub name: String,
    /// Its payload.
    pub payload: Vec<u8>,
}

impl Incoming {
    /// The payload as JSON (`Null` when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.payload).unwrap_or(serde_json::Value::Null)
    }

    /// The reason code of a `session-closing` notice.
    pub fn closing_reason(&self) -> Option<u8> {
        (self.kind == CONTROL && self.name == "session-closing")
            .then(|| self.payload.get(1).copied())
            .flatten()
    }
}

enum Writer {
    Tcp(OwnedWriteHalf),
    Ws(futures::stream::SplitSink<WsStream, WsMessage>),
}

type WsStream = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

/// The sending side of a connection; packets the server sends arrive on the receiver
/// [`connect`] returns, `None` once the connection closed.
#[derive(Clone)]
pub struct ChatClient {
    writer: Arc<Mutex<Writer>>,
}

/// Connects to a gateway at `address`.
pub async fn connect(
    address: &str,
    transport: Transport,
) -> std::io::Result<(ChatClient, mpsc::Receiver<Incoming>)> {
    let (tx, rx) = mpsc::channel(1024);
    let writer = match transport {
        Transport::Tcp => {
            let stream = TcpStream::connect(address).await?;
            stream.set_nodelay(true)?;
            let (read, write) = stream.into_split();
            let writer = Arc::new(Mutex::new(Writer::Tcp(write)));
            tokio::spawn(read_tcp(
                read,
                tx,
                ChatClient {
                    writer: writer.clone(),
                },
            ));
            writer
        }
        Transport::WebSocket => {
            let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{address}/"))
                .await
                .map_err(std::io::Error::other)?;
            let (write, read) = ws.split();
            let writer = Arc::new(Mutex::new(Writer::Ws(write)));
            tokio::spawn(read_ws(
                read,
                tx,
                ChatClient {
                    writer: writer.clone(),
                },
            ));
            writer
        }
    };
    Ok((ChatClient { writer }, rx))
}

impl ChatClient {
    /// Sends a one-way packet `name` with `value` as its JSON payload.
    pub async fn send(&self, name: &str, value: &impl Serialize) -> std::io::Result<()> {
        self.write(encode(SEND, JSON, None, name, &json(value)?))
            .await
    }

    /// Sends request `seq` named `name`; its answer arrives with the same `seq`.
    pub async fn request(
        &self,
        seq: u64,
        name: &str,
        value: &impl Serialize,
    ) -> std::io::Result<()> {
        self.write(encode(REQUEST, JSON, Some(seq), name, &json(value)?))
            .await
    }

    /// Tells the server this client is done (`session-closing`, reason ClientClose).
    pub async fn close(&self) -> std::io::Result<()> {
        self.write(encode(CONTROL, RAW, None, "session-closing", &[1, 1, 0, 0]))
            .await
    }

    async fn write(&self, packet: Vec<u8>) -> std::io::Result<()> {
        match &mut *self.writer.lock().await {
            Writer::Tcp(stream) => stream.write_all(&packet).await,
            Writer::Ws(sink) => sink
                .send(WsMessage::binary(packet))
                .await
                .map_err(std::io::Error::other),
        }
    }

    async fn pong(&self, ping: &Incoming) {
        let pong = encode(CONTROL, RAW, None, "$zlink.heartbeat.pong", &ping.payload);
        if let Err(e) = self.write(pong).await {
            tracing::debug!(error = %e, "pong not sent");
        }
    }
}

fn json(value: &impl Serialize) -> std::io::Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(std::io::Error::other)
}

fn encode(kind: u8, codec: u8, seq: Option<u64>, name: &str, payload: &[u8]) -> Vec<u8> {
    let mut header = vec![
        MARKER,
        kind,
        codec,
        if seq.is_some() { FLAG_SEQ } else { 0 },
    ];
    if let Some(seq) = seq {
        header.extend_from_slice(&seq.to_be_bytes());
    }
    // Packet names are at most 255 bytes; the chat's own are short.
    header.push(name.len().min(255) as u8);
    header.extend_from_slice(&name.as_bytes()[..name.len().min(255)]);
    let mut packet = Vec::with_capacity(6 + header.len() + payload.len());
    packet.extend_from_slice(&(header.len() as u16).to_be_bytes());
    packet.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    packet.extend_from_slice(&header);
    packet.extend_from_slice(payload);
    packet
}

/// Reads one packet's header fields; `None` when the header is malformed.
fn decode(header: &[u8], payload: Vec<u8>) -> Option<Incoming> {
    let (&marker, rest) = header.split_first()?;
    let [kind, _codec, flags, rest @ ..] = rest else {
        return None;
    };
    if marker != MARKER {
        return None;
    }
    let mut at = rest;
    let seq = if flags & FLAG_SEQ != 0 {
        let (seq, more) = at.split_first_chunk::<8>()?;
        at = more;
        Some(u64::from_be_bytes(*seq))
    } else {
        None
    };
    let (&name_len, more) = at.split_first()?;
    let name = more.get(..usize::from(name_len))?;
    at = &more[usize::from(name_len)..];
    if flags & FLAG_METADATA != 0 {
        let (len, more) = at.split_first_chunk::<2>()?;
        at = more.get(usize::from(u16::from_be_bytes(*len))..)?;
    }
    if flags & FLAG_CORRELATION != 0 {
        let (&len, more) = at.split_first()?;
        at = more.get(usize::from(len)..)?;
    }
    if flags & FLAG_FLOW != 0 {
        at = at.get(37..)?;
    }
    at.is_empty().then(|| Incoming {
        kind: *kind,
        seq,
        name: String::from_utf8_lossy(name).into_owned(),
        payload,
    })
}

/// Passes `packet` on, answering pings here; `false` once nobody listens.
async fn deliver(packet: Incoming, tx: &mpsc::Sender<Incoming>, client: &ChatClient) -> bool {
    if packet.kind == CONTROL && packet.name == "$zlink.heartbeat.ping" {
        client.pong(&packet).await;
        return true;
    }
    tx.send(packet).await.is_ok()
}

async fn read_tcp(
    mut read: tokio::net::tcp::OwnedReadHalf,
    tx: mpsc::Sender<Incoming>,
    client: ChatClient,
) {
    loop {
        let mut prefix = [0u8; 6];
        if read.read_exact(&mut prefix).await.is_err() {
            return;
        }
        let header_len = usize::from(u16::from_be_bytes([prefix[0], prefix[1]]));
        let payload_len = u32::from_be_bytes([prefix[2], prefix[3], prefix[4], prefix[5]]) as usize;
        if header_len + payload_len > MAX_PACKET {
            tracing::warn!(
                header_len,
                payload_len,
                "the server sent an oversized packet"
            );
            return;
        }
        let mut body = vec![0u8; header_len + payload_len];
        if read.read_exact(&mut body).await.is_err() {
            return;
        }
        let payload = body.split_off(header_len);
        let Some(packet) = decode(&body, payload) else {
            tracing::warn!("the server sent a malformed header");
            return;
        };
        if !deliver(packet, &tx, &client).await {
            return;
        }
    }
}

async fn read_ws(
    mut read: futures::stream::SplitStream<WsStream>,
    tx: mpsc::Sender<Incoming>,
    client: ChatClient,
) {
    while let Some(Ok(message)) = read.next().await {
        let WsMessage::Binary(bytes) = message else {
            continue;
        };
        let Some(prefix) = bytes.get(..6) else {
            return;
        };
        let header_len = usize::from(u16::from_be_bytes([prefix[0], prefix[1]]));
        let Some(header) = bytes.get(6..6 + header_len) else {
            return;
        };
        let Some(packet) = decode(header, bytes[6 + header_len..].to_vec()) else {
            return;
        };
        if !deliver(packet, &tx, &client).await {
            return;
        }
    }
}

/// The answer to request `seq`, skipping (and returning) the other packets that came
/// first; `Err` when the connection closed or `timeout` passed.
pub async fn answer(
    rx: &mut mpsc::Receiver<Incoming>,
    seq: u64,
    timeout: Duration,
    skipped: &mut Vec<Incoming>,
) -> Result<Incoming, String> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Err(_) => return Err(format!("no answer to request {seq} in {timeout:?}")),
            Ok(None) => return Err("the gateway closed the connection".into()),
            Ok(Some(packet)) if packet.seq == Some(seq) => return Ok(packet),
            Ok(Some(packet)) => skipped.push(packet),
        }
    }
}
