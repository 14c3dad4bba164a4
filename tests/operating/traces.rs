//! Trace context across nodes, collected in memory from zlink's spans: one request that
//! crosses three nodes and a relocation is one trace, with one flow.

use zlink::trace::{current, traced};
use zlink_tests::relocating::{mesh, Add, Beat, CounterClient};

const WAIT: std::time::Duration = std::time::Duration::from_secs(10);
use zlink_tests::spans::{collector, Collected};
use zlink_tests::*;

/// A request from the client node to an Actor that moved from `tr-a` to `tr-b`, sent on
/// the client's stale route: the client's call, `tr-a`'s Message Follow relay and the
/// handler on `tr-b` are spans of one trace, under one flow, each naming its node.
#[tokio::test]
async fn one_request_across_three_nodes_and_a_relocation_is_one_trace_with_one_flow() {
    let collector = collector();

    let m = mesh(&["tr-a", "tr-b"], Some(std::time::Duration::from_secs(30))).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    client.actors().create("tr-1", "counter").await.unwrap();
    // The client learns the route to tr-a, then the Actor moves to tr-b.
    CounterClient::new(client, "tr-1")
        .add(Add(1))
        .await
        .unwrap();
    a.actors().relocate("tr-1", Some("tr-b")).await.unwrap();

    let root = traced(async {
        let counted = CounterClient::new(client, "tr-1")
            .add(Add(1))
            .await
            .unwrap();
        assert_eq!(counted.by, "tr-b");
        current().expect("inside the trace")
    })
    .await;
    let trace_id = root.trace_id().expect("a well-formed trace").to_string();

    let spans = collector.trace(&trace_id);
    let on = |name: &str, rid: &str| {
        spans
            .iter()
            .any(|s| s.name == name && s.fields.get("rid").map(String::as_str) == Some(rid))
    };
    assert!(on("zlink.call", "client"), "{spans:#?}");
    assert!(on("zlink.follow_relay", "tr-a"), "{spans:#?}");
    assert!(on("zlink.handle", "tr-b"), "{spans:#?}");
    let flows: std::collections::BTreeSet<_> = spans
        .iter()
        .filter_map(|s| s.fields.get("flow_id"))
        .collect();
    assert_eq!(
        flows.into_iter().collect::<Vec<_>>(),
        [&root.flow_id],
        "one flow: {spans:#?}"
    );

    // The spans of the other steps name their node too: the creation, the move (with its
    // outcome), store calls and handshakes.
    {
        let all = collector.spans.lock().unwrap();
        let named = |name: &str, field: &str, value: &str| {
            all.values()
                .any(|s| s.name == name && s.fields.get(field).map(String::as_str) == Some(value))
        };
        assert!(named("zlink.create", "object", "Actor tr-1"));
        assert!(named("zlink.relocation", "outcome", "moved"));
        assert!(named("zlink.relocation", "rid", "tr-a"));
        assert!(named("zlink.store", "rid", "client"));
        assert!(all.values().any(|s| s.name == "zlink.handshake"));
    }

    // A timer started in a traced turn: its ticks run in the same flow, on tr-b (the
    // handler that started it is one span named "beat", each tick another).
    traced(async {
        CounterClient::new(client, "tr-1").beat(Beat).await.unwrap();
        let flow = current().expect("inside the trace").flow_id;
        let beats = || {
            let spans = collector.spans.lock().unwrap();
            spans
                .values()
                .filter(|s| {
                    s.name == "zlink.handle"
                        && s.fields.get("packet").map(String::as_str) == Some("beat")
                        && s.fields.get("rid").map(String::as_str) == Some("tr-b")
                        && s.fields.get("flow_id") == Some(&flow)
                })
                .count()
        };
        zlink_testkit::wait_until(WAIT, "a tick in the flow", || {
            let ticked = beats() >= 2;
            async move { ticked }
        })
        .await;
    })
    .await;

    // A call made outside any trace carries none.
    CounterClient::new(client, "tr-1")
        .add(Add(1))
        .await
        .unwrap();
    let traced_spans = collector.trace(&trace_id).len();
    assert_eq!(
        traced_spans,
        spans.len(),
        "nothing joined the finished trace"
    );
    stop(m.nodes).await;
}

/// A STREAM client that names a flow on a packet: the gateway's session span and the
/// span of the Actor the session relays it to (on another node) are in that flow, and in
/// one trace.
#[tokio::test]
async fn a_stream_clients_flow_reaches_the_actor_its_session_relays_to() {
    use zlink_testkit::stream_client::{kind, StreamClient, StreamPacket};
    let collector = collector();
    use zlink::session::StreamListener;
    use zlink_tests::bound_sessions::{Gateway, Player};
    // Nodes of its own (not the testkit cluster's n0, n1, whose series the metrics tests
    // of this binary read).
    let redis = zlink_testkit::RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let player_type = Player::actor_type(|_| Player::default()).expect("an Actor type");
    let players_node =
        start(discovered_node("flow-players", &store, quick_lease()).actor_type(player_type)).await;
    let gateway_node = start(
        discovered_node("flow-gateway", &store, quick_lease()).stream_listener(
            StreamListener::new("clients")
                .bind("tcp://127.0.0.1:0")
                .session(Gateway::default),
        ),
    )
    .await;
    gateway_node
        .actors()
        .ready(Player::STABLE_TYPE, 1)
        .await
        .expect("flow-players takes players");
    let (gateway, players) = ("flow-gateway".to_string(), "flow-players".to_string());
    let address = gateway_node.stream_endpoint("clients").expect("bound");
    let mut client = StreamClient::tcp(address.trim_start_matches("tcp://"))
        .await
        .unwrap();
    client
        .call_json(1, "login", serde_json::json!({ "player": "flowing" }), WAIT)
        .await
        .unwrap();
    let flow = "0190d2c4-7a1b-7c3d-9e4f-5a6b7c8d9e0f";
    let mut packet = StreamPacket::json(kind::REQUEST, "where", &serde_json::json!(null));
    packet.request_seq = Some(2);
    packet.flow = Some((flow.to_string(), 1));
    client.write(&packet).await.unwrap();
    let answer = client.next(WAIT).await.unwrap();
    assert_eq!(answer.kind, kind::RESPONSE, "{answer:?}");

    let spans: Vec<Collected> = collector
        .spans
        .lock()
        .unwrap()
        .values()
        .filter(|s| s.fields.get("flow_id").map(String::as_str) == Some(flow))
        .cloned()
        .collect();
    let on = |surface: &str, rid: &str| {
        spans.iter().find(|s| {
            s.name == "zlink.handle"
                && s.fields.get("surface").map(String::as_str) == Some(surface)
                && s.fields.get("rid").map(String::as_str) == Some(rid)
        })
    };
    let session = on("session", &gateway).unwrap_or_else(|| panic!("{spans:#?}"));
    let actor = on("actor", &players).unwrap_or_else(|| panic!("{spans:#?}"));
    assert_eq!(session.fields.get("trace_id"), actor.fields.get("trace_id"));
    stop(vec![gateway_node, players_node]).await;
}
