//! Arbitrary and mutated bytes into every parser: each must return, never panic, and a
//! changed body must never be accepted.

use std::sync::LazyLock;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

use super::*;

/// Each state machine just before the command it parses, and that command.
struct Fixture {
    await_hello: CurveServer,
    hello: Vec<u8>,
    await_welcome: CurveClient,
    welcome: Vec<u8>,
    await_initiate: CurveServer,
    initiate: Vec<u8>,
    await_ready: CurveClient,
    ready: Vec<u8>,
    opener: CurveOpener,
    message: Vec<u8>,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let server_keys = CurveKeypair::generate();
    let mut client = CurveClient::new(&CurveKeypair::generate(), server_keys.public());
    let mut server = CurveServer::new(&server_keys, &CookieKey::generate());
    let await_hello = server.clone();
    let hello = client.hello();
    let await_welcome = client.clone();
    let welcome = server.on_hello(&hello).expect("HELLO");
    let await_initiate = server.clone();
    let initiate = client
        .on_welcome(&welcome, b"\x04Name\x00\x00\x00\x01x")
        .expect("WELCOME");
    let await_ready = client.clone();
    server.on_initiate(&initiate).expect("INITIATE");
    let (ready, server_session) = server.ready(b"\x04Name\x00\x00\x00\x01y").expect("READY");
    let (client_session, _) = client.on_ready(&ready).expect("READY opens");
    let (mut sealer, _) = client_session.split();
    let (_, opener) = server_session.split();
    let mut message = Vec::new();
    sealer.seal(true, false, b"frame data", &mut message);
    Fixture {
        await_hello,
        hello,
        await_welcome,
        welcome,
        await_initiate,
        initiate,
        await_ready,
        ready,
        opener,
        message,
    }
});

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 25_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// `valid` with a few bytes changed, cut short, or extended.
fn mutated(valid: &'static [u8]) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => vec((any::<Index>(), 1..=255u8), 1..4).prop_map(move |flips| {
            let mut body = valid.to_vec();
            for (at, bits) in flips {
                body[at.index(valid.len())] ^= bits;
            }
            body
        }),
        1 => any::<Index>().prop_map(move |at| valid[..at.index(valid.len())].to_vec()),
        1 => vec(any::<u8>(), 1..64).prop_map(move |tail| [valid, &tail].concat()),
    ]
}

/// Random bytes, random bytes behind the right command name, or (`weight` times in
/// `weight + 4`) a mutated valid body.
fn inputs(
    name: &'static [u8],
    valid: &'static [u8],
    weight: u32,
) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        2 => vec(any::<u8>(), 0..400),
        2 => vec(any::<u8>(), 0..400).prop_map(move |tail| [name, &tail].concat()),
        weight => mutated(valid),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn on_hello_never_panics(body in inputs(b"\x05HELLO", &FIXTURE.hello, 1)) {
        let result = FIXTURE.await_hello.clone().on_hello(&body);
        // Only the padding (bytes 8..80) is outside the signature box, and X25519 ignores
        // the top bit of the client's transient key (RFC 7748 §5; libsodium does the
        // same): that bit (byte 111, bit 7) changes no shared secret.
        let hello = &FIXTURE.hello;
        let key_bit_cleared = |b: &[u8]| {
            let mut b = b.to_vec();
            if let Some(last) = b.get_mut(111) {
                *last &= 0x7f;
            }
            b
        };
        let (body_key, hello_key) = (key_bit_cleared(&body), key_bit_cleared(hello));
        if body.len() != hello.len()
            || body[..8] != hello[..8]
            || body_key[80..] != hello_key[80..]
        {
            prop_assert!(result.is_err());
        }
    }

    #[test]
    fn on_welcome_never_panics(body in inputs(b"\x07WELCOME", &FIXTURE.welcome, 4)) {
        let result = FIXTURE.await_welcome.clone().on_welcome(&body, b"");
        prop_assert!(result.is_err() || body == FIXTURE.welcome);
    }

    #[test]
    fn on_initiate_never_panics(body in inputs(b"\x08INITIATE", &FIXTURE.initiate, 4)) {
        let result = FIXTURE.await_initiate.clone().on_initiate(&body);
        prop_assert!(result.is_err() || body == FIXTURE.initiate);
    }

    #[test]
    fn on_ready_never_panics(body in inputs(b"\x05READY", &FIXTURE.ready, 4)) {
        let result = FIXTURE.await_ready.clone().on_ready(&body);
        prop_assert!(result.is_err() || body == FIXTURE.ready);
    }

    #[test]
    fn open_never_panics(body in inputs(b"\x07MESSAGE", &FIXTURE.message, 4)) {
        let result = FIXTURE.opener.clone().open(&body);
        prop_assert!(result.is_err() || body == FIXTURE.message);
    }

    #[test]
    fn public_key_from_z85_never_panics(
        text in prop_oneof![
            any::<String>(),
            "[0-9a-zA-Z.:+=^!/*?&<>()\\[\\]{}@%$#-]{40}",
            "[0-9a-zA-Z.:+=^!/*?&<>()\\[\\]{}@%$#-]{35}#[0-9a-zA-Z#]{4}",
        ]
    ) {
        if let Ok(key) = CurvePublicKey::from_z85(&text) {
            prop_assert_eq!(key.to_z85(), text);
        }
    }
}

/// Why `on_hello_never_panics` clears that bit: a HELLO whose transient key differs only
/// in its top bit opens exactly as the original does.
#[test]
fn the_top_bit_of_the_hello_key_changes_nothing() {
    let mut body = FIXTURE.hello.clone();
    body[111] ^= 0x80;
    assert!(FIXTURE.await_hello.clone().on_hello(&body).is_ok());
}
