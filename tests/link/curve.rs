//! CURVE-authenticated links between zlink nodes, over real TCP on 127.0.0.1 (and a real
//! `redis-server` for discovery): whom a listener admits, the RID-to-key binding, keys
//! published in the Location Store, and the configuration rules.

use std::time::Duration;

use zlink::security::{CurveKeypair, Trust};
use zlink::{ClientServer, PeerSpec, Runtime};
use zlink_testkit::{unused_endpoint, wait_until, RedisServer};
use zlink_tests::*;

fn curve_server(
    rid: &str,
    keys: &CurveKeypair,
    trusted: &[&CurveKeypair],
) -> zlink::RuntimeBuilder {
    node(rid)
        .curve(keys.clone())
        .trust(Trust::Keys(trusted.iter().map(|k| k.public()).collect()))
        .channel_server(CHANNEL, echo_handlers(rid, Default::default()))
}

fn curve_client(
    rid: &str,
    keys: &CurveKeypair,
    server: &zlink::Handle,
    server_keys: &CurveKeypair,
) -> zlink::RuntimeBuilder {
    node(rid)
        .curve(keys.clone())
        .trust_key(server_keys.public())
        .channel_client(CHANNEL)
        .peer(PeerSpec::new(server.endpoint()).server_key(server_keys.public()))
}

#[tokio::test]
async fn a_curve_node_admits_only_keys_in_its_trust_set() {
    let (a_keys, b_keys, stranger) = (
        CurveKeypair::generate(),
        CurveKeypair::generate(),
        CurveKeypair::generate(),
    );
    let a = start(curve_server("a", &a_keys, &[&b_keys])).await;
    let b = start(curve_client("b", &b_keys, &a, &a_keys)).await;
    b.nodes()
        .wait_for(WAIT, |p| p.len() == 1)
        .await
        .expect("b is admitted");
    assert_eq!(echo_by(&b).await, "a");

    let untrusted = start(curve_client("u", &stranger, &a, &a_keys)).await;
    let plain = start(
        node("n")
            .channel_client(CHANNEL)
            .peer(PeerSpec::new(a.endpoint())),
    )
    .await;
    // A client that expects another server key refuses the real server.
    let wrong_server = start(curve_client("w", &b_keys, &a, &stranger)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    for refused in [&untrusted, &plain, &wrong_server] {
        assert!(
            refused.nodes().peers().is_empty(),
            "{} was admitted",
            refused.rid()
        );
    }
    assert_eq!(peer_rids(&a), vec!["b".to_string()]);
    stop([untrusted, plain, wrong_server, b, a]).await;
}

#[tokio::test]
async fn a_rid_claimed_by_another_key_is_refused() {
    let (a_keys, b_keys, thief) = (
        CurveKeypair::generate(),
        CurveKeypair::generate(),
        CurveKeypair::generate(),
    );
    let a = start(curve_server("a", &a_keys, &[&b_keys, &thief])).await;
    let b = start(curve_client("b", &b_keys, &a, &a_keys)).await;
    b.nodes()
        .wait_for(WAIT, |p| p.len() == 1)
        .await
        .expect("b is admitted");
    b.shutdown().await;
    wait_until(WAIT, "a sees b leave", || async {
        a.nodes().peers().is_empty()
    })
    .await;
    // A trusted key, but not the one that proved "b": refused.
    let impostor = start(curve_client("b", &thief, &a, &a_keys)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        impostor.nodes().peers().is_empty(),
        "the impostor was admitted as b"
    );
    assert!(a.nodes().peers().is_empty());
    impostor.shutdown().await;
    // The real b comes back and is admitted again.
    let b = start(curve_client("b", &b_keys, &a, &a_keys)).await;
    b.nodes()
        .wait_for(WAIT, |p| p.len() == 1)
        .await
        .expect("b is admitted again");
    stop([b, a]).await;
}

#[tokio::test]
async fn curve_nodes_discover_each_other_through_redis_with_published_keys() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let (a_keys, b_keys, outsider) = (
        CurveKeypair::generate(),
        CurveKeypair::generate(),
        CurveKeypair::generate(),
    );
    let a = start(
        discovered_node("a", &store, quick_lease())
            .curve(a_keys)
            .channel_server(CHANNEL, echo_handlers("a", Default::default())),
    )
    .await;
    let b = start(
        discovered_node("b", &store, quick_lease())
            .curve(b_keys)
            .channel_client(CHANNEL),
    )
    .await;
    b.nodes()
        .wait_for(WAIT, |p| p.len() == 1)
        .await
        .expect("b finds a");
    assert_eq!(echo_by(&b).await, "a");
    // A node with a key the mesh never published cannot join by dialing a directly.
    let lurker = start(
        node("lurker")
            .curve(outsider)
            .trust_key(CurveKeypair::generate().public())
            .channel_client(CHANNEL)
            .peer(
                PeerSpec::new(a.endpoint())
                    .server_key(a.handle().curve_public_key().expect("a runs CURVE")),
            ),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        lurker.nodes().peers().is_empty(),
        "a key outside the mesh was admitted"
    );
    stop([lurker, b, a]).await;
}

#[tokio::test]
async fn curve_covers_client_server_listeners() {
    let (s_keys, c_keys) = (CurveKeypair::generate(), CurveKeypair::generate());
    let server = start(
        Runtime::builder()
            .curve(s_keys.clone())
            .trust_key(c_keys.public())
            .client_server(ClientServer::server(
                "cs-echo",
                echo_handlers("s", Default::default()),
            )),
    )
    .await;
    let cs = server
        .channels()
        .client_server_endpoint("cs-echo")
        .expect("cs endpoint");
    let client =
        start(Runtime::builder().curve(c_keys).client_server(
            ClientServer::client("cs-echo").connect_curve(cs.clone(), s_keys.public()),
        ))
        .await;
    wait_until(WAIT, "the CURVE client reaches the server", || async {
        !client
            .channels()
            .client_server_servers("cs-echo")
            .unwrap()
            .is_empty()
    })
    .await;
    assert_eq!(
        EchoServiceClient::new(&client, "cs-echo")
            .echo(&Echo { text: "hi".into() })
            .await
            .expect("answered")
            .by,
        "s"
    );
    // A NULL client of the same endpoint never gets in.
    let plain =
        start(Runtime::builder().client_server(ClientServer::client("cs-echo").connect(cs))).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(plain
        .channels()
        .client_server_servers("cs-echo")
        .unwrap()
        .is_empty());
    stop([plain, client, server]).await;
}

#[test]
fn plaintext_on_a_non_loopback_address_needs_allow_plaintext() {
    let err = node("x")
        .listen("tcp://0.0.0.0:0")
        .advertise_host("10.0.0.5")
        .build()
        .err()
        .expect("refused");
    assert!(err.to_string().contains("allow_plaintext"), "{err}");
    assert!(node("x")
        .listen("tcp://0.0.0.0:0")
        .advertise_host("10.0.0.5")
        .allow_plaintext()
        .build()
        .is_ok());
    assert!(node("x")
        .listen("tcp://0.0.0.0:0")
        .advertise_host("10.0.0.5")
        .curve(CurveKeypair::generate())
        .trust_key(CurveKeypair::generate().public())
        .build()
        .is_ok());
    // CURVE with nobody to trust, and a manual peer without its key, are refused.
    let err = node("x")
        .curve(CurveKeypair::generate())
        .build()
        .err()
        .expect("refused");
    assert!(err.to_string().contains("trust"), "{err}");
    let err = node("x")
        .curve(CurveKeypair::generate())
        .trust_key(CurveKeypair::generate().public())
        .peer(PeerSpec::new("tcp://127.0.0.1:9"))
        .build()
        .err()
        .expect("refused");
    assert!(err.to_string().contains("CURVE public key"), "{err}");
}

#[test]
fn keys_load_from_z85_and_key_files() {
    let keys = CurveKeypair::generate();
    let from_secret = CurveKeypair::from_secret_z85(&keys.secret_z85()).expect("parses");
    assert_eq!(from_secret.public(), keys.public());
    let dir = std::env::temp_dir().join(format!("zlink-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("node.key");
    keys.write_file(&path).expect("writes");
    assert_eq!(
        CurveKeypair::from_file(&path).expect("reads").public(),
        keys.public()
    );
    let printed = format!("{keys:?}");
    assert!(
        !printed.contains(&keys.secret_z85()),
        "Debug shows the secret"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test]
async fn a_configured_peer_key_owns_its_rid_before_it_ever_connects() {
    let (a_keys, b_keys, c_keys) = (
        CurveKeypair::generate(),
        CurveKeypair::generate(),
        CurveKeypair::generate(),
    );
    // a expects "b" (not running yet) to hold b_keys, and trusts c as a client.
    let b_endpoint = unused_endpoint();
    let a = start(
        node("a")
            .curve(a_keys.clone())
            .trust(Trust::Keys(vec![b_keys.public(), c_keys.public()]))
            .channel_server(CHANNEL, echo_handlers("a", Default::default()))
            .peer(
                PeerSpec::new(b_endpoint)
                    .expect_rid("b")
                    .server_key(b_keys.public()),
            ),
    )
    .await;
    // c, trusted, claims to be "b" first: refused.
    let impostor = start(curve_client("b", &c_keys, &a, &a_keys)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(impostor.nodes().peers().is_empty(), "c was admitted as b");
    assert!(a.nodes().peers().is_empty());
    stop([impostor, a]).await;
}

#[test]
fn mesh_member_trust_needs_a_mesh_with_a_store() {
    let store: std::sync::Arc<dyn zlink::store::LocationStore> =
        std::sync::Arc::new(zlink_testkit::MemoryLocationStore::new());
    // A fanout-only process with a store publishes no member keys: CURVE there must be
    // given its trusted keys.
    let err = Runtime::builder()
        .location_store(store)
        .curve(CurveKeypair::generate())
        .fanout(zlink::Fanout::publisher("news"))
        .build()
        .err()
        .expect("refused");
    assert!(err.to_string().contains("would admit no client"), "{err}");
}

/// The error of an echo from `rt` once it names a dial failure with at least `attempts`
/// attempts (waited for with a deadline).
async fn echo_error_after(rt: &zlink::Handle, attempts: u64) -> String {
    let last = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    wait_until(WAIT, "the dial failure is named", || {
        let (client, last) = (echo_client(rt), last.clone());
        async move {
            let error = match client.echo(&Echo { text: "x".into() }).await {
                Ok(_) => panic!("{} was admitted", "a refused caller"),
                Err(e) => e.to_string(),
            };
            let enough = attempts_named(&error) >= attempts;
            *last.lock().unwrap() = error;
            enough
        }
    })
    .await;
    let error = last.lock().unwrap().clone();
    error
}

/// The number in "(N attempt(s)" of a dial failure named in `error`.
fn attempts_named(error: &str) -> u64 {
    error
        .split_once(" attempt(s)")
        .and_then(|(before, _)| before.rsplit('(').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Seed 000 §2.3 makes a wrong key a refused peer, never a silent one: the caller's error
/// names the peer, the mechanism and the reason, and a peer refused again and again is one
/// WARN on each side (the listener's naming the key it refused) while the dialer backs off.
#[tokio::test]
async fn a_dial_refused_for_its_key_says_so_once_per_window_on_both_sides() {
    let logs = zlink_testkit::LogCapture::warnings();
    let (server_keys, trusted, stranger) = (
        CurveKeypair::generate(),
        CurveKeypair::generate(),
        CurveKeypair::generate(),
    );
    let server = start(curve_server("server", &server_keys, &[&trusted])).await;
    let untrusted = start(curve_client("untrusted", &stranger, &server, &server_keys)).await;

    let error = echo_error_after(&untrusted, 2).await;
    assert!(error.contains("NotFound"), "{error}");
    assert!(
        error.contains(&server.endpoint()),
        "names the peer: {error}"
    );
    assert!(
        error.contains("CURVE handshake"),
        "names the mechanism: {error}"
    );
    assert!(
        error.contains("client key not trusted"),
        "names the reason: {error}"
    );

    let dialer_warnings = logs.matching("dial refused");
    assert_eq!(dialer_warnings.len(), 1, "{dialer_warnings:#?}");
    let listener_warnings = logs.matching("trust set");
    assert_eq!(listener_warnings.len(), 1, "{listener_warnings:#?}");
    assert!(
        listener_warnings[0].contains(&stranger.public().to_z85()),
        "the listener names the key it refused: {}",
        listener_warnings[0]
    );
    stop([untrusted, server]).await;
}

/// A caller holding the wrong key for its server is told what the hang-up means.
#[tokio::test]
async fn a_dial_with_the_wrong_server_key_says_the_key_may_be_wrong() {
    let (server_keys, client_keys, not_the_server) = (
        CurveKeypair::generate(),
        CurveKeypair::generate(),
        CurveKeypair::generate(),
    );
    let server = start(curve_server("server", &server_keys, &[&client_keys])).await;
    let caller = start(curve_client(
        "caller",
        &client_keys,
        &server,
        &not_the_server,
    ))
    .await;
    let error = echo_error_after(&caller, 1).await;
    assert!(error.contains("CURVE HELLO"), "{error}");
    assert!(error.contains("server key"), "{error}");
    stop([caller, server]).await;
}
