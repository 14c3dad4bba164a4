//! Logical Multicast (seed 003 §5.1, reference rules 39–41): Spots subscribed to a topic on
//! a RouteMesh channel get each event once, over real TCP and a real `redis-server`; raw
//! ZMTP peers count the records on the wire.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use zlink::TestFaults;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use zlink::object::{Relocation, Spot, SpotContext, SpotHandlers, SpotType};
use zlink::wire::{Command, Envelope};
use zlink::{PacketKind, Payload, Runtime};
use zlink_testkit::{wait_until, RawZmtp, RedisServer};
use zlink_tests::*;

const WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The event: a numbered announcement.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
pub struct News {
    pub n: u32,
}

/// Request to a Spot: publish `News { n }` from its handler.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Done)]
pub struct Shout {
    pub n: u32,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Done;

/// What each observer Spot received, by Spot ID, in order.
type Seen = Arc<Mutex<HashMap<String, Vec<u32>>>>;

pub struct Observer {
    seen: Seen,
}

#[zlink::spot(type = "observer", relocation = recreate)]
impl Observer {
    #[subscribe(channel = "rooms", topic = "announce")]
    async fn news(&mut self, news: News, ctx: &SpotContext) -> zlink::Result<()> {
        let mut seen = self.seen.lock().unwrap();
        seen.entry(ctx.id().to_string()).or_default().push(news.n);
        Ok(())
    }

    #[handler]
    async fn shout(&mut self, shout: Shout, ctx: &SpotContext) -> zlink::Result<Done> {
        ctx.publish("rooms", "announce", &News { n: shout.n })
            .await?;
        Ok(Done)
    }
}

impl Spot for Observer {}

/// A member of channel "rooms" serving observers, on `store`.
async fn member(rid: &str, store: &Arc<dyn zlink::store::LocationStore>, seen: &Seen) -> Runtime {
    let seen = seen.clone();
    start(
        discovered_node(rid, store, quick_lease())
            .multicast_channel("rooms")
            .spot_type(Observer::spot_type(move |_| Observer { seen: seen.clone() }).unwrap()),
    )
    .await
}

/// Member `rid` running observer `id`.
async fn member_observing(
    rid: &str,
    store: &Arc<dyn zlink::store::LocationStore>,
    seen: &Seen,
    id: &str,
) -> Runtime {
    let rt = member(rid, store, seen).await;
    rt.spots()
        .get_or_create(id, "observer", Bytes::new())
        .await
        .unwrap();
    rt
}

/// Spot `id` created, then moved to node `to` (by its owner, the one that may move it).
async fn observer_on(nodes: &[Runtime], id: &str, to: &str) {
    nodes[0]
        .spots()
        .get_or_create(id, "observer", Bytes::new())
        .await
        .unwrap();
    relocate(nodes, id, to).await;
}

/// Moves Spot `id` to node `to`, asking its current owner.
async fn relocate(nodes: &[Runtime], id: &str, to: &str) {
    let owner = nodes[0].spots().find(id).await.unwrap().unwrap().rid;
    if owner != to {
        let by = nodes.iter().find(|rt| rt.rid() == owner).unwrap();
        by.spots().relocate(id, Some(to)).await.unwrap();
    }
    wait_until(WAIT, "the Spot runs where it was moved", || async {
        nodes[0].spots().find(id).await.unwrap().map(|s| s.rid) == Some(to.to_string())
    })
    .await;
}

/// Members a, b and c of "rooms" on `redis`, each seeing the other two.
async fn three_members(redis: &RedisServer, seen: &Seen) -> [Runtime; 3] {
    let store = redis_store(redis);
    let nodes = [
        member("a", &store, seen).await,
        member("b", &store, seen).await,
        member("c", &store, seen).await,
    ];
    for rt in &nodes {
        wait_until(WAIT, "every member sees the other two", || async {
            rt.channels().ready_servers("rooms").unwrap_or(0) == 2
        })
        .await;
    }
    nodes
}

fn seen_by(seen: &Seen, id: &str) -> Vec<u32> {
    seen.lock().unwrap().get(id).cloned().unwrap_or_default()
}

#[tokio::test]
async fn every_subscribed_spot_on_every_member_and_on_the_publishers_node_gets_each_event_once_in_order(
) {
    let redis = RedisServer::start().expect("redis-server");
    let seen = Seen::default();
    let nodes = three_members(&redis, &seen).await;
    let placed = [("o-a", "a"), ("o-b1", "b"), ("o-b2", "b"), ("o-c", "c")];
    for (id, on) in placed {
        observer_on(&nodes, id, on).await;
    }
    // From a Spot's handler on a, then from outside a Spot on c.
    nodes[0]
        .spots()
        .request("o-a", &Shout { n: 1 })
        .await
        .unwrap();
    nodes[2]
        .multicast()
        .publish("rooms", "announce", &News { n: 2 })
        .await
        .unwrap();
    for (id, _) in placed {
        wait_until(WAIT, "each observer got both events", || async {
            seen_by(&seen, id).len() >= 2
        })
        .await;
    }
    for (id, _) in placed {
        let mut got = seen_by(&seen, id);
        got.sort();
        assert_eq!(
            got,
            [1, 2],
            "{id}: once each (two publishers: no order between them)"
        );
    }
    // Another topic, or another channel's name, reaches nobody; zero targets is success.
    nodes[1]
        .multicast()
        .publish("rooms", "elsewhere", &News { n: 9 })
        .await
        .unwrap();
    nodes[1]
        .multicast()
        .publish("lobby", "announce", &News { n: 9 })
        .await
        .unwrap();
    // One publisher's events arrive in the order it published them.
    for n in 3..=6 {
        nodes[1]
            .multicast()
            .publish("rooms", "announce", &News { n })
            .await
            .unwrap();
    }
    for (id, _) in placed {
        wait_until(WAIT, "b's four events arrived", || async {
            seen_by(&seen, id).len() >= 6
        })
        .await;
        assert_eq!(seen_by(&seen, id)[2..], [3, 4, 5, 6], "{id}");
    }
    let [a, b, c] = nodes;
    stop([c, b, a]).await;
}

#[tokio::test]
async fn a_weight_0_member_gets_no_events_and_a_subscriber_that_moves_keeps_receiving() {
    let redis = RedisServer::start().expect("redis-server");
    let seen = Seen::default();
    let nodes = three_members(&redis, &seen).await;
    observer_on(&nodes, "o-b", "b").await;
    observer_on(&nodes, "o-c", "c").await;
    let publish = |n| {
        let a = nodes[0].clone();
        async move {
            a.multicast()
                .publish("rooms", "announce", &News { n })
                .await
                .unwrap()
        }
    };
    publish(1).await;
    // c drains: weight 0 takes no multicast.
    nodes[2].channels().set_weight("rooms", 0).unwrap();
    wait_until(WAIT, "a sees c drained", || async {
        nodes[0].channels().ready_servers("rooms").unwrap_or(0) == 1
    })
    .await;
    publish(2).await;
    nodes[2].channels().set_weight("rooms", 100).unwrap();
    wait_until(WAIT, "a sees c back", || async {
        nodes[0].channels().ready_servers("rooms").unwrap_or(0) == 2
    })
    .await;
    publish(3).await;
    wait_until(WAIT, "o-c got event 3", || async {
        seen_by(&seen, "o-c").contains(&3)
    })
    .await;
    assert_eq!(
        seen_by(&seen, "o-c"),
        [1, 3],
        "nothing while its node had weight 0"
    );
    // o-b moves to c: its subscription goes with it.
    relocate(&nodes, "o-b", "c").await;
    publish(4).await;
    wait_until(WAIT, "the moved observer got event 4", || async {
        seen_by(&seen, "o-b").contains(&4)
    })
    .await;
    assert_eq!(seen_by(&seen, "o-b"), [1, 2, 3, 4]);
    // A member that died is a target that fails: the publish still succeeds.
    let [a, b, c] = nodes;
    c.crash().await;
    a.multicast()
        .publish("rooms", "announce", &News { n: 5 })
        .await
        .unwrap();
    stop([b, a]).await;
}

/// A hand-written Spot type (no macro) noting the address of the buffer each event came in.
struct BufferProbe {
    buffers: Arc<Mutex<Vec<usize>>>,
}

#[zlink::async_trait]
impl SpotHandlers for BufferProbe {
    fn packets() -> Vec<(String, PacketKind)> {
        vec![("News".into(), PacketKind::Send)]
    }

    async fn handle(
        &mut self,
        _ctx: &SpotContext,
        _handler: usize,
        payload: Payload,
    ) -> zlink::Result<Payload> {
        let bytes = payload.into_bytes()?;
        self.buffers.lock().unwrap().push(bytes.as_ptr() as usize);
        Ok(Payload::default())
    }
}

impl Spot for BufferProbe {}

#[tokio::test]
async fn multiple_matching_spots_on_one_receiving_node_share_one_immutable_payload_buffer() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let buffers = Arc::new(Mutex::new(Vec::new()));
    let probes = {
        let buffers = buffers.clone();
        SpotType::new("probe", Relocation::Disable, move |_| BufferProbe {
            buffers: buffers.clone(),
        })
        .and_then(|t| t.subscribe("rooms", "announce", "News"))
        .unwrap()
    };
    let b = start(
        discovered_node("b", &store, quick_lease())
            .multicast_channel("rooms")
            .spot_type(probes),
    )
    .await;
    let a = start(discovered_node("a", &store, quick_lease())).await;
    wait_until(WAIT, "a sees b in rooms", || async {
        a.channels().ready_servers("rooms").unwrap_or(0) == 1
    })
    .await;
    for id in ["p1", "p2", "p3"] {
        b.spots()
            .get_or_create(id, "probe", Bytes::new())
            .await
            .unwrap();
    }
    a.multicast()
        .publish("rooms", "announce", &News { n: 1 })
        .await
        .unwrap();
    wait_until(WAIT, "three probes ran", || async {
        buffers.lock().unwrap().len() == 3
    })
    .await;
    let seen = buffers.lock().unwrap().clone();
    assert!(
        seen.iter().all(|p| *p == seen[0]),
        "one buffer for all three Spots: {seen:?}"
    );
    let (sent, received) = (a.status().multicast, b.status().multicast);
    assert_eq!((sent.published, sent.records_sent), (1, 1));
    assert_eq!((received.records_received, received.delivered), (1, 3));
    stop([a, b]).await;
}

#[test]
fn a_subscribing_spot_type_on_a_node_that_is_no_member_of_its_channel_is_a_startup_error() {
    let seen = Seen::default();
    let built = node("a")
        .location_store(<dyn zlink::store::LocationStore>::in_memory())
        .relocation_store(relocation_store())
        .spot_type(Observer::spot_type(move |_| Observer { seen: seen.clone() }).unwrap())
        .build();
    let error = built.err().expect("refused").to_string();
    assert!(
        error.contains("observer") && error.contains("rooms"),
        "{error}"
    );
}

#[test]
fn a_subscription_to_a_packet_the_type_has_no_one_way_handler_for_is_refused() {
    let Err(refused) = SpotType::new("probe", Relocation::Disable, |_| BufferProbe {
        buffers: Arc::default(),
    })
    .and_then(|t| t.subscribe("rooms", "announce", "Other")) else {
        panic!("a subscription without its handler was accepted");
    };
    assert!(
        refused.to_string().contains("no one-way handler"),
        "{refused}"
    );
    let empty = SpotType::new("probe", Relocation::Disable, |_| BufferProbe {
        buffers: Arc::default(),
    })
    .and_then(|t| t.subscribe("rooms", "", "News"));
    assert!(empty.is_err());
}

/// A raw ZMTP peer admitted to `endpoint` as `rid`, serving "rooms" with `weight`.
async fn raw_member(endpoint: &str, rid: &str, weight: u32) -> RawZmtp {
    zlink_tests::raw_peer::admitted(endpoint, rid, vec![("rooms".into(), weight)]).await
}

fn slices(frames: &[Bytes]) -> Vec<&[u8]> {
    frames.iter().map(|f| f.as_ref()).collect()
}

/// The multicast records `raw` received before the ack of a liveness probe it sends now,
/// as (channel, topic, packet).
async fn records_before_probe_ack(raw: &mut RawZmtp, probe: u64) -> Vec<(String, String, String)> {
    zlink_tests::raw_peer::envelopes_before_probe_ack(raw, probe)
        .await
        .into_iter()
        .filter_map(|envelope| match envelope {
            Envelope::Call(call) if call.command == Command::LogicalMulticast => Some((
                call.head.target.as_str().to_string(),
                call.head.topic.expect("a topic").as_str().to_string(),
                call.head.packet.as_str().to_string(),
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn logical_multicast_sends_exactly_one_record_per_eligible_node_whatever_its_weight_and_none_to_weight_0(
) {
    let a = start(node("a").location_store(<dyn zlink::store::LocationStore>::in_memory())).await;
    let mut light = raw_member(&a.endpoint(), "light", 1).await;
    let mut heavy = raw_member(&a.endpoint(), "heavy", 9000).await;
    let mut drained = raw_member(&a.endpoint(), "drained", 0).await;
    wait_until(WAIT, "a has the three raw peers", || async {
        peer_rids(&a) == ["drained", "heavy", "light"]
    })
    .await;
    for n in 0..2 {
        a.multicast()
            .publish("rooms", "announce", &News { n })
            .await
            .unwrap();
    }
    let record = (
        "rooms".to_string(),
        "announce".to_string(),
        "News".to_string(),
    );
    assert_eq!(
        records_before_probe_ack(&mut light, 11).await,
        [record.clone(), record.clone()],
        "one record per publish at weight 1"
    );
    assert_eq!(
        records_before_probe_ack(&mut heavy, 12).await,
        [record.clone(), record],
        "one record per publish at weight 9000"
    );
    assert_eq!(
        records_before_probe_ack(&mut drained, 13).await,
        [],
        "nothing at weight 0"
    );
    let counts = a.status().multicast;
    assert_eq!(
        (
            counts.published,
            counts.records_sent,
            counts.targets_skipped
        ),
        (2, 4, 0)
    );
    a.shutdown().await;
}

#[tokio::test]
async fn a_publish_with_bad_names_is_refused_and_nothing_is_sent() {
    let a = start(node("a").location_store(<dyn zlink::store::LocationStore>::in_memory())).await;
    let mut raw = raw_member(&a.endpoint(), "raw", 100).await;
    wait_until(WAIT, "a has the raw peer", || async {
        peer_rids(&a) == ["raw"]
    })
    .await;
    let long = "t".repeat(256);
    for (channel, topic) in [("rooms", ""), ("", "announce"), ("rooms", long.as_str())] {
        let refused = a
            .multicast()
            .publish(channel, topic, &News { n: 0 })
            .await
            .unwrap_err();
        assert!(
            matches!(refused, zlink::Error::InvalidArgument(_)),
            "{refused}"
        );
    }
    assert_eq!(records_before_probe_ack(&mut raw, 21).await, []);
    a.shutdown().await;
}

/// A command-23 record from a raw peer, as its parts say (`topic: None` leaves it out).
fn multicast_record(
    correlation: u64,
    channel: &str,
    topic: Option<&str>,
    packet: &str,
    payload: Bytes,
) -> Vec<Bytes> {
    zlink_tests::raw_peer::multicast_envelope(correlation, channel, topic, packet, payload).encode()
}

#[tokio::test]
async fn hostile_multicast_records_are_dropped_and_the_node_keeps_delivering() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let seen = Seen::default();
    let b = member_observing("b", &store, &seen, "o").await;
    let mut raw = raw_member(&b.endpoint(), "raw", 100).await;
    let news = |n: u32| zlink::wire::cbor_encode(&News { n }).unwrap();
    let mut truncated = multicast_record(0, "rooms", Some("announce"), "News", news(1));
    // The topic length claims more bytes than the head has.
    let mut head = truncated[0].to_vec();
    let at = head.len() - "announce".len() - 1;
    head[at] = 200;
    truncated[0] = Bytes::from(head);
    let hostile = [
        multicast_record(0, "rooms", None, "News", news(2)),
        truncated,
        multicast_record(
            0,
            "rooms",
            Some("announce"),
            "News",
            Bytes::from_static(b"\xff\x00garbage"),
        ),
        multicast_record(0, "lobby", Some("announce"), "News", news(3)),
        multicast_record(0, "rooms", Some("other"), "News", news(4)),
        multicast_record(0, "rooms", Some("announce"), "Shout", news(5)),
        multicast_record(99, "rooms", Some("announce"), "News", news(6)),
    ];
    for record in &hostile {
        raw.send(&slices(record)).await.expect("sent");
    }
    raw.send(&slices(&multicast_record(
        0,
        "rooms",
        Some("announce"),
        "News",
        news(7),
    )))
    .await
    .expect("sent");
    wait_until(WAIT, "the well-formed record was delivered", || async {
        !seen_by(&seen, "o").is_empty()
    })
    .await;
    assert_eq!(records_before_probe_ack(&mut raw, 31).await, []);
    assert_eq!(seen_by(&seen, "o"), [7], "only the well-formed event ran");
    b.shutdown().await;
}

#[tokio::test]
async fn a_publish_that_cannot_start_within_the_send_timeout_is_deadline_exceeded_and_sends_nothing(
) {
    let a = start(
        node("a")
            .location_store(<dyn zlink::store::LocationStore>::in_memory())
            .test_hold_publish_workers(),
    )
    .await;
    let mut raw = raw_member(&a.endpoint(), "raw", 100).await;
    wait_until(WAIT, "a has the raw peer", || async {
        peer_rids(&a) == ["raw"]
    })
    .await;
    let started = tokio::time::Instant::now();
    let late = a
        .multicast()
        .publish("rooms", "announce", &News { n: 0 })
        .timeout(std::time::Duration::from_millis(100))
        .await
        .unwrap_err();
    assert!(late.is(zlink::ErrorKind::DeadlineExceeded), "{late}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(100));
    assert_eq!(
        records_before_probe_ack(&mut raw, 41).await,
        [],
        "nothing was sent"
    );
    a.shutdown().await;
}

/// A large event, to fill a link that is not read.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
pub struct Bulk {
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}

#[tokio::test]
async fn logical_multicast_with_zero_targets_or_failing_targets_completes_normally() {
    // Zero targets: a node alone, a member of nothing.
    let alone =
        start(node("alone").location_store(<dyn zlink::store::LocationStore>::in_memory())).await;
    alone
        .multicast()
        .publish("rooms", "announce", &News { n: 0 })
        .await
        .unwrap();
    alone.shutdown().await;
    // A member that stops reading: its link fills, and every publish still completes,
    // each within its timeout, while a member that reads gets every event.
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let seen = Seen::default();
    let b = member_observing("b", &store, &seen, "o").await;
    // A 4 MiB send queue per connection, so the stuck member's fills fast.
    let a = start(
        discovered_node("a", &store, quick_lease()).link_limits(zlink::LinkLimits {
            send_queue_bytes: 4 << 20,
            ..Default::default()
        }),
    )
    .await;
    wait_until(WAIT, "a sees b in rooms", || async {
        a.channels().ready_servers("rooms").unwrap_or(0) == 1
    })
    .await;
    let _stuck = raw_member(&a.endpoint(), "stuck", 100).await;
    wait_until(WAIT, "a sees the stuck member too", || async {
        a.channels().ready_servers("rooms").unwrap_or(0) == 2
    })
    .await;
    let bulk = Bulk {
        data: vec![7; 256 * 1024],
    };
    let timeout = std::time::Duration::from_millis(10);
    let all = tokio::time::Instant::now();
    for _ in 0..200 {
        let started = tokio::time::Instant::now();
        a.multicast()
            .publish("rooms", "bulk", &bulk)
            .timeout(timeout)
            .await
            .expect("a failing target never fails the publish");
        assert!(
            started.elapsed() < timeout * 50,
            "a stuck member never stalls the publisher"
        );
    }
    assert!(
        all.elapsed() >= timeout * 20,
        "the stuck member's queue filled, and publishes waited out their timeout on it"
    );
    assert!(
        a.status().multicast.targets_skipped > 0,
        "the stuck member was skipped, silently"
    );
    a.multicast()
        .publish("rooms", "announce", &News { n: 1 })
        .timeout(timeout)
        .await
        .unwrap();
    wait_until(WAIT, "the reading member got the event", || async {
        seen_by(&seen, "o") == [1]
    })
    .await;
    stop([a, b]).await;
}
