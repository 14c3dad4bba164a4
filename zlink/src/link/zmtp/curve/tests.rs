//! Whole handshakes in memory, honest and tampered.

use super::crypto::{self, TAG};
use super::nonce;
use super::x25519::{self, Secret};
use super::*;

const CLIENT_META: &[u8] = b"\x0bSocket-Type\x00\x00\x00\x03SUB";
const SERVER_META: &[u8] = b"\x0bSocket-Type\x00\x00\x00\x03PUB";

/// One connection's keys and both state machines, before any command.
struct Connection {
    client_keys: CurveKeypair,
    server_keys: CurveKeypair,
    transient: Secret,
    client: CurveClient,
    server: CurveServer,
}

fn connection(server_keys: &CurveKeypair, cookie: &CookieKey) -> Connection {
    let client_keys = CurveKeypair::generate();
    let transient = Secret::generate();
    Connection {
        client: CurveClient::with_transient(&client_keys, server_keys.public(), transient.clone()),
        server: CurveServer::new(server_keys, cookie),
        client_keys,
        server_keys: server_keys.clone(),
        transient,
    }
}

/// The commands of an honest handshake, and the sessions it ends with.
struct Transcript {
    hello: Vec<u8>,
    welcome: Vec<u8>,
    initiate: Vec<u8>,
    ready: Vec<u8>,
    client: CurveSession,
    server: CurveSession,
}

fn run(mut c: Connection) -> Transcript {
    let hello = c.client.hello();
    let welcome = c.server.on_hello(&hello).expect("server accepts HELLO");
    let initiate = c
        .client
        .on_welcome(&welcome, CLIENT_META)
        .expect("client accepts WELCOME");
    let (key, meta) = c
        .server
        .on_initiate(&initiate)
        .expect("server accepts INITIATE");
    assert_eq!(key, c.client_keys.public());
    assert_eq!(meta, CLIENT_META);
    let (ready, server) = c.server.ready(SERVER_META).expect("server sends READY");
    let (client, meta) = c.client.on_ready(&ready).expect("client accepts READY");
    assert_eq!(meta, SERVER_META);
    Transcript {
        hello,
        welcome,
        initiate,
        ready,
        client,
        server,
    }
}

fn fresh() -> Connection {
    connection(&CurveKeypair::generate(), &CookieKey::generate())
}

fn parts(frame: OpenedFrame) -> (bool, bool, Vec<u8>) {
    (frame.more, frame.command, frame.data.to_vec())
}

fn flipped(body: &[u8], at: usize) -> Vec<u8> {
    let mut body = body.to_vec();
    body[at] ^= 0x20;
    body
}

#[test]
fn full_handshake_then_messages_both_ways() {
    let t = run(fresh());
    let (mut client_tx, mut client_rx) = t.client.split();
    let (mut server_tx, mut server_rx) = t.server.split();
    for round in 0..5u8 {
        let data = vec![round; 100 * usize::from(round)];
        let mut body = Vec::new();
        client_tx.seal(round % 2 == 0, false, &data, &mut body);
        let frame = server_rx.open(&body).expect("server opens");
        assert_eq!(parts(frame), (round % 2 == 0, false, data.clone()));
        body.clear();
        server_tx.seal(false, round == 3, &data, &mut body);
        let frame = client_rx.open(&body).expect("client opens");
        assert_eq!(parts(frame), (false, round == 3, data));
    }
}

#[test]
fn commands_have_libzmq_sizes_and_nonces() {
    let t = run(fresh());
    assert_eq!(t.hello.len(), 200);
    assert_eq!(&t.hello[112..120], &1u64.to_be_bytes());
    assert_eq!(t.welcome.len(), 168);
    assert_eq!(&t.welcome[..8], b"\x07WELCOME");
    assert_eq!(t.initiate.len(), 257 + CLIENT_META.len());
    assert_eq!(&t.initiate[..9], b"\x08INITIATE");
    assert_eq!(&t.initiate[105..113], &2u64.to_be_bytes());
    assert_eq!(t.ready.len(), 30 + SERVER_META.len());
    assert_eq!(&t.ready[..6], b"\x05READY");
    assert_eq!(&t.ready[6..14], &1u64.to_be_bytes());

    let (mut client_tx, _) = t.client.split();
    let (mut server_tx, _) = t.server.split();
    let mut body = Vec::new();
    client_tx.seal(false, false, b"", &mut body);
    assert_eq!(&body[8..16], &3u64.to_be_bytes());
    body.clear();
    server_tx.seal(false, false, b"", &mut body);
    assert_eq!(&body[8..16], &2u64.to_be_bytes());
}

#[test]
fn empty_and_large_metadata_cross() {
    let mut c = fresh();
    let hello = c.client.hello();
    let welcome = c.server.on_hello(&hello).expect("HELLO");
    let big = vec![0x5a; 70_000];
    let initiate = c.client.on_welcome(&welcome, &big).expect("WELCOME");
    assert_eq!(c.server.on_initiate(&initiate).expect("INITIATE").1, big);
    let (ready, _) = c.server.ready(b"").expect("READY");
    assert_eq!(ready.len(), 30);
    assert_eq!(c.client.on_ready(&ready).expect("READY opens").1, b"");
}

#[test]
fn replayed_message_is_refused_after_a_handshake() {
    let t = run(fresh());
    let (mut tx, _) = t.client.split();
    let (_, mut rx) = t.server.split();
    let mut body = Vec::new();
    tx.seal(false, false, b"pay once", &mut body);
    rx.open(&body).expect("first delivery");
    assert!(matches!(rx.open(&body), Err(CurveError::Replay)));
}

#[test]
fn hello_for_another_server_key_is_refused() {
    let mut c = fresh();
    let mut other = CurveServer::new(&CurveKeypair::generate(), &CookieKey::generate());
    let hello = c.client.hello();
    assert!(matches!(
        other.on_hello(&hello),
        Err(CurveError::Decrypt(_))
    ));
}

#[test]
fn welcome_from_another_server_is_refused() {
    // The impostor answers a HELLO made for its own key but from our transient key, so
    // its WELCOME is addressed to us yet not boxed by the server we expect.
    let mut c = fresh();
    c.client.hello();
    let impostor_keys = CurveKeypair::generate();
    let mut to_impostor =
        CurveClient::with_transient(&c.client_keys, impostor_keys.public(), c.transient.clone());
    let mut impostor = CurveServer::new(&impostor_keys, &CookieKey::generate());
    let welcome = impostor
        .on_hello(&to_impostor.hello())
        .expect("impostor accepts its HELLO");
    assert!(matches!(
        c.client.on_welcome(&welcome, b""),
        Err(CurveError::Decrypt(_))
    ));
}

#[test]
fn tampered_welcome_is_refused() {
    let mut c = fresh();
    let hello = c.client.hello();
    let welcome = c.server.on_hello(&hello).expect("HELLO");
    for at in [0, 7, 8, 23, 24, 39, 40, 100, 167] {
        let result = c.client.clone().on_welcome(&flipped(&welcome, at), b"");
        assert!(result.is_err(), "byte {at}");
    }
    assert!(matches!(
        c.client.clone().on_welcome(&welcome[..167], b""),
        Err(CurveError::Malformed(_))
    ));
    c.client
        .on_welcome(&welcome, b"")
        .expect("the genuine WELCOME still works");
}

#[test]
fn tampered_cookie_is_refused() {
    let mut c = fresh();
    let hello = c.client.hello();
    let welcome = c.server.on_hello(&hello).expect("HELLO");
    let initiate = c.client.on_welcome(&welcome, b"").expect("WELCOME");
    for at in [9, 24, 25, 60, 104] {
        assert!(
            matches!(
                c.server.on_initiate(&flipped(&initiate, at)),
                Err(CurveError::Decrypt("INITIATE cookie"))
            ),
            "byte {at}"
        );
    }
    c.server
        .on_initiate(&initiate)
        .expect("the genuine INITIATE still works");
}

#[test]
fn cookie_of_another_connection_is_refused() {
    let server_keys = CurveKeypair::generate();
    let cookie = CookieKey::generate();
    let mut first = connection(&server_keys, &cookie);
    let mut second = connection(&server_keys, &cookie);
    let welcome = first
        .server
        .on_hello(&first.client.hello())
        .expect("first HELLO");
    let initiate = first
        .client
        .on_welcome(&welcome, b"")
        .expect("first WELCOME");
    second
        .server
        .on_hello(&second.client.hello())
        .expect("second HELLO");
    assert!(matches!(
        second.server.on_initiate(&initiate),
        Err(CurveError::Mismatch(_))
    ));
}

#[test]
fn tampered_initiate_box_is_refused() {
    let mut c = fresh();
    let hello = c.client.hello();
    let welcome = c.server.on_hello(&hello).expect("HELLO");
    let initiate = c.client.on_welcome(&welcome, CLIENT_META).expect("WELCOME");
    for at in [113, 128, 129, 200, initiate.len() - 1] {
        assert!(
            matches!(
                c.server.on_initiate(&flipped(&initiate, at)),
                Err(CurveError::Decrypt("INITIATE"))
            ),
            "byte {at}"
        );
    }
    let mut longer = initiate.clone();
    longer.push(0);
    assert!(matches!(
        c.server.on_initiate(&longer),
        Err(CurveError::Decrypt(_))
    ));
    assert!(matches!(
        c.server.on_initiate(&initiate[..256]),
        Err(CurveError::Malformed(_))
    ));
}

/// An INITIATE built by hand: `claimed` in the box, a vouch of `vouched` boxed by
/// `signer`, short nonce `counter`.
fn forge_initiate(
    c: &Connection,
    welcome: &[u8],
    claimed: CurvePublicKey,
    signer: &Secret,
    vouched: [u8; 64],
    counter: u64,
) -> Vec<u8> {
    let to_server =
        x25519::agree(c.server_keys.public().as_bytes(), &c.transient).expect("honest server key");
    let tail = crypto::field::<16>(welcome, 8).expect("WELCOME nonce");
    let plain = crypto::open(
        &*to_server,
        &nonce::long(nonce::WELCOME, tail),
        &welcome[24..],
    )
    .expect("WELCOME opens");
    let server_transient = crypto::field::<32>(&plain, 0).expect("S'");
    let session = x25519::agree(server_transient, &c.transient).expect("honest S'");
    let vouch_box = x25519::agree(server_transient, signer).expect("honest S'");

    let vouch_tail = [9; 16];
    let mut inner = claimed.as_bytes().to_vec();
    inner.extend_from_slice(&vouch_tail);
    crypto::seal(
        &*vouch_box,
        &nonce::long(nonce::VOUCH, &vouch_tail),
        &vouched,
        &mut inner,
    );
    let mut out = b"\x08INITIATE".to_vec();
    out.extend_from_slice(&plain[32..128]);
    out.extend_from_slice(&counter.to_be_bytes());
    crypto::seal(
        &*session,
        &nonce::short(nonce::INITIATE, counter),
        &inner,
        &mut out,
    );
    out
}

fn vouch_of(transient: &[u8; 32], server: &CurvePublicKey) -> [u8; 64] {
    let mut vouch = [0; 64];
    vouch[..32].copy_from_slice(transient);
    vouch[32..].copy_from_slice(server.as_bytes());
    vouch
}

#[test]
fn forged_vouches_are_refused() {
    let mut c = fresh();
    let hello = c.client.hello();
    let welcome = c.server.on_hello(&hello).expect("HELLO");
    let me = c.client_keys.public();
    let transient = *c.transient.public();
    let honest = vouch_of(&transient, &c.server_keys.public());

    // The forge itself is right: the honest variant is accepted.
    let genuine = forge_initiate(&c, &welcome, me, c.client_keys.secret(), honest, 2);
    c.server
        .clone()
        .on_initiate(&genuine)
        .expect("hand-built INITIATE");

    // Claiming a permanent key whose secret we do not hold.
    let victim = CurveKeypair::generate();
    let stolen = forge_initiate(
        &c,
        &welcome,
        victim.public(),
        c.client_keys.secret(),
        honest,
        2,
    );
    assert!(matches!(
        c.server.on_initiate(&stolen),
        Err(CurveError::Decrypt("INITIATE vouch"))
    ));

    let other_transient = *Secret::generate().public();
    let wrong_transient = vouch_of(&other_transient, &c.server_keys.public());
    let forged = forge_initiate(&c, &welcome, me, c.client_keys.secret(), wrong_transient, 2);
    assert!(matches!(
        c.server.on_initiate(&forged),
        Err(CurveError::Mismatch(_))
    ));

    let wrong_server = vouch_of(&transient, &CurveKeypair::generate().public());
    let forged = forge_initiate(&c, &welcome, me, c.client_keys.secret(), wrong_server, 2);
    assert!(matches!(
        c.server.on_initiate(&forged),
        Err(CurveError::Mismatch(_))
    ));

    let weak = forge_initiate(
        &c,
        &welcome,
        CurvePublicKey::from_bytes([0; 32]),
        c.client_keys.secret(),
        honest,
        2,
    );
    assert!(matches!(
        c.server.on_initiate(&weak),
        Err(CurveError::WeakKey)
    ));
}

#[test]
fn initiate_nonce_must_exceed_hello_nonce() {
    let mut c = fresh();
    let hello = c.client.hello();
    let welcome = c.server.on_hello(&hello).expect("HELLO");
    let honest = vouch_of(c.transient.public(), &c.server_keys.public());
    let replayed = forge_initiate(
        &c,
        &welcome,
        c.client_keys.public(),
        c.client_keys.secret(),
        honest,
        1,
    );
    assert!(matches!(
        c.server.on_initiate(&replayed),
        Err(CurveError::Replay)
    ));
}

#[test]
fn tampered_ready_is_refused() {
    let mut c = fresh();
    let hello = c.client.hello();
    let welcome = c.server.on_hello(&hello).expect("HELLO");
    let initiate = c.client.on_welcome(&welcome, b"").expect("WELCOME");
    c.server.on_initiate(&initiate).expect("INITIATE");
    let (ready, _) = c.server.ready(SERVER_META).expect("READY");
    for at in [0, 6, 13, 14, 14 + TAG, ready.len() - 1] {
        assert!(
            c.client.clone().on_ready(&flipped(&ready, at)).is_err(),
            "byte {at}"
        );
    }
    assert!(matches!(
        c.client.clone().on_ready(&ready[..29]),
        Err(CurveError::Malformed(_))
    ));
    c.client
        .on_ready(&ready)
        .expect("the genuine READY still works");
}

#[test]
fn failed_steps_leave_the_handshake_usable() {
    let mut c = fresh();
    let hello = c.client.hello();
    assert!(c.server.on_hello(&hello[..199]).is_err());
    let welcome = c.server.on_hello(&hello).expect("HELLO after a bad one");
    assert!(matches!(
        c.server.on_hello(&hello),
        Err(CurveError::State(_))
    ));
    assert!(c.client.on_welcome(&welcome[..100], b"").is_err());
    let initiate = c
        .client
        .on_welcome(&welcome, b"")
        .expect("WELCOME after a bad one");
    assert!(c
        .server
        .on_initiate(&initiate[..300.min(initiate.len() - 1)])
        .is_err());
    c.server
        .on_initiate(&initiate)
        .expect("INITIATE after a bad one");
    assert!(matches!(
        c.server.on_initiate(&initiate),
        Err(CurveError::State(_))
    ));
}

#[test]
fn hello_with_another_version_is_refused() {
    let mut c = fresh();
    let mut hello = c.client.hello();
    hello[7] = 1;
    assert!(matches!(
        c.server.on_hello(&hello),
        Err(CurveError::Malformed(_))
    ));
}

#[test]
fn hello_from_a_small_order_transient_is_refused() {
    let mut c = fresh();
    let mut hello = c.client.hello();
    hello[80..112].fill(0);
    assert!(matches!(
        c.server.on_hello(&hello),
        Err(CurveError::WeakKey)
    ));
}
