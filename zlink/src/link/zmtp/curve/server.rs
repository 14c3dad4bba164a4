//! The accepting side of the CURVE handshake: WELCOME on HELLO, the client's permanent
//! key on INITIATE, then READY once the caller has decided to trust that key.

use std::fmt;
use std::sync::Arc;

use super::crypto::{self, SharedBox, TAG};
use super::error::CurveError;
use super::keys::{CurveKeypair, CurvePublicKey};
use super::message::{CurveSession, Side};
use super::nonce::{self, Counter};
use super::secretbox::SecretBox;
use super::x25519::{self, Secret};

const HELLO: &[u8; 6] = b"\x05HELLO";
const WELCOME: &[u8; 8] = b"\x07WELCOME";
const INITIATE: &[u8; 9] = b"\x08INITIATE";
const READY: &[u8; 6] = b"\x05READY";
const ERROR: &[u8; 6] = b"\x05ERROR";

const HELLO_LEN: usize = 200;
const COOKIE_LEN: usize = 16 + TAG + 64;
/// Name, cookie, short nonce and the box of C, vouch nonce and vouch.
const INITIATE_MIN_LEN: usize = INITIATE.len() + COOKIE_LEN + 8 + TAG + 32 + 16 + TAG + 64;

/// The symmetric key that seals WELCOME cookies; one per listener, never sent.
#[derive(Clone)]
pub(crate) struct CookieKey {
    cipher: Arc<SecretBox>,
}

impl CookieKey {
    /// A fresh random cookie key.
    pub(crate) fn generate() -> Self {
        CookieKey {
            cipher: Arc::new(SecretBox::generate()),
        }
    }
}

impl fmt::Debug for CookieKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CookieKey(<redacted>)")
    }
}

/// The server half of a CURVE handshake.
#[cfg_attr(test, derive(Clone))]
pub(crate) struct CurveServer {
    permanent: CurveKeypair,
    cookie: CookieKey,
    nonce: Counter,
    state: State,
}

#[cfg_attr(test, derive(Clone))]
enum State {
    AwaitHello,
    AwaitInitiate(Pending),
    Trusting { session: SharedBox, peer_last: u64 },
}

/// What a HELLO settled.
#[cfg_attr(test, derive(Clone))]
struct Pending {
    client_transient: [u8; 32],
    transient: Secret,
    /// Our transient key with the client's (INITIATE, READY and MESSAGE boxes).
    session: SharedBox,
    hello_nonce: u64,
}

impl CurveServer {
    /// A server proving `permanent`, sealing cookies with the listener's `cookie_key`.
    pub(crate) fn new(permanent: &CurveKeypair, cookie_key: &CookieKey) -> Self {
        CurveServer {
            permanent: permanent.clone(),
            cookie: cookie_key.clone(),
            nonce: Counter::new(),
            state: State::AwaitHello,
        }
    }

    /// Checks the client's HELLO and returns the WELCOME body (168 bytes).
    pub(crate) fn on_hello(&mut self, body: &[u8]) -> Result<Vec<u8>, CurveError> {
        if !matches!(self.state, State::AwaitHello) {
            return Err(CurveError::State("a second HELLO"));
        }
        if !body.starts_with(HELLO) {
            return Err(CurveError::Malformed("expected HELLO"));
        }
        if body.len() != HELLO_LEN {
            return Err(CurveError::Malformed("HELLO must be 200 bytes"));
        }
        if body.get(6..8) != Some(&[1, 0]) {
            return Err(CurveError::Malformed("unsupported CurveZMQ version"));
        }
        let client_transient = crypto::field::<32>(body, 80)
            .copied()
            .ok_or(CurveError::Malformed("HELLO"))?;
        let hello_nonce = nonce::read(body, 112)?;
        let to_client = x25519::agree(&client_transient, self.permanent.secret())?;
        let signature = body.get(120..).unwrap_or_default();
        crypto::open(
            &*to_client,
            &nonce::short(nonce::HELLO, hello_nonce),
            signature,
        )
        .ok_or(CurveError::Decrypt("HELLO (does the client know our key?)"))?;

        let transient = Secret::generate();
        let session = x25519::agree(&client_transient, &transient)?;

        let mut cookie_plain = [0; 64];
        cookie_plain[..32].copy_from_slice(&client_transient);
        cookie_plain[32..].copy_from_slice(transient.as_bytes());
        let cookie_tail = nonce::random_tail();
        let mut plain = Vec::with_capacity(32 + COOKIE_LEN);
        plain.extend_from_slice(transient.public());
        plain.extend_from_slice(&cookie_tail);
        let cookie_nonce = nonce::long(nonce::COOKIE, &cookie_tail);
        crypto::seal(
            &*self.cookie.cipher,
            &cookie_nonce,
            &cookie_plain,
            &mut plain,
        );
        cookie_plain.fill(0);

        let welcome_tail = nonce::random_tail();
        let mut out = Vec::with_capacity(WELCOME.len() + 16 + TAG + plain.len());
        out.extend_from_slice(WELCOME);
        out.extend_from_slice(&welcome_tail);
        crypto::seal(
            &*to_client,
            &nonce::long(nonce::WELCOME, &welcome_tail),
            &plain,
            &mut out,
        );

        self.state = State::AwaitInitiate(Pending {
            client_transient,
            transient,
            session,
            hello_nonce,
        });
        Ok(out)
    }

    /// Checks the client's INITIATE (cookie, box and vouch) and returns the client's
    /// permanent key and metadata (encoded ZMTP properties). The caller decides whether
    /// to trust the key, then calls [`CurveServer::ready`] or sends [`error_body`].
    pub(crate) fn on_initiate(
        &mut self,
        body: &[u8],
    ) -> Result<(CurvePublicKey, Vec<u8>), CurveError> {
        let State::AwaitInitiate(pending) = &self.state else {
            return Err(CurveError::State("INITIATE out of turn"));
        };
        if !body.starts_with(INITIATE) {
            return Err(CurveError::Malformed("expected INITIATE"));
        }
        if body.len() < INITIATE_MIN_LEN {
            return Err(CurveError::Malformed("INITIATE shorter than 257 bytes"));
        }

        let cookie_tail = crypto::field::<16>(body, 9).ok_or(CurveError::Malformed("INITIATE"))?;
        let cookie_box = body.get(25..9 + COOKIE_LEN).unwrap_or_default();
        let cookie_nonce = nonce::long(nonce::COOKIE, cookie_tail);
        let mut cookie = crypto::open(&*self.cookie.cipher, &cookie_nonce, cookie_box)
            .ok_or(CurveError::Decrypt("INITIATE cookie"))?;
        let (cookie_client, cookie_secret) = cookie.split_at(cookie.len().min(32));
        let cookie_ok = crypto::same(cookie_client, &pending.client_transient)
            & crypto::same(cookie_secret, pending.transient.as_bytes());
        cookie.fill(0);
        if !cookie_ok {
            return Err(CurveError::Mismatch(
                "the cookie belongs to another connection",
            ));
        }

        let counter = nonce::read(body, 9 + COOKIE_LEN)?;
        if counter <= pending.hello_nonce {
            return Err(CurveError::Replay);
        }
        let boxed = body.get(9 + COOKIE_LEN + 8..).unwrap_or_default();
        let mut plain = crypto::open(
            &*pending.session,
            &nonce::short(nonce::INITIATE, counter),
            boxed,
        )
        .ok_or(CurveError::Decrypt("INITIATE"))?;

        let client = crypto::field::<32>(&plain, 0)
            .copied()
            .ok_or(CurveError::Malformed("INITIATE box"))?;
        let vouch_tail =
            crypto::field::<16>(&plain, 32).ok_or(CurveError::Malformed("INITIATE box"))?;
        let vouch_box = x25519::agree(&client, &pending.transient)?;
        let vouch_boxed = plain
            .get(48..128)
            .ok_or(CurveError::Malformed("INITIATE box"))?;
        let vouch = crypto::open(
            &*vouch_box,
            &nonce::long(nonce::VOUCH, vouch_tail),
            vouch_boxed,
        )
        .ok_or(CurveError::Decrypt("INITIATE vouch"))?;
        let (vouched_transient, vouched_server) = vouch.split_at(vouch.len().min(32));
        if !crypto::same(vouched_transient, &pending.client_transient) {
            return Err(CurveError::Mismatch(
                "the vouch is for another transient key",
            ));
        }
        if !crypto::same(vouched_server, self.permanent.public().as_bytes()) {
            return Err(CurveError::Mismatch("the vouch is for another server"));
        }

        let metadata = plain.split_off(128);
        self.state = State::Trusting {
            session: pending.session.clone(),
            peer_last: counter,
        };
        Ok((CurvePublicKey::from_bytes(client), metadata))
    }

    /// The READY body, carrying our `metadata` (encoded ZMTP properties), and the
    /// session. Only after a successful [`CurveServer::on_initiate`].
    pub(crate) fn ready(mut self, metadata: &[u8]) -> Result<(Vec<u8>, CurveSession), CurveError> {
        let State::Trusting { session, peer_last } = self.state else {
            return Err(CurveError::State("READY before a valid INITIATE"));
        };
        let counter = self.nonce.take();
        let mut out = Vec::with_capacity(READY.len() + 8 + TAG + metadata.len());
        out.extend_from_slice(READY);
        out.extend_from_slice(&counter.to_be_bytes());
        crypto::seal(
            &*session,
            &nonce::short(nonce::READY, counter),
            metadata,
            &mut out,
        );
        let session = CurveSession::new(session, Side::Server, self.nonce, peer_last);
        Ok((out, session))
    }
}

/// A ZMTP ERROR command body: the name, then `reason` cut to 255 bytes (on a character
/// boundary) behind its length byte.
pub(crate) fn error_body(reason: &str) -> Vec<u8> {
    let mut end = reason.len().min(255);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let reason = &reason.as_bytes()[..end];
    let mut out = Vec::with_capacity(ERROR.len() + 1 + reason.len());
    out.extend_from_slice(ERROR);
    out.push(reason.len() as u8);
    out.extend_from_slice(reason);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_body_is_name_length_reason() {
        assert_eq!(error_body("400"), b"\x05ERROR\x03400");
        assert_eq!(error_body(""), b"\x05ERROR\x00");
        let long = "x".repeat(300);
        let body = error_body(&long);
        assert_eq!(body.len(), 6 + 1 + 255);
        assert_eq!(body[6], 255);
        let wide = "é".repeat(200);
        let body = error_body(&wide);
        assert_eq!(body[6], 254);
        assert!(std::str::from_utf8(&body[7..]).is_ok());
    }

    #[test]
    fn initiate_minimum_is_libzmq_minimum() {
        assert_eq!(INITIATE_MIN_LEN, 257);
    }

    #[test]
    fn steps_out_of_order_are_refused() {
        let mut server = CurveServer::new(&CurveKeypair::generate(), &CookieKey::generate());
        assert!(matches!(
            server.on_initiate(&[0; 300]),
            Err(CurveError::State(_))
        ));
        assert!(matches!(
            server.clone().ready(b""),
            Err(CurveError::State(_))
        ));
    }

    #[test]
    fn cookie_key_debug_is_redacted() {
        assert_eq!(
            format!("{:?}", CookieKey::generate()),
            "CookieKey(<redacted>)"
        );
    }
}
