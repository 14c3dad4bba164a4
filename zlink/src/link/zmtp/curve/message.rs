//! The MESSAGE codec used once the handshake is done.
//!
//! A MESSAGE body is `\x07MESSAGE`, the sender's 8-byte short nonce, then the box of one
//! flags byte (0x01 MORE, 0x02 COMMAND) followed by the frame's data. libzmq sends each
//! such body as one ZMTP data frame with no MORE or COMMAND bit of its own.

use std::fmt;
use std::sync::Arc;

use super::crypto::{SharedBox, TAG};
use super::error::CurveError;
use super::nonce::{self, Counter, PeerNonce};
use super::secretbox::PrefixKey;

/// Bytes a MESSAGE body adds to the frame data it carries: name, short nonce, tag and
/// flags byte.
pub(crate) const MESSAGE_OVERHEAD: usize = NAME.len() + 8 + TAG + 1;

const NAME: &[u8; 8] = b"\x07MESSAGE";
const MORE: u8 = 0x01;
const COMMAND: u8 = 0x02;

/// Which end of the handshake we were.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    Client,
    Server,
}

/// The encrypted channel a finished handshake leaves behind.
pub(crate) struct CurveSession {
    sealer: CurveSealer,
    opener: CurveOpener,
}

impl CurveSession {
    /// The session over `shared` (the transient keys' box); `ours` continues our short
    /// nonces and `peer_last` is the peer's last short nonce (of READY or INITIATE).
    pub(super) fn new(shared: SharedBox, side: Side, ours: Counter, peer_last: u64) -> Self {
        let (own, peer) = match side {
            Side::Client => (nonce::MESSAGE_FROM_CLIENT, nonce::MESSAGE_FROM_SERVER),
            Side::Server => (nonce::MESSAGE_FROM_SERVER, nonce::MESSAGE_FROM_CLIENT),
        };
        CurveSession {
            sealer: CurveSealer {
                key: Arc::new(shared.for_prefix(own)),
                nonce: ours,
            },
            opener: CurveOpener {
                key: Arc::new(shared.for_prefix(peer)),
                peer: PeerNonce::after(peer_last),
            },
        }
    }

    /// The sending and receiving halves, for the writer and reader tasks.
    pub(crate) fn split(self) -> (CurveSealer, CurveOpener) {
        (self.sealer, self.opener)
    }
}

impl fmt::Debug for CurveSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CurveSession")
            .field("sealer", &self.sealer)
            .field("opener", &self.opener)
            .finish()
    }
}

/// Encrypts outgoing frames into MESSAGE bodies.
#[cfg_attr(test, derive(Clone))]
pub(crate) struct CurveSealer {
    /// The box key of our direction's nonces (their prefix is fixed).
    key: Arc<PrefixKey>,
    nonce: Counter,
}

impl CurveSealer {
    /// Appends to `out` the MESSAGE body carrying one frame: `data`, with the frame's
    /// MORE and COMMAND flags. Send it as a ZMTP data frame with flags 0 (LONG aside).
    pub(crate) fn seal<B>(&mut self, more: bool, command: bool, data: &[u8], out: &mut B)
    where
        B: bytes::BufMut + std::ops::DerefMut<Target = [u8]>,
    {
        let counter = self.nonce.take().to_be_bytes();
        out.put_slice(NAME);
        out.put_slice(&counter);
        let tag_at = out.len();
        out.put_slice(&[0; TAG]);
        out.put_u8(if more { MORE } else { 0 } | if command { COMMAND } else { 0 });
        out.put_slice(data);
        let (head, body) = out.split_at_mut(tag_at + TAG);
        let tag = self.key.seal(&counter, body);
        head[tag_at..].copy_from_slice(&tag);
    }
}

impl fmt::Debug for CurveSealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CurveSealer")
            .field("nonce", &self.nonce)
            .finish_non_exhaustive()
    }
}

/// Decrypts incoming MESSAGE bodies.
#[cfg_attr(test, derive(Clone))]
pub(crate) struct CurveOpener {
    /// The box key of the peer's direction's nonces.
    key: Arc<PrefixKey>,
    peer: PeerNonce,
}

impl CurveOpener {
    /// The frame inside a MESSAGE body. Refuses a nonce that is not above every nonce
    /// accepted so far; a refused body changes nothing.
    #[cfg(test)]
    pub(crate) fn open(&mut self, body: &[u8]) -> Result<OpenedFrame, CurveError> {
        self.open_in_place(bytes::BytesMut::from(body))
    }

    /// [`open`](Self::open) on a frame body the reader owns: decrypted where it lies.
    pub(crate) fn open_in_place(
        &mut self,
        mut body: bytes::BytesMut,
    ) -> Result<OpenedFrame, CurveError> {
        if !body.starts_with(NAME) {
            return Err(CurveError::Malformed("expected MESSAGE"));
        }
        if body.len() < MESSAGE_OVERHEAD {
            return Err(CurveError::Malformed("MESSAGE shorter than 33 bytes"));
        }
        let counter = nonce::read(&body, NAME.len())?;
        self.peer.check(counter)?;
        let boxed_at = NAME.len() + 8 + TAG;
        let (head, data) = body.split_at_mut(boxed_at);
        let tag: &[u8; TAG] = head
            .get(boxed_at - TAG..)
            .and_then(|t| t.try_into().ok())
            .ok_or(CurveError::Malformed("MESSAGE shorter than 33 bytes"))?;
        if !self.key.open(&counter.to_be_bytes(), data, tag) {
            return Err(CurveError::Decrypt("MESSAGE"));
        }
        let Some(&flags) = data.first() else {
            return Err(CurveError::Malformed("MESSAGE has no flags byte"));
        };
        self.peer.accept(counter);
        bytes::Buf::advance(&mut body, boxed_at + 1);
        Ok(OpenedFrame {
            more: flags & MORE != 0,
            command: flags & COMMAND != 0,
            data: body.freeze(),
        })
    }
}

impl fmt::Debug for CurveOpener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CurveOpener")
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

/// One frame taken out of a MESSAGE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpenedFrame {
    /// More frames of the same message follow.
    pub(crate) more: bool,
    /// The frame is a ZMTP command (PING, PONG, SUBSCRIBE, ...), not message data.
    pub(crate) command: bool,
    /// The frame's bytes.
    pub(crate) data: bytes::Bytes,
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::x25519::{self, Secret};
    use super::*;

    /// A client session and a server session sharing one key, with libzmq's nonces:
    /// the client has sent HELLO 1 and INITIATE 2, the server READY 1.
    pub(in super::super) fn pair() -> (CurveSession, CurveSession) {
        let a = Secret::generate();
        let b = Secret::generate();
        let shared = x25519::agree(b.public(), &a).expect("honest keys");
        let client = CurveSession::new(shared.clone(), Side::Client, Counter::starting_at(3), 1);
        let server = CurveSession::new(shared, Side::Server, Counter::starting_at(2), 2);
        (client, server)
    }

    #[test]
    fn frames_cross_both_ways_with_their_flags() {
        let (client, server) = pair();
        let (mut client_tx, mut client_rx) = client.split();
        let (mut server_tx, mut server_rx) = server.split();
        for (more, command, data) in [
            (true, false, &b"first"[..]),
            (false, false, b""),
            (false, true, b"\x04PING\x00\x0a"),
            (true, true, &[0xff; 300][..]),
        ] {
            let mut body = Vec::new();
            client_tx.seal(more, command, data, &mut body);
            assert_eq!(body.len(), MESSAGE_OVERHEAD + data.len());
            let frame = server_rx.open(&body).expect("client to server");
            assert_eq!(
                (frame.more, frame.command, &frame.data[..]),
                (more, command, data)
            );

            body.clear();
            server_tx.seal(more, command, data, &mut body);
            let frame = client_rx.open(&body).expect("server to client");
            assert_eq!(
                (frame.more, frame.command, &frame.data[..]),
                (more, command, data)
            );
        }
    }

    #[test]
    fn overhead_is_name_nonce_tag_and_flags() {
        assert_eq!(MESSAGE_OVERHEAD, 8 + 8 + 16 + 1);
    }

    #[test]
    fn nonces_continue_libzmq_numbering() {
        let (client, server) = pair();
        let (mut client_tx, _) = client.split();
        let (mut server_tx, _) = server.split();
        let mut body = Vec::new();
        client_tx.seal(false, false, b"x", &mut body);
        assert_eq!(&body[..8], b"\x07MESSAGE");
        assert_eq!(&body[8..16], &3u64.to_be_bytes());
        body.clear();
        server_tx.seal(false, false, b"x", &mut body);
        assert_eq!(&body[8..16], &2u64.to_be_bytes());
    }

    #[test]
    fn seal_appends_after_existing_bytes() {
        let (client, server) = pair();
        let (mut tx, _) = client.split();
        let (_, mut rx) = server.split();
        let mut out = b"prefix".to_vec();
        tx.seal(false, false, b"payload", &mut out);
        assert_eq!(&out[..6], b"prefix");
        assert_eq!(rx.open(&out[6..]).expect("opens").data, &b"payload"[..]);
    }

    #[test]
    fn replayed_and_reordered_messages_are_refused() {
        let (client, server) = pair();
        let (mut tx, _) = client.split();
        let (_, mut rx) = server.split();
        let (mut first, mut second) = (Vec::new(), Vec::new());
        tx.seal(false, false, b"one", &mut first);
        tx.seal(false, false, b"two", &mut second);
        rx.open(&first).expect("first");
        assert!(matches!(rx.open(&first), Err(CurveError::Replay)));
        rx.open(&second).expect("second");
        assert!(matches!(rx.open(&first), Err(CurveError::Replay)));
        assert!(matches!(rx.open(&second), Err(CurveError::Replay)));
    }

    #[test]
    fn first_message_must_follow_the_handshake_nonce() {
        // The server's READY used nonce 1, so a MESSAGE with nonce 1 is a replay.
        let (client, server) = pair();
        let (_, mut client_rx) = client.split();
        let (mut server_tx, _) = server.split();
        server_tx.nonce = Counter::starting_at(1);
        let mut body = Vec::new();
        server_tx.seal(false, false, b"early", &mut body);
        assert!(matches!(client_rx.open(&body), Err(CurveError::Replay)));
    }

    #[test]
    fn a_refused_message_does_not_move_the_nonce() {
        let (client, server) = pair();
        let (mut tx, _) = client.split();
        let (_, mut rx) = server.split();
        let mut body = Vec::new();
        tx.seal(false, false, b"hello", &mut body);
        let mut forged = body.clone();
        forged[8..16].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(matches!(rx.open(&forged), Err(CurveError::Decrypt(_))));
        rx.open(&body).expect("the genuine message still opens");
    }

    #[test]
    fn tampered_messages_are_refused() {
        let (client, server) = pair();
        let (mut tx, _) = client.split();
        let (_, rx) = server.split();
        let mut body = Vec::new();
        tx.seal(true, false, b"data", &mut body);
        for i in 0..body.len() {
            let mut altered = body.clone();
            altered[i] ^= 0x01;
            assert!(rx.clone().open(&altered).is_err(), "byte {i}");
        }
        assert!(matches!(
            rx.clone().open(&body[..MESSAGE_OVERHEAD - 1]),
            Err(CurveError::Malformed(_))
        ));
        assert!(matches!(
            rx.clone().open(b"\x07MESSAGX"),
            Err(CurveError::Malformed(_))
        ));
    }

    #[test]
    fn a_session_does_not_open_its_own_messages() {
        let (client, _) = pair();
        let (mut tx, mut rx) = client.split();
        let mut body = Vec::new();
        tx.seal(false, false, b"echo", &mut body);
        assert!(matches!(rx.open(&body), Err(CurveError::Decrypt(_))));
    }

    #[test]
    fn halves_can_move_to_other_threads() {
        fn assert_send<T: Send>() {}
        assert_send::<CurveSealer>();
        assert_send::<CurveOpener>();
        assert_send::<CurveSession>();
    }
}
