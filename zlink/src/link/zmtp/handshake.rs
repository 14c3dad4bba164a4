//! The connection handshake: greeting, then the NULL or CURVE mechanism, ending with both
//! sides' READY (socket type and identity). Runs under the caller's deadline.

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::curve::{self, CookieKey, CurveClient, CurveServer, CurveSession};
use super::frame::{put_command, Frame, FrameDecoder, READ_CHUNK};
use super::greeting::{self, Mechanism, GREETING_LEN};
use super::properties;
use crate::link::security::{ClientSecurity, CurvePublicKey, ServerSecurity};
use tracing::Instrument;

/// The largest handshake command accepted (HELLO is 200 bytes; metadata is short).
const MAX_HANDSHAKE_FRAME: usize = 8 * 1024;

/// ZMTP socket types the engine plays or meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SocketType {
    Router,
    Dealer,
    Pub,
    Sub,
}

impl SocketType {
    fn name(self) -> &'static str {
        match self {
            SocketType::Router => "ROUTER",
            SocketType::Dealer => "DEALER",
            SocketType::Pub => "PUB",
            SocketType::Sub => "SUB",
        }
    }

    /// Peer socket types RFC 28/29 allow for us.
    fn accepts(self, peer: &[u8]) -> bool {
        let allowed: &[&[u8]] = match self {
            SocketType::Router => &[b"DEALER", b"REQ", b"ROUTER"],
            SocketType::Dealer => &[b"ROUTER", b"DEALER", b"REP"],
            SocketType::Pub => &[b"SUB", b"XSUB"],
            SocketType::Sub => &[b"PUB", b"XPUB"],
        };
        allowed.iter().any(|a| peer.eq_ignore_ascii_case(a))
    }
}

/// Which side of the security handshake we are, with what it needs.
pub(crate) enum Side<'a> {
    Server {
        security: &'a ServerSecurity,
        cookie: &'a CookieKey,
    },
    Client(&'a ClientSecurity),
}

/// A finished handshake.
pub(crate) struct Established {
    /// The peer's long-term CURVE key, when CURVE ran.
    pub(crate) peer_key: Option<CurvePublicKey>,
    /// The session cipher, when CURVE ran.
    pub(crate) cipher: Option<CurveSession>,
    /// Bytes that arrived after the peer's READY.
    pub(crate) leftover: BytesMut,
}

/// Why a handshake failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HandshakeError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("protocol: {0}")]
    Protocol(String),
    #[error("peer refused: {0}")]
    PeerError(String),
    #[error("client key {0} not trusted")]
    Untrusted(crate::link::CurvePublicKey),
    /// The server hung up on our CURVE HELLO instead of answering it.
    #[error(
        "the peer closed the connection after our CURVE HELLO: most likely it could not \
         open it (the server key this node holds for it is not its key), or it does not run \
         CURVE, or it was shutting down"
    )]
    NoWelcome,
}

impl HandshakeError {
    /// Whether the peer refused us, as opposed to the network failing.
    pub(crate) fn is_refusal(&self) -> bool {
        matches!(
            self,
            HandshakeError::PeerError(_) | HandshakeError::NoWelcome
        )
    }
}

fn protocol(what: impl Into<String>) -> HandshakeError {
    HandshakeError::Protocol(what.into())
}

struct CommandReader {
    buf: BytesMut,
    decoder: FrameDecoder,
}

impl CommandReader {
    async fn next(
        &mut self,
        stream: &mut (impl AsyncRead + Unpin),
    ) -> Result<Frame, HandshakeError> {
        loop {
            match self.decoder.decode(&mut self.buf) {
                Ok(Some(frame)) if frame.is_command() => return Ok(frame),
                Ok(Some(_)) => return Err(protocol("data frame during the handshake")),
                Ok(None) => {}
                Err(e) => return Err(protocol(e.to_string())),
            }
            self.buf.reserve(READ_CHUNK.min(MAX_HANDSHAKE_FRAME));
            if stream.read_buf(&mut self.buf).await? == 0 {
                return Err(HandshakeError::Io(std::io::ErrorKind::UnexpectedEof.into()));
            }
        }
    }

    /// The data of the next command, which must be `name` (an ERROR is reported as such).
    async fn expect(
        &mut self,
        stream: &mut (impl AsyncRead + Unpin),
        name: &str,
    ) -> Result<Bytes, HandshakeError> {
        let frame = self.next(stream).await?;
        let (got, _) = frame
            .command()
            .ok_or_else(|| protocol("malformed command"))?;
        if got == name.as_bytes() {
            return Ok(frame.body.freeze());
        }
        if got == b"ERROR" {
            let reason = frame
                .command()
                .and_then(|(_, data)| data.get(1..))
                .map(|r| String::from_utf8_lossy(r).into_owned())
                .unwrap_or_default();
            return Err(HandshakeError::PeerError(reason));
        }
        Err(protocol(format!(
            "expected {name}, got {}",
            String::from_utf8_lossy(got)
        )))
    }
}

fn metadata(socket_type: SocketType) -> Vec<u8> {
    properties::encode(&[
        ("Socket-Type", socket_type.name().as_bytes()),
        ("Identity", b""),
    ])
}

fn check_peer_metadata(socket_type: SocketType, props: &[u8]) -> Result<(), HandshakeError> {
    let peer = properties::find(props, "Socket-Type")
        .map_err(|_| protocol("malformed metadata"))?
        .ok_or_else(|| protocol("no Socket-Type"))?;
    if !socket_type.accepts(peer) {
        return Err(protocol(format!(
            "a {} does not talk to a {}",
            socket_type.name(),
            String::from_utf8_lossy(peer)
        )));
    }
    Ok(())
}

async fn send_command(
    stream: &mut (impl AsyncWrite + Unpin),
    name: &str,
    data: &[u8],
) -> std::io::Result<()> {
    let mut out = BytesMut::new();
    put_command(&mut out, name, data);
    stream.write_all(&out).await
}

/// `body` is a whole command body (name included), as the CURVE codec produces them.
async fn send_body(stream: &mut (impl AsyncWrite + Unpin), body: &[u8]) -> std::io::Result<()> {
    let mut out = BytesMut::new();
    super::frame::put_frame(&mut out, super::frame::COMMAND, body);
    stream.write_all(&out).await
}

/// Runs the whole handshake as `socket_type` speaking ZMTP `3.minor`.
pub(crate) async fn run<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    side: Side<'_>,
    socket_type: SocketType,
    minor: u8,
) -> Result<Established, HandshakeError> {
    let span = tracing::debug_span!(
        "zlink.handshake",
        side = if matches!(side, Side::Server { .. }) { "server" } else { "client" },
        socket = ?socket_type,
        refused = tracing::field::Empty,
    );
    let established = run_in_span(stream, side, socket_type, minor)
        .instrument(span.clone())
        .await;
    if let Err(e) = &established {
        span.record("refused", tracing::field::display(e));
    }
    established
}

async fn run_in_span<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    side: Side<'_>,
    socket_type: SocketType,
    minor: u8,
) -> Result<Established, HandshakeError> {
    let (mechanism, as_server) = match &side {
        Side::Server { security, .. } => match security {
            ServerSecurity::Null => (Mechanism::Null, false),
            ServerSecurity::Curve { .. } => (Mechanism::Curve, true),
        },
        Side::Client(ClientSecurity::Null) => (Mechanism::Null, false),
        Side::Client(ClientSecurity::Curve { .. }) => (Mechanism::Curve, false),
    };
    stream
        .write_all(&greeting::greeting(minor, mechanism, as_server))
        .await?;
    let mut peer = [0u8; GREETING_LEN];
    stream.read_exact(&mut peer).await?;
    let peer = greeting::parse(&peer).map_err(protocol)?;
    if peer.mechanism != Some(mechanism) {
        return Err(protocol(format!(
            "peer speaks another security mechanism than {mechanism:?}"
        )));
    }
    let mut reader = CommandReader {
        buf: BytesMut::new(),
        decoder: FrameDecoder {
            max_frame: MAX_HANDSHAKE_FRAME,
        },
    };
    let (peer_key, cipher) = match side {
        Side::Server {
            security: ServerSecurity::Null,
            ..
        }
        | Side::Client(ClientSecurity::Null) => {
            send_command(stream, "READY", &metadata(socket_type)).await?;
            let ready = reader.expect(stream, "READY").await?;
            check_peer_metadata(socket_type, &ready[6..])?;
            (None, None)
        }
        Side::Server {
            security: ServerSecurity::Curve { keypair, trust },
            cookie,
        } => {
            if peer.as_server {
                return Err(protocol("both ends claim the CURVE server role"));
            }
            let mut server = CurveServer::new(keypair, cookie);
            let hello = reader.expect(stream, "HELLO").await?;
            let welcome = server
                .on_hello(&hello)
                .map_err(|e| protocol(e.to_string()))?;
            send_body(stream, &welcome).await?;
            let initiate = reader.expect(stream, "INITIATE").await?;
            let (client_key, props) = server
                .on_initiate(&initiate)
                .map_err(|e| protocol(e.to_string()))?;
            if !trust.allows(&client_key) {
                let _ = send_body(stream, &curve::error_body("client key not trusted")).await;
                return Err(HandshakeError::Untrusted(client_key));
            }
            check_peer_metadata(socket_type, &props)?;
            let (ready, session) = server
                .ready(&metadata(socket_type))
                .map_err(|e| protocol(e.to_string()))?;
            send_body(stream, &ready).await?;
            (Some(client_key), Some(session))
        }
        Side::Client(ClientSecurity::Curve { keypair, server }) => {
            if !peer.as_server {
                return Err(protocol("the CURVE server did not claim the server role"));
            }
            let mut client = CurveClient::new(keypair, *server);
            send_body(stream, &client.hello()).await?;
            let welcome = match reader.expect(stream, "WELCOME").await {
                Err(HandshakeError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    return Err(HandshakeError::NoWelcome)
                }
                other => other?,
            };
            let initiate = client
                .on_welcome(&welcome, &metadata(socket_type))
                .map_err(|e| protocol(e.to_string()))?;
            send_body(stream, &initiate).await?;
            let ready = reader.expect(stream, "READY").await?;
            let (session, props) = client
                .on_ready(&ready)
                .map_err(|e| protocol(e.to_string()))?;
            check_peer_metadata(socket_type, &props)?;
            (Some(*server), Some(session))
        }
    };
    Ok(Established {
        peer_key,
        cipher,
        leftover: reader.buf,
    })
}
