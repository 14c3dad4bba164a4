//! The connecting side of the CURVE handshake: HELLO, then INITIATE on WELCOME, then the
//! session on READY.

use std::sync::Arc;

use super::crypto::{self, SharedBox, TAG};
use super::error::CurveError;
use super::keys::{CurveKeypair, CurvePublicKey};
use super::message::{CurveSession, Side};
use super::nonce::{self, Counter};
use super::x25519::{self, Secret};

const HELLO: &[u8; 6] = b"\x05HELLO";
const WELCOME: &[u8; 8] = b"\x07WELCOME";
const INITIATE: &[u8; 9] = b"\x08INITIATE";
const READY: &[u8; 6] = b"\x05READY";
const ERROR: &[u8; 6] = b"\x05ERROR";

const WELCOME_LEN: usize = 168;
const READY_MIN_LEN: usize = READY.len() + 8 + TAG;

/// The client half of a CURVE handshake.
#[cfg_attr(test, derive(Clone))]
pub(crate) struct CurveClient {
    permanent: CurveKeypair,
    server: CurvePublicKey,
    transient: Secret,
    /// Our transient key with the server's permanent one (HELLO and WELCOME boxes).
    to_server: SharedBox,
    /// The server's key was refused as weak; `to_server` is then a box nobody can open.
    server_is_weak: bool,
    nonce: Counter,
    state: State,
}

#[cfg_attr(test, derive(Clone))]
enum State {
    Start,
    AwaitWelcome,
    AwaitReady { session: SharedBox },
}

impl CurveClient {
    /// A client proving `permanent` to the server whose permanent key is `server`, with a
    /// fresh transient keypair.
    pub(crate) fn new(permanent: &CurveKeypair, server: CurvePublicKey) -> Self {
        CurveClient::with_transient(permanent, server, Secret::generate())
    }

    /// As [`CurveClient::new`], with the given transient secret.
    pub(super) fn with_transient(
        permanent: &CurveKeypair,
        server: CurvePublicKey,
        transient: Secret,
    ) -> Self {
        // `new` cannot fail, so a weak server key is refused at WELCOME; until then HELLO
        // is sealed under a random key, which no one (not even that server) can open.
        let (to_server, server_is_weak) = match x25519::agree(server.as_bytes(), &transient) {
            Ok(shared) => (shared, false),
            Err(_) => (sealed_to_nobody(), true),
        };
        CurveClient {
            permanent: permanent.clone(),
            server,
            server_is_weak,
            transient,
            to_server,
            nonce: Counter::new(),
            state: State::Start,
        }
    }

    /// The HELLO command body (200 bytes). Call once, first.
    pub(crate) fn hello(&mut self) -> Vec<u8> {
        let counter = self.nonce.take();
        let mut out = Vec::with_capacity(200);
        out.extend_from_slice(HELLO);
        out.extend_from_slice(&[1, 0]);
        // Padding, so that HELLO is no smaller than the WELCOME it asks for.
        out.extend_from_slice(&[0; 72]);
        out.extend_from_slice(self.transient.public());
        out.extend_from_slice(&counter.to_be_bytes());
        crypto::seal(
            &*self.to_server,
            &nonce::short(nonce::HELLO, counter),
            &[0; 64],
            &mut out,
        );
        if matches!(self.state, State::Start) {
            self.state = State::AwaitWelcome;
        }
        out
    }

    /// Checks the server's WELCOME and returns the INITIATE body, which carries
    /// `metadata` (encoded ZMTP properties) and vouches for our transient key.
    pub(crate) fn on_welcome(
        &mut self,
        body: &[u8],
        metadata: &[u8],
    ) -> Result<Vec<u8>, CurveError> {
        refused_by_peer(body)?;
        match self.state {
            State::AwaitWelcome => {}
            State::Start => return Err(CurveError::State("WELCOME before HELLO was sent")),
            State::AwaitReady { .. } => return Err(CurveError::State("a second WELCOME")),
        }
        if !body.starts_with(WELCOME) {
            return Err(CurveError::Malformed("expected WELCOME"));
        }
        if body.len() != WELCOME_LEN {
            return Err(CurveError::Malformed("WELCOME must be 168 bytes"));
        }
        if self.server_is_weak {
            return Err(CurveError::WeakKey);
        }
        let tail = crypto::field::<16>(body, 8).ok_or(CurveError::Malformed("WELCOME"))?;
        let boxed = body.get(24..).unwrap_or_default();
        let plain = crypto::open(&*self.to_server, &nonce::long(nonce::WELCOME, tail), boxed)
            .ok_or(CurveError::Decrypt("WELCOME (is the server key right?)"))?;
        let server_transient = crypto::field::<32>(&plain, 0)
            .copied()
            .ok_or(CurveError::Malformed("WELCOME box"))?;
        let cookie = plain
            .get(32..128)
            .ok_or(CurveError::Malformed("WELCOME box"))?;

        let session = x25519::agree(&server_transient, &self.transient)?;
        let vouch_box = x25519::agree(&server_transient, self.permanent.secret())?;
        let vouch_tail = nonce::random_tail();
        let mut vouch = [0; 64];
        vouch[..32].copy_from_slice(self.transient.public());
        vouch[32..].copy_from_slice(self.server.as_bytes());

        let counter = self.nonce.take();
        let mut out = Vec::with_capacity(INITIATE.len() + 96 + 8 + TAG + 128 + metadata.len());
        out.extend_from_slice(INITIATE);
        out.extend_from_slice(cookie);
        out.extend_from_slice(&counter.to_be_bytes());
        let boxed = out.len();
        out.extend_from_slice(&[0; TAG]);
        out.extend_from_slice(self.permanent.public().as_bytes());
        out.extend_from_slice(&vouch_tail);
        crypto::seal(
            &*vouch_box,
            &nonce::long(nonce::VOUCH, &vouch_tail),
            &vouch,
            &mut out,
        );
        out.extend_from_slice(metadata);
        crypto::seal_tail(
            &*session,
            &nonce::short(nonce::INITIATE, counter),
            &mut out,
            boxed,
        );

        self.state = State::AwaitReady { session };
        Ok(out)
    }

    /// Checks the server's READY; returns the session and the server's metadata
    /// (encoded ZMTP properties).
    pub(crate) fn on_ready(self, body: &[u8]) -> Result<(CurveSession, Vec<u8>), CurveError> {
        refused_by_peer(body)?;
        let State::AwaitReady { session } = self.state else {
            return Err(CurveError::State("READY before INITIATE was sent"));
        };
        if !body.starts_with(READY) {
            return Err(CurveError::Malformed("expected READY"));
        }
        if body.len() < READY_MIN_LEN {
            return Err(CurveError::Malformed("READY shorter than 30 bytes"));
        }
        let counter = nonce::read(body, READY.len())?;
        let boxed = body.get(READY.len() + 8..).unwrap_or_default();
        let metadata = crypto::open(&*session, &nonce::short(nonce::READY, counter), boxed)
            .ok_or(CurveError::Decrypt("READY"))?;
        let session = CurveSession::new(session, Side::Client, self.nonce, counter);
        Ok((session, metadata))
    }
}

/// A box under a fresh random key, thrown away: what HELLO is sealed with when the
/// server's key is weak.
fn sealed_to_nobody() -> SharedBox {
    Arc::new(super::secretbox::SecretBox::generate())
}

/// Turns a server's ERROR command into [`CurveError::Peer`].
fn refused_by_peer(body: &[u8]) -> Result<(), CurveError> {
    if !body.starts_with(ERROR) {
        return Ok(());
    }
    let reason = body
        .get(ERROR.len())
        .and_then(|&len| body.get(ERROR.len() + 1..ERROR.len() + 1 + usize::from(len)))
        .ok_or(CurveError::Malformed("ERROR reason cut off"))?;
    Err(CurveError::Peer(
        String::from_utf8_lossy(reason).into_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_is_laid_out_like_libzmq() {
        let server = CurveKeypair::generate();
        let mut client = CurveClient::new(&CurveKeypair::generate(), server.public());
        let hello = client.hello();
        assert_eq!(hello.len(), 200);
        assert_eq!(&hello[..6], b"\x05HELLO");
        assert_eq!(&hello[6..8], &[1, 0]);
        assert!(hello[8..80].iter().all(|&b| b == 0));
        assert_eq!(&hello[80..112], client.transient.public());
        assert_eq!(&hello[112..120], &1u64.to_be_bytes());

        let from_client =
            x25519::agree(client.transient.public(), server.secret()).expect("honest keys");
        let signature = crypto::open(&*from_client, &nonce::short(nonce::HELLO, 1), &hello[120..])
            .expect("server opens the signature box");
        assert_eq!(signature, [0; 64]);
    }

    #[test]
    fn steps_out_of_order_are_refused() {
        let server = CurveKeypair::generate().public();
        let mut client = CurveClient::new(&CurveKeypair::generate(), server);
        assert!(matches!(
            client.on_welcome(&[0; 168], b""),
            Err(CurveError::State(_))
        ));
        assert!(matches!(
            client.clone().on_ready(&[0; 30]),
            Err(CurveError::State(_))
        ));
        client.hello();
        assert!(matches!(
            client.on_ready(&[0; 30]),
            Err(CurveError::State(_))
        ));
    }

    #[test]
    fn error_command_is_reported() {
        let mut client =
            CurveClient::new(&CurveKeypair::generate(), CurveKeypair::generate().public());
        client.hello();
        let err = client
            .on_welcome(b"\x05ERROR\x03400", b"")
            .expect_err("refused");
        assert!(
            matches!(&err, CurveError::Peer(reason) if reason == "400"),
            "{err}"
        );
        let err = client
            .on_welcome(b"\x05ERROR\x09short", b"")
            .expect_err("cut off");
        assert!(matches!(err, CurveError::Malformed(_)), "{err}");
    }

    #[test]
    fn small_order_server_key_is_refused_at_welcome() {
        let mut client = CurveClient::new(
            &CurveKeypair::generate(),
            CurvePublicKey::from_bytes([0; 32]),
        );
        client.hello();
        let mut welcome = WELCOME.to_vec();
        welcome.resize(WELCOME_LEN, 0);
        assert!(matches!(
            client.on_welcome(&welcome, b""),
            Err(CurveError::WeakKey)
        ));
    }
}
