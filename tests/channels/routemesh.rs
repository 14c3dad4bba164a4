//! RouteMesh channel contracts over real TCP on 127.0.0.1.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zlink::{CallOptions, ErrorKind, Handlers, PeerSpec};
use zlink_testkit::wait_until;
use zlink_tests::*;

async fn answered_by(c: &zlink::Handle, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..n {
        let r = echo_client(c)
            .echo(&Echo {
                text: i.to_string(),
            })
            .await
            .unwrap();
        out.push(r.by);
    }
    out
}

#[tokio::test]
async fn request_reply_roundtrip_carries_metadata_to_the_handler() {
    zlink_testkit::init_tracing();
    let a = server("a", 100).await;
    let c = client("c", &[&a]).await;
    let opts = CallOptions::new().metadata("trace", "t-1").unwrap();
    let reply = echo_client(&c)
        .echo(&Echo { text: "hi".into() })
        .options(opts)
        .await
        .unwrap();
    assert_eq!(
        reply,
        Echoed {
            text: "hi".into(),
            by: "a".into(),
            trace: Some("t-1".into())
        }
    );
    stop([c, a]).await;
}

#[tokio::test]
async fn weights_100_300_select_b_a_b_b() {
    let a = server("a", 100).await;
    let b = server("b", 300).await;
    let c = client("c", &[&a, &b]).await;
    assert_eq!(
        answered_by(&c, 8).await,
        ["b", "a", "b", "b", "b", "a", "b", "b"]
    );
    for rt in [c, a, b] {
        rt.shutdown().await;
    }
}

#[tokio::test]
async fn equal_weights_round_robin() {
    let a = server("a", 100).await;
    let b = server("b", 100).await;
    let c = client("c", &[&a, &b]).await;
    assert_eq!(answered_by(&c, 6).await, ["a", "b", "a", "b", "a", "b"]);
    for rt in [c, a, b] {
        rt.shutdown().await;
    }
}

#[tokio::test]
async fn weight_zero_drains_new_requests_while_in_flight_request_completes() {
    let a = server("a", 100).await;
    let b = server("b", 100).await;
    let c = client("c", &[&a, &b]).await;
    // The first pick with equal weights is "a": the slow request lands there.
    let slow = {
        let c = c.clone();
        tokio::spawn(async move { echo_client(&c).slow(&Slow { millis: 800 }).await })
    };
    a.channels().set_weight(CHANNEL, 0).unwrap();
    c.nodes()
        .wait_for(WAIT, |p| {
            p.iter()
                .any(|s| s.rid == "a" && s.weight(CHANNEL) == Some(0))
        })
        .await
        .unwrap();
    assert!(
        !slow.is_finished(),
        "the slow request must still be in flight during the drain"
    );
    assert_eq!(answered_by(&c, 5).await, ["b"; 5]);
    let slow_reply = slow.await.unwrap().unwrap();
    assert_eq!(
        slow_reply.by, "a",
        "in-flight work on the drained node completes"
    );
    // Node-direct to the drained node is unaffected.
    let direct = c
        .nodes()
        .request(
            "a",
            &Echo {
                text: "direct".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(direct.by, "a");
    for rt in [c, a, b] {
        rt.shutdown().await;
    }
}

#[tokio::test]
async fn weight_change_propagates_with_a_higher_revision() {
    let a = server("a", 100).await;
    let c = client("c", &[&a]).await;
    let before = c.nodes().peers()[0].revision;
    a.channels().set_weight(CHANNEL, 250).unwrap();
    let peers = c
        .nodes()
        .wait_for(WAIT, |p| p[0].weight(CHANNEL) == Some(250))
        .await
        .unwrap();
    assert!(peers[0].revision > before);
    assert!(
        a.channels().set_weight(CHANNEL, 10_001).is_err(),
        "weights above 10000 are refused"
    );
    assert_eq!(a.channels().weight(CHANNEL), Some(250));
    stop([c, a]).await;
}

#[tokio::test]
async fn route_mesh_never_selects_itself_not_found() {
    let a = server("a", 100).await;
    // "b" serves the channel too, but the only *remote* server it knows is none: c is a client.
    let b = start(
        node("b")
            .channel_server(CHANNEL, echo_handlers("b", Default::default()))
            .peer(PeerSpec::new(a.endpoint())),
    )
    .await;
    b.nodes().wait_for(WAIT, |p| p.len() == 1).await.unwrap();
    // From b, the only candidate is a.
    assert_eq!(echo_by(&b).await, "a");
    a.channels().set_weight(CHANNEL, 0).unwrap();
    b.nodes()
        .wait_for(WAIT, |p| p[0].weight(CHANNEL) == Some(0))
        .await
        .unwrap();
    // Now b itself is the only server with weight > 0: it must not select itself.
    let started = tokio::time::Instant::now();
    let err = echo_client(&b)
        .echo(&Echo { text: "x".into() })
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::NotFound), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "no candidate fails at once"
    );
    stop([b, a]).await;
}

#[tokio::test]
async fn node_direct_to_non_member_is_not_found() {
    let a = server("a", 100).await;
    let c = client("c", &[&a]).await;
    let err = c
        .nodes()
        .request("nobody", &Echo { text: "x".into() })
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::NotFound), "{err}");
    let err = c
        .nodes()
        .send("nobody", &Note("x".into()))
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::NotFound), "{err}");
    assert_eq!(
        c.nodes()
            .request("a", &Echo { text: "x".into() })
            .await
            .unwrap()
            .by,
        "a"
    );
    stop([c, a]).await;
}

#[tokio::test]
async fn a_generated_client_is_the_only_declaration_the_client_role_needs() {
    let a = server("a", 100).await;
    // No `.channel_client(CHANNEL)`: making the typed client declares the role.
    let c = start(node("c").peer(PeerSpec::new(a.endpoint()).expect_rid("a"))).await;
    let client = echo_client(&c);
    c.channels()
        .ready(CHANNEL, 1)
        .await
        .expect("the server becomes ready");
    assert_eq!(
        client
            .echo(&Echo { text: "x".into() })
            .await
            .expect("answered")
            .by,
        "a"
    );
    // A typed client for a malformed ChannelName fails its calls as an argument error.
    let err = EchoServiceClient::new(&c, "")
        .echo(&Echo { text: "x".into() })
        .await
        .unwrap_err();
    assert!(matches!(err, zlink::Error::InvalidArgument(_)), "{err}");
    stop([c, a]).await;
}

#[tokio::test]
async fn one_status_snapshot_shows_identity_peers_weights_and_serializes() {
    let a = server("a", 250).await;
    let c = client("c", &[&a]).await;
    let status = a.status();
    assert_eq!(status.rid, "a");
    assert_eq!(status.generation, a.handle().generation());
    assert!(status.running);
    assert_eq!(status.served, vec![(CHANNEL.to_string(), 250)]);
    assert_eq!(
        status
            .peers
            .iter()
            .map(|p| p.rid.as_str())
            .collect::<Vec<_>>(),
        ["c"]
    );
    assert!(status.open_connections >= 1);
    assert!(status.store.is_none(), "no Location Store registered");
    let json = serde_json::to_value(&status).expect("serializes");
    assert_eq!(json["rid"], "a");
    assert_eq!(json["served"][0][1], 250);
    let client_view = c.status();
    assert_eq!(client_view.peers[0].weight(CHANNEL), Some(250));
    stop([c, a]).await;
}

/// A hand-written message whose packet name is longer than the wire carries.
#[derive(serde::Serialize, serde::Deserialize)]
struct LongName;

impl zlink::Message for LongName {
    const PACKET_NAME: &'static str = concat!(
        "a-packet-name-far-too-long-for-the-one-byte-length-of-the-call-head-",
        "a-packet-name-far-too-long-for-the-one-byte-length-of-the-call-head-",
        "a-packet-name-far-too-long-for-the-one-byte-length-of-the-call-head-",
        "a-packet-name-far-too-long-for-the-one-byte-length-of-the-call-head-"
    );
    fn encode(&self) -> zlink::Result<zlink::Bytes> {
        Ok(zlink::Bytes::new())
    }
    fn decode(_bytes: &[u8]) -> zlink::Result<Self> {
        Ok(LongName)
    }
}

#[tokio::test]
async fn a_packet_name_over_255_bytes_is_an_argument_error_not_a_truncation() {
    let a = server("a", 100).await;
    let c = client("c", &[&a]).await;
    let err = c.channels().send(CHANNEL, &LongName).await.unwrap_err();
    assert!(matches!(err, zlink::Error::InvalidArgument(_)), "{err}");
    // The connection is untouched.
    assert_eq!(echo_by(&c).await, "a");
    stop([c, a]).await;
}

#[tokio::test]
async fn unregistered_channel_is_not_found() {
    let a = server("a", 100).await;
    let c = client("c", &[&a]).await;
    let err = c
        .channels()
        .request("other", &Echo { text: "x".into() })
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::NotFound), "{err}");
    stop([c, a]).await;
}

#[tokio::test]
async fn request_timeout_is_deadline_exceeded_and_late_reply_is_discarded() {
    let a = server("a", 100).await;
    let c = client("c", &[&a]).await;
    let opts = CallOptions::new().timeout(Duration::from_millis(100));
    let err = echo_client(&c)
        .slow(&Slow { millis: 400 })
        .options(opts)
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::DeadlineExceeded), "{err}");
    // The late reply of the slow request arrives while this request waits; it must not be
    // taken for this one.
    let reply = echo_client(&c).slow(&Slow { millis: 600 }).await.unwrap();
    assert_eq!(reply.text, "slept 600");
    stop([c, a]).await;
}

#[tokio::test]
async fn request_without_handler_gets_not_found_and_send_without_handler_is_dropped() {
    let notes = Arc::new(AtomicUsize::new(0));
    let a = start(node("a").channel_server(CHANNEL, echo_handlers("a", notes.clone()))).await;
    let c = client("c", &[&a]).await;
    let err = c.channels().request(CHANNEL, &Unhandled).await.unwrap_err();
    assert!(err.is(ErrorKind::NotFound), "{err}");
    // A send for a packet registered as a request has no send handler: dropped, no error
    // for the sender (completion is local admission).
    c.channels()
        .send(CHANNEL, &Echo { text: "x".into() })
        .await
        .unwrap();
    echo_client(&c).note(&Note("counted".into())).await.unwrap();
    wait_until(WAIT, "the note is handled", || async {
        notes.load(Ordering::SeqCst) == 1
    })
    .await;
    // The connection still serves requests.
    assert_eq!(echo_by(&c).await, "a");
    stop([c, a]).await;
}

#[tokio::test]
async fn handler_error_becomes_error_reply_with_its_kind() {
    let group = Handlers::new().on_request(|_ctx, _e: Echo| async move {
        Err::<Echoed, _>(zlink::Error::new(ErrorKind::Rejected, "not today"))
    });
    let a = start(node("a").channel_server(CHANNEL, group)).await;
    let c = client("c", &[&a]).await;
    let err = echo_client(&c)
        .echo(&Echo { text: "x".into() })
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::Rejected), "{err}");
    assert!(err.to_string().contains("not today"));
    stop([c, a]).await;
}

#[tokio::test]
async fn reply_never_carries_request_metadata() {
    // The reply type echoes what the handler saw; the reply frames themselves carry no
    // metadata (checked on the wire by the envelope tests); here: metadata reaches the
    // handler once per request and does not leak into the next request.
    let a = server("a", 100).await;
    let c = client("c", &[&a]).await;
    let opts = CallOptions::new().metadata("trace", "first").unwrap();
    let r1 = echo_client(&c)
        .echo(&Echo { text: "1".into() })
        .options(opts)
        .await
        .unwrap();
    let r2 = echo_client(&c)
        .echo(&Echo { text: "2".into() })
        .await
        .unwrap();
    assert_eq!(r1.trace.as_deref(), Some("first"));
    assert_eq!(r2.trace, None);
    stop([c, a]).await;
}

#[tokio::test]
async fn both_sides_listing_each_other_keep_one_connection() {
    let a = server("a", 100).await;
    let b = start(
        node("b")
            .channel_server(CHANNEL, echo_handlers("b", Default::default()))
            .peer(PeerSpec::new(a.endpoint()).expect_rid("a")),
    )
    .await;
    b.nodes().wait_for(WAIT, |p| p.len() == 1).await.unwrap();
    a.nodes().wait_for(WAIT, |p| p.len() == 1).await.unwrap();
    assert_eq!(echo_by(&b).await, "a");
    assert_eq!(echo_by(&a).await, "b");
    stop([b, a]).await;
}

#[tokio::test]
async fn channel_readiness_counts_only_selectable_servers_and_fails_in_time() {
    let a = server("a", 0).await;
    let c = start(
        node("c")
            .request_timeout(Duration::from_millis(400))
            .peer(PeerSpec::new(a.endpoint()).expect_rid("a")),
    )
    .await;
    let _client = echo_client(&c);
    c.nodes().wait_for(WAIT, |p| p.len() == 1).await.unwrap();
    // a is connected but drained (weight 0): it is not a selectable server.
    let started = std::time::Instant::now();
    let err = c.channels().ready(CHANNEL, 1).await.unwrap_err();
    assert_eq!(err.kind(), Some(ErrorKind::DeadlineExceeded), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3));
    // Waiting starts before a's weight change and is woken by it.
    let waiting = tokio::spawn({
        let c = c.clone();
        async move { c.channels().ready(CHANNEL, 1).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    a.channels().set_weight(CHANNEL, 100).unwrap();
    waiting.await.unwrap().expect("ready once a takes new work");
    assert_eq!(c.channels().ready_servers(CHANNEL).unwrap(), 1);
    // A channel this process serves only through ClientServer has no RouteMesh servers to
    // wait for.
    let cs = start(
        node("cs").client_server(
            zlink::ClientServer::server("cs-only", echo_handlers("cs", Default::default()))
                .listen("tcp://127.0.0.1:0"),
        ),
    )
    .await;
    let err = cs.channels().ready("cs-only", 1).await.unwrap_err();
    assert_eq!(err.kind(), Some(ErrorKind::NotConfigured), "{err}");
    stop([c, a, cs]).await;
}
