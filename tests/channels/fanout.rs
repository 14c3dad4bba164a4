//! Classic fanout contracts over real TCP on 127.0.0.1.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zlink::TestFaults;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use zeromq::prelude::*;
use zlink::{CallOptions, Error, ErrorKind, Fanout, HandlerContext, Runtime};
use zlink_testkit::{unused_endpoint, wait_until, RedisServer, StalledSubscriber};
use zlink_tests::*;

const PRICES: &str = "prices";

#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
pub struct PriceChanged {
    pub sku: String,
    pub blob: Vec<u8>,
}

#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
pub struct Restocked {
    pub sku: String,
}

/// Counts what arrives.
#[derive(Clone, Default)]
pub struct Watcher {
    prices: Arc<AtomicUsize>,
    restocks: Arc<AtomicUsize>,
}

#[zlink::channel(server)]
impl Watcher {
    #[handler]
    async fn price(&self, _e: PriceChanged, _ctx: &HandlerContext) -> zlink::Result<()> {
        self.prices.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    #[handler]
    async fn restocked(&self, _e: Restocked, _ctx: &HandlerContext) -> zlink::Result<()> {
        self.restocks.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

impl Watcher {
    fn prices(&self) -> usize {
        self.prices.load(Ordering::SeqCst)
    }
    fn restocks(&self) -> usize {
        self.restocks.load(Ordering::SeqCst)
    }
}

fn price(blob: usize) -> PriceChanged {
    PriceChanged {
        sku: "tea".into(),
        blob: vec![7; blob],
    }
}

async fn publisher(spec: zlink::fanout::FanoutPublisherSpec) -> Runtime {
    start(node("pub").fanout(spec)).await
}

async fn subscriber(rid: &str, spec: zlink::fanout::FanoutSubscriberSpec) -> Runtime {
    start(node(rid).fanout(spec)).await
}

/// Publishes until `seen` shows an arrival: PUB drops what is sent before a subscription
/// reaches it.
async fn until_subscribed(publisher: &zlink::Handle, seen: impl Fn() -> bool) {
    let give_up = Instant::now() + WAIT;
    while !seen() {
        assert!(Instant::now() < give_up, "subscription never took effect");
        publisher.fanout().publish(PRICES, &price(0)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The publisher greets a new subscriber with a beacon as it subscribes, so `ready`
/// returns in a round trip instead of at the next beacon (one every 5 s).
#[tokio::test]
async fn a_new_subscriber_is_ready_at_once_not_at_the_next_beacon() {
    let publisher = publisher(Fanout::publisher(PRICES)).await;
    let endpoint = publisher.fanout().endpoint(PRICES).unwrap();
    // Past the beacon the publisher sent when it started.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sub = subscriber(
        "sub",
        Fanout::subscriber(PRICES, Watcher::default()).connect(&endpoint),
    )
    .await;
    tokio::time::timeout(Duration::from_secs(2), sub.fanout().ready(PRICES, 1))
        .await
        .expect("ready well before the next beacon, 5 s after the first")
        .expect("the publisher is ready");
    stop([sub, publisher]).await;
}

#[tokio::test]
async fn subscribers_receive_only_the_topics_they_filter_on() {
    let p = publisher(Fanout::publisher(PRICES)).await;
    let endpoint = p.fanout().endpoint(PRICES).unwrap();
    let only_prices = Watcher::default();
    let everything = Watcher::default();
    let s1 = subscriber(
        "s1",
        Fanout::subscriber(PRICES, only_prices.clone())
            .connect(&endpoint)
            .topic("PriceChanged"),
    )
    .await;
    // Without topics, a subscriber takes the packet names its group handles.
    let s2 = subscriber(
        "s2",
        Fanout::subscriber(PRICES, everything.clone()).connect(&endpoint),
    )
    .await;
    until_subscribed(&p, || only_prices.prices() > 0 && everything.prices() > 0).await;
    let before = only_prices.prices();
    for _ in 0..5 {
        p.fanout()
            .publish(PRICES, &Restocked { sku: "tea".into() })
            .await
            .unwrap();
        p.fanout().publish(PRICES, &price(0)).await.unwrap();
    }
    wait_until(
        WAIT,
        "five more prices and five restocks arrive",
        || async { only_prices.prices() == before + 5 && everything.restocks() == 5 },
    )
    .await;
    assert_eq!(
        only_prices.restocks(),
        0,
        "Restocked is not a subscribed topic"
    );
    // An explicit topic, filtered by prefix.
    let tea = Watcher::default();
    let s3 = subscriber(
        "s3",
        Fanout::subscriber(PRICES, tea.clone())
            .connect(&endpoint)
            .topic("tea."),
    )
    .await;
    let give_up = Instant::now() + WAIT;
    while tea.prices() == 0 {
        assert!(Instant::now() < give_up);
        p.fanout()
            .publish(PRICES, &price(0))
            .topic("coffee.latte")
            .await
            .unwrap();
        p.fanout()
            .publish(PRICES, &price(0))
            .topic("tea.green")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop([s1, s2, s3, p]).await;
}

#[tokio::test]
async fn a_slow_subscriber_loses_its_copies_while_a_fast_one_gets_everything() {
    let p = publisher(Fanout::publisher(PRICES).send_high_water_mark(256)).await;
    let endpoint = p.fanout().endpoint(PRICES).unwrap();
    let fast = Watcher::default();
    let s = subscriber(
        "fast",
        Fanout::subscriber(PRICES, fast.clone()).connect(&endpoint),
    )
    .await;
    let _slow = StalledSubscriber::connect(&endpoint, b"").await.unwrap();
    until_subscribed(&p, || fast.prices() > 0).await;
    let warm = fast.prices();
    const EVENTS: usize = 3000;
    for i in 0..EVENTS {
        // Publish never waits, whatever the slow subscriber does.
        p.fanout().publish(PRICES, &price(8 * 1024)).await.unwrap();
        if i % 8 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    wait_until(WAIT, "the fast subscriber got every event", || async {
        fast.prices() == warm + EVENTS
    })
    .await;
    assert!(
        p.fanout().dropped(PRICES).unwrap() > 0,
        "the stalled subscriber lost copies"
    );
    stop([s, p]).await;
}

#[tokio::test]
async fn no_drop_publish_waits_for_room_and_fails_at_its_deadline() {
    let p = publisher(Fanout::publisher(PRICES).send_high_water_mark(2).no_drop()).await;
    let endpoint = p.fanout().endpoint(PRICES).unwrap();
    let _slow = StalledSubscriber::connect(&endpoint, b"").await.unwrap();
    let short = || CallOptions::new().timeout(Duration::from_millis(200));
    let give_up = Instant::now() + WAIT;
    let mut accepted = 0;
    let waited = loop {
        assert!(
            Instant::now() < give_up,
            "never backpressured after {accepted} publishes"
        );
        let started = Instant::now();
        match p
            .fanout()
            .publish(PRICES, &price(256 * 1024))
            .topic("PriceChanged")
            .options(short())
            .await
        {
            Ok(()) => {
                accepted += 1;
                // Let the listener's tasks run (the test runtime has one thread).
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            Err(e) => {
                assert!(e.is(ErrorKind::DeadlineExceeded), "{e}");
                break started.elapsed();
            }
        }
    };
    assert!(
        accepted > 2,
        "publish succeeded while there was room ({accepted})"
    );
    assert!(
        waited >= Duration::from_millis(200),
        "failed after {waited:?}"
    );
    assert_eq!(p.fanout().dropped(PRICES).unwrap(), 0, "NoDrop never drops");
    assert!(p
        .fanout()
        .dropped("not-published-here")
        .unwrap_err()
        .is(zlink::ErrorKind::NotConfigured));
    assert!(p
        .fanout()
        .publishers("not-subscribed-here")
        .unwrap_err()
        .is(zlink::ErrorKind::NotConfigured));
    assert!(p
        .channels()
        .client_server_servers("not-a-client-here")
        .unwrap_err()
        .is(zlink::ErrorKind::NotConfigured));
    stop([p]).await;
}

#[tokio::test]
async fn the_reserved_beacon_topic_is_an_argument_error_and_zero_subscribers_is_success() {
    let p = publisher(Fanout::publisher(PRICES)).await;
    let err = p
        .fanout()
        .publish(PRICES, &price(0))
        .topic("\u{1}ZLF1")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    for near in ["\u{1}ZLF", "\u{1}ZLF1\u{0}", "\u{1}ZLF2"] {
        p.fanout()
            .publish(PRICES, &price(0))
            .topic(near)
            .await
            .unwrap();
    }
    p.fanout().publish(PRICES, &price(0)).await.unwrap();
    let err = p
        .fanout()
        .publish("not-a-fanout", &price(0))
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::NotConfigured), "{err}");
    stop([p]).await;
}

#[tokio::test]
async fn a_silent_publisher_is_marked_not_ready_then_recovered() {
    // A bare zeromq PUB stands in for a publisher that can fall silent on demand.
    let mut raw = zeromq::PubSocket::new();
    let endpoint = raw.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let watcher = Watcher::default();
    let s = start(
        node("s")
            .test_liveness(Duration::from_millis(50), Duration::from_millis(300))
            .fanout(Fanout::subscriber(PRICES, watcher).connect(&endpoint)),
    )
    .await;
    let beacon = || {
        let mut m = zeromq::ZmqMessage::from(zlink::fanout::BEACON_TOPIC.to_vec());
        m.push_back(zlink::fanout::BEACON_PAYLOAD.to_vec().into());
        m
    };
    let ready = |s: &Runtime| {
        s.fanout()
            .publishers(PRICES)
            .unwrap()
            .first()
            .is_some_and(|p| p.ready)
    };
    let give_up = Instant::now() + WAIT;
    while !ready(&s) {
        assert!(Instant::now() < give_up, "never ready");
        raw.send(beacon()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Silence past the deadline: not ready, socket recreated.
    wait_until(WAIT, "the silent publisher is marked not ready", || async {
        !ready(&s)
    })
    .await;
    assert!(s.fanout().publishers(PRICES).unwrap()[0].resubscribed >= 1);
    let give_up = Instant::now() + WAIT;
    while !ready(&s) {
        assert!(Instant::now() < give_up, "never recovered");
        raw.send(beacon()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop([s]).await;
}

/// A publisher "pub" and a subscriber "sub" of [`PRICES`] that finds it through `store`,
/// returned once the subscriber has received an event.
async fn discovered_publisher_and_subscriber(
    store: &Arc<dyn zlink::store::LocationStore>,
) -> (Runtime, Runtime) {
    let p =
        start(discovered_node("pub", store, quick_lease()).fanout(Fanout::publisher(PRICES))).await;
    let watcher = Watcher::default();
    let s = start(
        discovered_node("sub", store, quick_lease())
            .fanout(Fanout::subscriber(PRICES, watcher.clone()).discover()),
    )
    .await;
    until_subscribed(&p, || watcher.prices() > 0).await;
    (p, s)
}

#[tokio::test]
async fn subscribers_find_publishers_through_the_location_store() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let (p, s) = discovered_publisher_and_subscriber(&store).await;
    assert_eq!(
        s.fanout().publishers(PRICES).unwrap()[0].endpoint,
        p.fanout().endpoint(PRICES).unwrap()
    );
    stop([s, p]).await;
}

/// Publishes a fanout publisher descriptor of [`PRICES`] for `id` at `endpoint`, under
/// the lease `token`.
async fn publish_publisher(
    store: &Arc<dyn zlink::store::LocationStore>,
    token: &zlink::store::LeaseToken,
    id: &str,
    endpoint: &str,
) {
    use zlink::store::{DescriptorKey, DescriptorKind, DescriptorScope, MeshDescriptor};
    let body = MeshDescriptor {
        mesh_name: MESH.into(),
        rid: id.into(),
        generation: 1,
        revision: 1,
        endpoint: endpoint.into(),
        protocol: 2,
        channels: vec![],
        curve_key: None,
        spot_types: vec![],
        instance_spot_types: vec![],
        actor_types: vec![],
        entry_spot: None,
        placement_weight: 0,
        draining: false,
    }
    .encode()
    .unwrap();
    let key = DescriptorKey {
        scope: DescriptorScope {
            kind: DescriptorKind::Fanout,
            scope: PRICES.into(),
        },
        id: id.into(),
    };
    store.publish_descriptor(token, &key, &body).await.unwrap();
}

#[tokio::test]
async fn fanout_discovery_finds_a_publisher_after_1000_dead_descriptors() {
    use zlink::store::{ClaimOutcome, OwnerId};
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    // 1100 publishers that died without withdrawing, all sorted before the live one.
    let ClaimOutcome::Claimed(ghost) = store
        .claim_lease(&OwnerId("ghost".into()), Duration::from_millis(300))
        .await
        .unwrap()
    else {
        panic!("ghost lease conflicted")
    };
    for i in 0..1100 {
        let id = format!("dead-{i:04}");
        publish_publisher(&store, &ghost.token, &id, "tcp://127.0.0.1:9").await;
    }
    wait_until(WAIT, "the ghost lease expired", || async {
        store
            .read_lease(&ghost.token.owner)
            .await
            .unwrap()
            .is_none()
    })
    .await;
    let (p, s) = discovered_publisher_and_subscriber(&store).await;
    let publishers = s.fanout().publishers(PRICES).unwrap();
    assert_eq!(publishers.len(), 1, "no feed for a dead publisher");
    assert_eq!(publishers[0].endpoint, p.fanout().endpoint(PRICES).unwrap());
    stop([s, p]).await;
}

#[test]
fn manual_and_automatic_discovery_on_one_subscriber_is_a_startup_error() {
    let err = node("x")
        .fanout(
            Fanout::subscriber(PRICES, Watcher::default())
                .connect("tcp://127.0.0.1:1")
                .discover(),
        )
        .build()
        .err()
        .expect("invalid");
    assert!(
        err.to_string()
            .contains("combines connect(endpoint) and discover()"),
        "{err}"
    );
}

#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
pub struct Numbered(pub u64);

/// Records the numbers in arrival order, slowly.
#[derive(Clone, Default)]
pub struct Recorder {
    seen: Arc<std::sync::Mutex<Vec<u64>>>,
}

#[zlink::channel(server)]
impl Recorder {
    #[handler]
    async fn numbered(&self, n: Numbered, _ctx: &HandlerContext) -> zlink::Result<()> {
        // A handler that yields mid-way: later events must still wait their turn.
        tokio::task::yield_now().await;
        self.seen.lock().unwrap().push(n.0);
        Ok(())
    }
}

#[tokio::test]
async fn one_publishers_events_reach_the_handler_in_publish_order() {
    let p = publisher(Fanout::publisher(PRICES)).await;
    let endpoint = p.fanout().endpoint(PRICES).unwrap();
    let recorder = Recorder::default();
    let s = subscriber(
        "s",
        Fanout::subscriber(PRICES, recorder.clone()).connect(&endpoint),
    )
    .await;
    let give_up = Instant::now() + WAIT;
    while recorder.seen.lock().unwrap().is_empty() {
        assert!(Instant::now() < give_up, "never subscribed");
        p.fanout().publish(PRICES, &Numbered(0)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for n in 1..=300 {
        p.fanout().publish(PRICES, &Numbered(n)).await.unwrap();
    }
    wait_until(WAIT, "the last event arrives", || async {
        recorder.seen.lock().unwrap().last() == Some(&300)
    })
    .await;
    let seen = recorder.seen.lock().unwrap().clone();
    let after_warmup: Vec<u64> = seen.into_iter().filter(|n| *n > 0).collect();
    assert_eq!(after_warmup, (1..=300).collect::<Vec<_>>());
    stop([s, p]).await;
}

#[tokio::test]
async fn a_curve_publisher_serves_only_trusted_curve_subscribers() {
    use zlink::security::CurveKeypair;
    let (p_keys, s_keys) = (CurveKeypair::generate(), CurveKeypair::generate());
    let p = start(
        node("pub")
            .curve(p_keys.clone())
            .trust_key(s_keys.public())
            .fanout(Fanout::publisher(PRICES)),
    )
    .await;
    let endpoint = p.fanout().endpoint(PRICES).unwrap();
    let trusted = Watcher::default();
    // Fanout-only processes: no mesh listener, so no trust set is needed on their side.
    let s = start(Runtime::builder().curve(s_keys).fanout(
        Fanout::subscriber(PRICES, trusted.clone()).connect_curve(&endpoint, p_keys.public()),
    ))
    .await;
    let plain = Watcher::default();
    let n = subscriber(
        "n",
        Fanout::subscriber(PRICES, plain.clone()).connect(&endpoint),
    )
    .await;
    let stranger = Watcher::default();
    let u = start(Runtime::builder().curve(CurveKeypair::generate()).fanout(
        Fanout::subscriber(PRICES, stranger.clone()).connect_curve(&endpoint, p_keys.public()),
    ))
    .await;
    until_subscribed(&p, || trusted.prices() > 0).await;
    for _ in 0..20 {
        p.fanout().publish(PRICES, &price(0)).await.unwrap();
    }
    wait_until(WAIT, "the trusted subscriber gets the burst", || async {
        trusted.prices() >= 20
    })
    .await;
    assert_eq!(
        (plain.prices(), stranger.prices()),
        (0, 0),
        "an untrusted subscriber got events"
    );
    assert!(!u
        .fanout()
        .publishers(PRICES)
        .unwrap()
        .iter()
        .any(|f| f.ready));
    stop([u, n, s, p]).await;
}

/// Records the `trace` metadata of every price event.
#[derive(Clone, Default)]
pub struct MetadataWatcher {
    traces: Arc<std::sync::Mutex<Vec<Option<String>>>>,
}

#[zlink::channel(server)]
impl MetadataWatcher {
    #[handler]
    async fn price(&self, _e: PriceChanged, ctx: &HandlerContext) -> zlink::Result<()> {
        let trace = ctx.metadata().get("trace").map(str::to_string);
        self.traces.lock().unwrap().push(trace);
        Ok(())
    }
}

impl MetadataWatcher {
    fn traces(&self) -> Vec<Option<String>> {
        self.traces.lock().unwrap().clone()
    }
}

#[tokio::test]
async fn once_ready_a_subscriber_misses_no_event_and_sees_its_metadata() {
    let p = publisher(Fanout::publisher(PRICES)).await;
    let endpoint = p.fanout().endpoint(PRICES).unwrap();
    let watcher = MetadataWatcher::default();
    let s = subscriber(
        "s",
        Fanout::subscriber(PRICES, watcher.clone()).connect(&endpoint),
    )
    .await;
    s.fanout().ready(PRICES, 1).await.unwrap();
    // Exactly one publish each, no retry: `ready` promised the subscription is in effect.
    let options = CallOptions::new().metadata("trace", "t-1").unwrap();
    p.fanout()
        .publish(PRICES, &price(0))
        .topic("PriceChanged")
        .options(options)
        .await
        .unwrap();
    p.fanout().publish(PRICES, &price(0)).await.unwrap();
    wait_until(WAIT, "both events arrive", || async {
        watcher.traces().len() == 2
    })
    .await;
    assert_eq!(watcher.traces(), [Some("t-1".to_string()), None]);
    stop([s, p]).await;
}

#[tokio::test]
async fn waiting_for_fanout_readiness_fails_in_time_or_when_not_subscribed() {
    // A subscriber whose publisher never answers: nothing listens on the endpoint.
    let endpoint = unused_endpoint();
    let s = start(
        node("s")
            .request_timeout(Duration::from_millis(300))
            .fanout(Fanout::subscriber(PRICES, Watcher::default()).connect(&endpoint)),
    )
    .await;
    let started = Instant::now();
    let err = s.fanout().ready(PRICES, 1).await.unwrap_err();
    assert_eq!(err.kind(), Some(ErrorKind::DeadlineExceeded), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3));
    // Zero publishers are ready at once; a channel it does not subscribe to is refused.
    s.fanout().ready(PRICES, 0).await.unwrap();
    let err = s.fanout().ready("other", 1).await.unwrap_err();
    assert_eq!(err.kind(), Some(ErrorKind::NotConfigured), "{err}");
    stop([s]).await;
}

#[tokio::test]
async fn fanout_discovery_pages_past_hundreds_of_live_publishers() {
    use zlink::store::{ClaimOutcome, OwnerId};
    const GHOSTS: usize = 300; // more than one page of a scope read (256)
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    // Publishers that are alive (their lease holds) and take connections (the kernel's
    // backlog does) but never speak: none of them is cleaned away, so a reader that
    // stopped after the first page would never reach "pub", sorted after all of them.
    let silent: Vec<std::net::TcpListener> = (0..GHOSTS)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let ClaimOutcome::Claimed(alive) = store
        .claim_lease(&OwnerId("alive".into()), Duration::from_secs(60))
        .await
        .unwrap()
    else {
        panic!("lease conflicted")
    };
    for (i, listener) in silent.iter().enumerate() {
        let id = format!("live-{i:04}");
        let endpoint = format!("tcp://{}", listener.local_addr().unwrap());
        publish_publisher(&store, &alive.token, &id, &endpoint).await;
    }
    let (p, s) = discovered_publisher_and_subscriber(&store).await;
    let publishers = s.fanout().publishers(PRICES).unwrap();
    assert_eq!(publishers.len(), GHOSTS + 1, "one feed per live publisher");
    let real = p.fanout().endpoint(PRICES).unwrap();
    assert!(publishers.iter().any(|f| f.endpoint == real && f.ready));
    stop([s, p]).await;
    drop(silent);
}
