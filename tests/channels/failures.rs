//! Failure contracts: lost peers, restarts, half-open links, malformed input, admission
//! refusals and shutdown. Real TCP unless the fault needs the in-memory network.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zlink::TestFaults;

use zeromq::prelude::*;
use zlink::{ErrorKind, Handlers, PeerSpec, Runtime};
use zlink_testkit::{wait_until, MemNetwork};
use zlink_tests::*;

/// Handlers that count executions and hold each request for `hold`.
fn counting(name: &str, count: Arc<AtomicUsize>, hold: Duration) -> Handlers {
    let name = name.to_string();
    Handlers::new().on_request(move |_ctx, e: Echo| {
        let (name, count) = (name.clone(), count.clone());
        async move {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(hold).await;
            Ok(Echoed {
                text: e.text,
                by: name,
                trace: None,
            })
        }
    })
}

#[tokio::test]
async fn peer_killed_mid_request_gives_one_terminal_result_and_no_execution_elsewhere() {
    zlink_testkit::init_tracing();
    let (count_a, count_b) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let start = |rid: &'static str, count: Arc<AtomicUsize>| async move {
        node(rid)
            .channel_server(CHANNEL, counting(rid, count, Duration::from_secs(30)))
            .build()
            .unwrap()
            .start()
            .await
            .unwrap()
    };
    let a = start("a", count_a.clone()).await;
    let b = start("b", count_b.clone()).await;
    let c = client("c", &[&a, &b]).await;
    let call = {
        let c = c.clone();
        tokio::spawn(async move {
            let opts = zlink::CallOptions::new().timeout(Duration::from_secs(10));
            echo_client(&c)
                .echo(&Echo { text: "x".into() })
                .options(opts)
                .await
        })
    };
    wait_until(WAIT, "a executes the request", || async {
        count_a.load(Ordering::SeqCst) == 1
    })
    .await;
    let killed_at = tokio::time::Instant::now();
    a.shutdown_with(zlink::ShutdownOptions::new().grace(Duration::ZERO))
        .await;
    let err = call.await.unwrap().unwrap_err();
    assert!(
        err.is(ErrorKind::Unavailable) || err.is(ErrorKind::ShuttingDown),
        "one terminal failure, got {err}"
    );
    assert!(
        killed_at.elapsed() < Duration::from_secs(5),
        "ends well within the deadline"
    );
    assert_eq!(
        count_b.load(Ordering::SeqCst),
        0,
        "an accepted request is never re-run elsewhere"
    );
    c.nodes()
        .wait_for(WAIT, |p| p.iter().all(|s| s.rid != "a"))
        .await
        .unwrap();
    stop([c, b]).await;
}

#[tokio::test]
async fn restarted_peer_is_reconnected_with_a_new_handshake() {
    let a1 = server("a", 100).await;
    let endpoint = a1.endpoint();
    let gen1 = a1.handle().generation();
    let c = client("c", &[&a1]).await;
    assert_eq!(c.nodes().peers()[0].generation, gen1);
    a1.shutdown().await;
    c.nodes().wait_for(WAIT, |p| p.is_empty()).await.unwrap();
    let err = echo_client(&c)
        .echo(&Echo { text: "x".into() })
        .await
        .unwrap_err();
    assert!(
        err.is(ErrorKind::NotFound),
        "no server while it is down: {err}"
    );
    let a2 = start(
        node("a")
            .listen(endpoint.clone())
            .channel_server(CHANNEL, echo_handlers("a2", Default::default())),
    )
    .await;
    assert_ne!(
        a2.handle().generation(),
        gen1,
        "a restart is a new lifecycle"
    );
    let peers = c.nodes().wait_for(WAIT, |p| p.len() == 1).await.unwrap();
    assert_eq!(
        peers[0].generation,
        a2.handle().generation(),
        "admitted through a fresh handshake"
    );
    assert_eq!(echo_by(&c).await, "a2");
    stop([c, a2]).await;
}

fn mem_node(net: &MemNetwork, host: &str) -> zlink::RuntimeBuilder {
    Runtime::builder()
        .mesh_name(MESH)
        .rid(host)
        .listen(format!("mem://{host}:1"))
        .transport(net.host(host))
        .test_liveness(Duration::from_millis(50), Duration::from_millis(300))
}

/// Client "c" on the in-memory network, ready with server "a".
async fn mem_client(net: &MemNetwork) -> Runtime {
    let c = start(
        mem_node(net, "c")
            .channel_client(CHANNEL)
            .peer(PeerSpec::new("mem://a:1")),
    )
    .await;
    c.nodes().wait_for(WAIT, |p| p.len() == 1).await.unwrap();
    c
}

#[tokio::test]
async fn half_open_peer_becomes_not_ready_after_the_liveness_deadline() {
    let net = MemNetwork::new();
    let a =
        start(mem_node(&net, "a").channel_server(CHANNEL, echo_handlers("a", Default::default())))
            .await;
    let c = mem_client(&net).await;
    let generation = c.nodes().peers()[0].generation;
    // Acked probes keep an idle connection ready across several deadlines.
    let idle_until = tokio::time::Instant::now() + Duration::from_millis(900);
    while tokio::time::Instant::now() < idle_until {
        assert_eq!(
            c.nodes().peers().len(),
            1,
            "an idle, healthy link stays ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    net.half_open("a", "c");
    let lost_at = tokio::time::Instant::now();
    c.nodes().wait_for(WAIT, |p| p.is_empty()).await.unwrap();
    let took = lost_at.elapsed();
    assert!(
        took >= Duration::from_millis(200),
        "not before the deadline: {took:?}"
    );
    a.nodes().wait_for(WAIT, |p| p.is_empty()).await.unwrap();
    // Heal the link: the client reconnects with a new handshake to the same lifecycle.
    net.clear_fault("a", "c");
    net.clear_fault("c", "a");
    let peers = c.nodes().wait_for(WAIT, |p| p.len() == 1).await.unwrap();
    assert_eq!(peers[0].generation, generation);
    assert_eq!(echo_by(&c).await, "a");
    stop([c, a]).await;
}

#[tokio::test]
async fn one_direction_blackhole_fails_requests_by_deadline_not_by_guessing() {
    let net = MemNetwork::new();
    let a =
        start(mem_node(&net, "a").channel_server(CHANNEL, echo_handlers("a", Default::default())))
            .await;
    let c = mem_client(&net).await;
    net.set_fault("a", "c", zlink_testkit::LinkFault::Drop);
    let opts = zlink::CallOptions::new().timeout(Duration::from_secs(5));
    let err = echo_client(&c)
        .echo(&Echo { text: "x".into() })
        .options(opts)
        .await
        .unwrap_err();
    // Replies and acks are lost: liveness closes the link and the request ends once.
    assert!(err.is(ErrorKind::Unavailable), "{err}");
    stop([c, a]).await;
}

#[tokio::test]
async fn killed_host_on_the_network_ends_its_requests_unavailable() {
    let net = MemNetwork::new();
    let count = Arc::new(AtomicUsize::new(0));
    let a = start(mem_node(&net, "a").channel_server(
        CHANNEL,
        counting("a", count.clone(), Duration::from_secs(30)),
    ))
    .await;
    let c = mem_client(&net).await;
    let call = {
        let c = c.clone();
        tokio::spawn(async move { echo_client(&c).echo(&Echo { text: "x".into() }).await })
    };
    wait_until(WAIT, "a executes", || async {
        count.load(Ordering::SeqCst) == 1
    })
    .await;
    net.kill("a");
    let err = call.await.unwrap().unwrap_err();
    assert!(err.is(ErrorKind::Unavailable), "{err}");
    c.shutdown().await;
    a.shutdown_with(zlink::ShutdownOptions::new().grace(Duration::ZERO))
        .await;
}

#[tokio::test]
async fn malformed_frames_are_protocol_errors_and_the_node_keeps_serving() {
    let a = server("a", 100).await;
    let c = client("c", &[&a]).await;
    // An unadmitted raw ZMTP peer sends garbage: it gets a reject, the node stays up.
    let mut raw = zeromq::DealerSocket::new();
    raw.connect(&a.endpoint()).await.unwrap();
    raw.send(zeromq::ZmqMessage::from(vec![0xFFu8, 0x00, 0x13]))
        .await
        .unwrap();
    let answer = tokio::time::timeout(WAIT, raw.recv())
        .await
        .unwrap()
        .unwrap();
    let head = answer.get(0).unwrap();
    assert_eq!(
        &head[..4],
        &[0x5A, 0x4D, zlink::wire::PROTOCOL_MAJOR, 3],
        "reject command"
    );
    // An admitted peer's request with a payload the handler cannot decode: ProtocolError.
    #[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
    #[message(name = "Echo", reply = Echoed)]
    struct NotAnEcho(u64);
    let err = c
        .channels()
        .request(CHANNEL, &NotAnEcho(7))
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::ProtocolError), "{err}");
    // Others are still served.
    assert_eq!(echo_by(&c).await, "a");
    stop([c, a]).await;
}

#[tokio::test]
async fn mesh_name_mismatch_is_rejected() {
    let a = server("a", 100).await;
    let other = Runtime::builder()
        .mesh_name("another-mesh")
        .rid("x")
        .listen("tcp://127.0.0.1:0")
        .channel_client(CHANNEL)
        .peer(PeerSpec::new(a.endpoint()))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let waited = other
        .nodes()
        .wait_for(Duration::from_millis(700), |p| !p.is_empty())
        .await;
    assert!(
        waited.is_err(),
        "a node of another mesh never becomes ready"
    );
    assert!(a.nodes().peers().is_empty());
    let err = echo_client(&other)
        .echo(&Echo { text: "x".into() })
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::NotFound), "{err}");
    stop([other, a]).await;
}

#[tokio::test]
async fn expected_rid_mismatch_is_refused() {
    let a = server("a", 100).await;
    let c = start(
        node("c")
            .channel_client(CHANNEL)
            .peer(PeerSpec::new(a.endpoint()).expect_rid("not-a")),
    )
    .await;
    assert!(c
        .nodes()
        .wait_for(Duration::from_millis(700), |p| !p.is_empty())
        .await
        .is_err());
    // Node-direct to the expected (known) RID waits for readiness, then Unavailable.
    let err = c
        .nodes()
        .request("not-a", &Echo { text: "x".into() })
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::Unavailable), "{err}");
    stop([c, a]).await;
}

#[tokio::test]
async fn shutdown_finishes_accepted_work_and_refuses_new_calls() {
    let count = Arc::new(AtomicUsize::new(0));
    let a = start(node("a").channel_server(
        CHANNEL,
        counting("a", count.clone(), Duration::from_millis(500)),
    ))
    .await;
    let c = client("c", &[&a]).await;
    let slow = {
        let c = c.clone();
        tokio::spawn(async move {
            echo_client(&c)
                .echo(&Echo {
                    text: "slow".into(),
                })
                .await
        })
    };
    wait_until(WAIT, "a accepted the request", || async {
        count.load(Ordering::SeqCst) == 1
    })
    .await;
    let shutting = a.shutdown();
    let meanwhile = async {
        wait_until(WAIT, "a stops admitting", || async { !a.is_running() }).await;
        let err = echo_client(&a)
            .echo(&Echo { text: "x".into() })
            .await
            .unwrap_err();
        assert!(err.is(ErrorKind::ShuttingDown), "{err}");
        assert_eq!(
            slow.await.unwrap().unwrap().text,
            "slow",
            "accepted work completes"
        );
    };
    tokio::join!(shutting, meanwhile);
    c.shutdown().await;
    let err = echo_client(&c)
        .note(&Note("late".into()))
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::ShuttingDown), "{err}");
}
