//! Seed 002 §10: channel and connection, object routing and creation recovery, host
//! relocation and session failures, store failures.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zlink::TestFaults;

use tokio::sync::Semaphore;
use zlink::store::{MemoryRelocationStore, RelocationStore};
use zlink::{PeerSpec, Runtime};
use zlink_testkit::{wait_until, MemNetwork, RedisServer};
use zlink_tests::*;

const WAIT: Duration = Duration::from_secs(10);

/// A node on the in-memory network (for a half-open link), with 50 ms probes and a
/// 300 ms liveness deadline.
fn mem_node(net: &MemNetwork, host: &str) -> zlink::RuntimeBuilder {
    Runtime::builder()
        .mesh_name(MESH)
        .rid(host)
        .listen(format!("mem://{host}:1"))
        .transport(net.host(host))
        .test_liveness(Duration::from_millis(50), Duration::from_millis(300))
}

/// Servers a (weight 10000: it takes nearly every selection) and b (weight 1, ready all
/// along) on the in-memory network.
async fn weighted_servers(net: &MemNetwork) -> (Runtime, Runtime) {
    let server = |rid: &str, weight| {
        start(mem_node(net, rid).channel_server_weighted(
            CHANNEL,
            echo_handlers(rid, Default::default()),
            weight,
        ))
    };
    (server("a", 10_000).await, server("b", 1).await)
}

/// Client "c" of the servers `rids` on the in-memory network, ready with all of them.
async fn client_of(net: &MemNetwork, rids: &[&str]) -> Runtime {
    let mut builder = mem_node(net, "c").channel_client(CHANNEL);
    for rid in rids {
        builder = builder.peer(PeerSpec::new(format!("mem://{rid}:1")));
    }
    let c = start(builder).await;
    c.nodes()
        .wait_for(WAIT, |p| p.len() == rids.len())
        .await
        .unwrap();
    c
}

/// Seed 002 §10, channel and connection, item 4.
#[tokio::test]
async fn one_peers_liveness_failure_leaves_the_other_ready_peers_and_the_host_ready() {
    // "A liveness failure of one peer does not turn other ready peers or the host state
    // into Error."
    let net = MemNetwork::new();
    let mut servers = Vec::new();
    for rid in ["a", "b"] {
        servers.push(
            start(
                mem_node(&net, rid).channel_server(CHANNEL, echo_handlers(rid, Default::default())),
            )
            .await,
        );
    }
    let c = client_of(&net, &["a", "b"]).await;
    let peers = c.nodes().peers();
    let b_generation = peers.iter().find(|p| p.rid == "b").unwrap().generation;
    // a stops answering c (its link half-open): only a is dropped, at its deadline.
    net.half_open("a", "c");
    let left = c.nodes().wait_for(WAIT, |p| p.len() == 1).await.unwrap();
    assert_eq!(left[0].rid, "b", "the other peer stays ready");
    assert_eq!(left[0].generation, b_generation, "its connection untouched");
    assert!(c.status().running, "the host stays running");
    for _ in 0..4 {
        assert_eq!(echo_by(&c).await, "b", "calls go on to the ready peer");
    }
    let [a, b] = <[Runtime; 2]>::try_from(servers).ok().unwrap();
    stop([c, b, a]).await;
}

/// Seed 002 §10, channel and connection, item 3.
#[tokio::test]
async fn an_accepted_request_whose_connection_is_lost_is_not_resubmitted_to_another_ready_peer() {
    // "When transport acceptance is unclear, or once the operation has already been
    // accepted, it is not automatically resubmitted to another peer."
    let net = MemNetwork::new();
    // a takes (nearly) every selection; b is ready all along.
    let (a, b) = weighted_servers(&net).await;
    let c = client_of(&net, &["a", "b"]).await;
    // From now on nothing of a reaches c, while c's requests still reach a: a accepts
    // the request and runs it, its reply is lost and, at the liveness deadline, the
    // connection too.
    net.set_fault("a", "c", zlink_testkit::LinkFault::Drop);
    let slow = tokio::spawn({
        let c = c.clone();
        async move { echo_client(&c).slow(&Slow { millis: 20 }).await }
    });
    let outcome = slow.await.unwrap();
    let error = outcome.expect_err("not answered by anyone else");
    assert!(error.is(zlink::ErrorKind::Unavailable), "{error}");
    assert_eq!(
        c.nodes()
            .peers()
            .iter()
            .map(|p| p.rid.clone())
            .collect::<Vec<_>>(),
        ["b"],
        "b was ready all along"
    );
    assert_eq!(echo_by(&c).await, "b", "only the next call goes to b");
    stop([c, b, a]).await;
}

/// Seed 002 §10, channel and connection, item 5.
#[tokio::test]
async fn a_reconnect_handshakes_again_and_no_reply_of_the_old_connection_completes_a_call() {
    // "Reconnect performs the handshake and identity verification again and does not
    // reuse the previous connection's reply route, Session binding or ready state."
    let net = MemNetwork::new();
    let a =
        start(mem_node(&net, "a").channel_server(CHANNEL, echo_handlers("a", Default::default())))
            .await;
    let c = client_of(&net, &["a"]).await;
    let first = c.nodes().peers()[0].clone();
    // Everything from a to c now arrives 600 ms late: the connection misses its 300 ms
    // liveness deadline, and the request on it loses its reply with it.
    net.set_fault(
        "a",
        "c",
        zlink_testkit::LinkFault::Delay(Duration::from_millis(600)),
    );
    let on_old = echo_client(&c).slow(&Slow { millis: 1 }).await;
    let error = on_old.expect_err("the old connection's reply completes nothing");
    assert!(error.is(zlink::ErrorKind::Unavailable), "{error}");
    net.clear_fault("a", "c");
    // A new connection, admitted afresh: the late reply still in flight on the old one
    // never answers a call made on the new one.
    let again = c.nodes().wait_for(WAIT, |p| p.len() == 1).await.unwrap()[0].clone();
    assert_eq!(
        again.generation, first.generation,
        "the same lifecycle of a, admitted again"
    );
    for n in 0..5 {
        let reply = echo_client(&c)
            .echo(&zlink_tests::Echo {
                text: format!("fresh {n}"),
            })
            .await
            .unwrap();
        assert_eq!(
            reply.text,
            format!("fresh {n}"),
            "each call gets its own reply"
        );
    }
    stop([c, a]).await;
}

/// Seed 002 §10, channel and connection, item 1.
#[tokio::test]
async fn select_one_picks_another_ready_server_when_the_chosen_one_never_accepted_the_call() {
    // "Channel select-one selects another eligible server only until a target accepts
    // the operation."
    let net = MemNetwork::new();
    let (a, b) = weighted_servers(&net).await;
    // c probes at the default pace, so only the call itself finds out about a.
    let c = start(
        Runtime::builder()
            .mesh_name(MESH)
            .rid("c")
            .listen("mem://c:1")
            .transport(net.host("c"))
            .channel_client(CHANNEL)
            .peer(PeerSpec::new("mem://a:1"))
            .peer(PeerSpec::new("mem://b:1")),
    )
    .await;
    c.nodes().wait_for(WAIT, |p| p.len() == 2).await.unwrap();
    assert_eq!(echo_by(&c).await, "a", "a takes the selections");
    // c's sends to a now fail while a still looks ready: the call was never accepted, so
    // it goes to b, and the failed link is let go.
    net.set_fault("c", "a", zlink_testkit::LinkFault::RefuseSends);
    assert_eq!(
        echo_by(&c).await,
        "b",
        "selected again before any acceptance"
    );
    let rids: Vec<String> = c.nodes().peers().into_iter().map(|p| p.rid).collect();
    assert_eq!(rids, ["b"]);
    stop([c, b, a]).await;
}

/// Seed 002 §10, channel and connection, item 2.
#[tokio::test]
async fn node_and_actor_direct_calls_never_go_to_another_target_when_theirs_is_gone() {
    // "Node direct, Actor·Spot direct and Session binding operations do not change the
    // specified logical identity to another target."
    use zlink_tests::relocating::{mesh_custom, Add, CounterClient};
    // Two servers of the counter type that also answer node-direct echoes, and a client.
    let m = mesh_custom(&["a", "b"], 0, |rid, _, builder| {
        builder.node_handlers(echo_handlers(rid, Default::default()))
    })
    .await;
    let client = &m.nodes[2];
    client.actors().create("p", "counter").await.unwrap();
    let owner = client.actors().find("p").await.unwrap().unwrap().rid;
    let echo = |rid: &'static str| {
        client
            .nodes()
            .request(rid, &zlink_tests::Echo { text: "x".into() })
    };
    assert_eq!(echo("a").await.unwrap().by, "a");
    let (dead, alive): (&Runtime, &Runtime) = if owner == "a" {
        (&m.nodes[0], &m.nodes[1])
    } else {
        (&m.nodes[1], &m.nodes[0])
    };
    let dead_rid: &'static str = if owner == "a" { "a" } else { "b" };
    dead.crash().await;
    // Node direct to the dead node fails; the live node, which answers the same packet,
    // is not asked instead.
    let to_dead = echo(dead_rid).await.unwrap_err();
    assert!(
        to_dead.is(zlink::ErrorKind::Unavailable) || to_dead.is(zlink::ErrorKind::NotFound),
        "{to_dead}"
    );
    // Actor direct to an Actor whose owner died is Unavailable; it does not run on the
    // live node, which serves the type too.
    let lost = CounterClient::new(client, "p")
        .add(Add(1))
        .await
        .unwrap_err();
    assert!(lost.is(zlink::ErrorKind::Unavailable), "{lost}");
    assert_eq!(
        client.actors().find("p").await.unwrap().map(|p| p.rid),
        Some(owner),
        "still the dead owner's"
    );
    assert_eq!(
        alive.status().actors_owned,
        0,
        "nothing ran or was made on {}",
        alive.rid()
    );
    let mut nodes = m.nodes;
    nodes.retain(|rt| rt.rid() != dead_rid);
    stop(nodes).await;
}

/// Seed 002 §10, store failures, item 16.
#[tokio::test]
async fn while_an_owner_change_result_is_unclear_neither_source_admission_nor_target_dispatch_opens(
) {
    // "When a Store result is unclear, source admission and target dispatch are not opened
    // until the authority has been re-read."
    use zlink_tests::relocating::{mesh_with_faulty_store, Add, CounterClient};
    let (m, b_store) = mesh_with_faulty_store(&["a", "b"], "b").await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    client.actors().create("u16", "counter").await.unwrap();
    let counter = CounterClient::new(client, "u16");
    assert_eq!(counter.add(Add(1)).await.unwrap().by, "a");
    // b's owner change lands in the store, b hears OutcomeUnknown, and b cannot read the
    // authority back until the test allows it.
    b_store.lose_next_apply_and_hold_its_reread();
    let moving = tokio::spawn({
        let a = a.handle().clone();
        async move { a.actors().relocate("u16", Some("b")).await }
    });
    let stored_owner = || async {
        let record = m
            .store
            .read(&zlink::store::RecordKey::new("zla1:a:3:u16", "authority"))
            .await
            .unwrap();
        let zlink::store::ReadOutcome::Found { value, .. } = record else {
            return None;
        };
        #[derive(serde::Deserialize)]
        struct Stored {
            route: Route,
        }
        #[derive(serde::Deserialize)]
        struct Route {
            rid: String,
        }
        zlink::cbor_decode::<Stored>(&value)
            .ok()
            .map(|s| s.route.rid)
    };
    wait_until(WAIT, "the change landed in the store", || async {
        stored_owner().await.as_deref() == Some("b")
    })
    .await;
    let handled = m.seen.handled_by.lock().unwrap().len();
    let call = tokio::spawn({
        let client = client.handle().clone();
        async move { CounterClient::new(&client, "u16").add(Add(1)).await }
    });
    // The store already names b, but b does not know: for as long as the re-read is held,
    // the call is neither run by b nor taken back by a.
    tokio::time::sleep(Duration::from_millis(800)).await;
    if call.is_finished() {
        panic!(
            "the call ended while the result was unclear: {:?}",
            call.await.unwrap()
        );
    }
    assert!(!moving.is_finished(), "the move waits for the re-read");
    assert_eq!(
        m.seen.handled_by.lock().unwrap().len(),
        handled,
        "no handler ran"
    );
    assert_eq!(b_store.take_lost_batches().len(), 1);
    // The re-read: b learns its change committed, and only then runs the call, once.
    b_store.set_reads_down(false);
    assert_eq!(moving.await.unwrap().unwrap().rid, "b");
    let ran = call.await.unwrap().unwrap();
    assert_eq!((ran.total, ran.by.as_str()), (2, "b"));
    assert_eq!(
        m.seen.handled_by.lock().unwrap()[handled..],
        ["b".to_string()],
        "run exactly once, by the new owner"
    );
    stop(m.nodes).await;
}

/// Seed 002 §10, object routing and creation recovery, item 9.
#[tokio::test]
async fn a_re_created_actor_never_takes_the_old_binding_the_application_binds_again() {
    // "Even if an Actor is removed and re-created with the same ActorId, the previous
    // Session binding is not used again."
    use serde_json::json;
    use zlink_testkit::stream_client::{kind, StreamClient};
    use zlink_tests::bound_sessions::{cluster, Player};
    let (cluster, address) = cluster().await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    client
        .call_json(1, "login", json!({ "player": "dee" }), WAIT)
        .await
        .unwrap();
    let gateway = cluster.node(0);
    let old = gateway
        .actors()
        .find("dee")
        .await
        .unwrap()
        .expect("dee runs");
    assert!(gateway.actors().destroy(&old).await.unwrap());
    let new = gateway
        .actors()
        .create("dee", Player::STABLE_TYPE)
        .await
        .unwrap();
    assert!(new.generation > old.generation);
    // The old binding names the old incarnation: the new one never takes its relays.
    let stale = client
        .call_json(2, "where", json!(null), WAIT)
        .await
        .unwrap();
    assert_eq!(stale.kind, kind::ERROR);
    assert_eq!(
        stale.error().unwrap().0,
        zlink::ErrorKind::InvalidOperation.code(),
        "the old binding is refused, not re-addressed"
    );
    // Logging in again binds the new incarnation, and relays reach it.
    client
        .call_json(3, "login", json!({ "player": "dee" }), WAIT)
        .await
        .unwrap();
    let position = client
        .call_json(4, "where", json!(null), WAIT)
        .await
        .unwrap();
    assert_eq!(position.kind, kind::RESPONSE, "{:?}", position.error());
    assert_eq!(position.value()["moves"], json!([]));
    cluster.shutdown().await;
}

/// Seed 002 §10, host relocation and Session failures, item 15.
#[tokio::test]
async fn a_dead_session_owners_session_and_binding_are_restored_in_no_other_gateway() {
    // "After a Session owner process terminates, the Session and binding are not restored
    // in another process."
    use serde_json::json;
    use zlink::ErrorKind;
    use zlink_testkit::stream_client::{kind, StreamClient};
    use zlink_tests::bound_sessions::{Player, PlayerClient, Shout};
    // Two gateways (n0, n1) serving the same sessions, and the players on n2.
    let mut cluster = zlink_tests::bound_sessions::gateways_and_players(2, 1).await;
    for gateway in [0, 1] {
        cluster
            .node(gateway)
            .actors()
            .ready(Player::STABLE_TYPE, 1)
            .await
            .expect("n2 takes players");
    }
    let address = |i: usize| {
        let endpoint = cluster.node(i).stream_endpoint("clients").expect("bound");
        endpoint.trim_start_matches("tcp://").to_string()
    };
    let (first, second) = (address(0), address(1));
    let mut client = StreamClient::tcp(&first).await.unwrap();
    let bound = client
        .call_json(1, "login", json!({ "player": "zed" }), WAIT)
        .await
        .unwrap();
    assert_eq!(bound.value()["owner"], "n2");
    cluster.kill(0).await;
    assert!(
        client.closed_with(WAIT).await.is_ok(),
        "the session ended with its node"
    );
    // The client comes back through the other gateway: a new session with no binding,
    // nothing of the old one.
    let mut again = StreamClient::tcp(&second).await.unwrap();
    let unbound = again
        .call_json(1, "where", json!(null), WAIT)
        .await
        .unwrap();
    assert_eq!(unbound.kind, kind::ERROR);
    assert_eq!(
        unbound.error().unwrap().0,
        ErrorKind::InvalidOperation.code(),
        "the session on n1 has no binding"
    );
    // The Actor lives on and its push finds no session anywhere: it fails, and nothing
    // reaches the client on n1.
    let shout = PlayerClient::new(cluster.node(2), "zed")
        .shout(&Shout)
        .await
        .unwrap_err();
    assert!(
        [ErrorKind::Unavailable, ErrorKind::InvalidOperation]
            .iter()
            .any(|k| shout.is(*k)),
        "{shout}"
    );
    assert!(
        again
            .next(std::time::Duration::from_millis(300))
            .await
            .is_err(),
        "no push was re-routed to the new session"
    );
    // Only an explicit new bind binds again.
    let rebound = again
        .call_json(2, "login", json!({ "player": "zed" }), WAIT)
        .await
        .unwrap();
    assert_eq!(rebound.kind, kind::RESPONSE, "{:?}", rebound.error());
    let position = again
        .call_json(3, "where", json!(null), WAIT)
        .await
        .unwrap();
    assert_eq!(position.kind, kind::RESPONSE, "{:?}", position.error());
    cluster.shutdown().await;
}

/// Seed 002 §10, host relocation and Session failures, item 13.
#[tokio::test]
async fn an_explicit_failure_before_relay_ready_keeps_the_source_owner_queue_and_admission() {
    // "Only an explicit failure before the relay-ready reply has become accepted keeps the
    // source; a failure after that does not revert to the source, regardless of the
    // cutover submit result."
    use zlink::ErrorKind;
    use zlink_tests::relocating::*;
    // b takes one counter: a second is refused at the restore, before relay-ready.
    let m = mesh_limited(&["a", "b"], None, 1).await;
    let (a, b, client) = (&m.nodes[0], &m.nodes[1], &m.nodes[2]);
    client.actors().create("filler", "counter").await.unwrap();
    a.actors().relocate("filler", Some("b")).await.unwrap();
    assert_eq!(b.status().actors_owned, 1);
    let created = client.actors().create("f1", "counter").await.unwrap();
    let counter = CounterClient::new(client, "f1");
    counter.add(Add(3)).await.unwrap();
    let holding = tokio::spawn({
        let counter = CounterClient::new(client, "f1");
        async move { counter.hold(Hold(200)).await }
    });
    tokio::time::sleep(Duration::from_millis(30)).await;
    for n in 0..10 {
        counter.log(Log(n)).await.unwrap();
    }
    let relocating = tokio::spawn({
        let a = a.handle().clone();
        async move { a.actors().relocate("f1", Some("b")).await }
    });
    // Sent while the move is under way: held, then given back in order.
    tokio::time::sleep(Duration::from_millis(60)).await;
    for n in 10..20 {
        counter.log(Log(n)).await.unwrap();
    }
    let err = relocating.await.unwrap().unwrap_err();
    assert!(err.is(ErrorKind::CapacityExceeded), "{err}");
    holding.await.unwrap().unwrap();
    let history = counter.show(&Show).await.unwrap();
    assert_eq!(
        history.log,
        (0..20).collect::<Vec<_>>(),
        "nothing lost or reordered"
    );
    assert_eq!(history.by, "a");
    assert_eq!(
        counter.add(Add(1)).await.unwrap().total,
        4,
        "admission is open again"
    );
    // No other target was tried, and the authority never changed.
    assert_eq!(client.actors().find("f1").await.unwrap(), Some(created));
    stop(m.nodes).await;
}

/// Seed 002 §10, host relocation and Session failures, item 14.
#[tokio::test]
async fn a_target_that_dies_before_its_commit_is_not_replaced_and_the_move_is_not_resumed() {
    // "After a source or target process terminates, no other runtime takes over the
    // relocation or automatically selects another target."
    use zlink::ErrorKind;
    use zlink_testkit::wait_until;
    use zlink_tests::relocating::*;
    // No cutover: b would commit on its fallback, 1000 ms after relay-ready; it dies first.
    let m = mesh_custom(&["a", "b", "c"], 0, |rid, _, builder| {
        if rid == "a" {
            builder.test_drop_relocation_cutover()
        } else {
            builder
        }
    })
    .await;
    let (a, b, client) = (&m.nodes[0], &m.nodes[1], &m.nodes[3]);
    let created = client.actors().create("f6", "counter").await.unwrap();
    let counter = CounterClient::new(client, "f6");
    counter.add(Add(1)).await.unwrap();
    let moving = tokio::spawn({
        let a = a.handle().clone();
        async move { a.actors().relocate("f6", Some("b")).await }
    });
    wait_until(WAIT, "b holds the arriving Actor", || async {
        b.status().actors_owned == 1
    })
    .await;
    b.crash().await;
    let err = moving.await.unwrap().unwrap_err();
    assert!(err.is(ErrorKind::Unavailable), "{err}");
    // Past relay-ready there is no way back to a, and c is never chosen.
    assert_eq!(
        client.actors().find("f6").await.unwrap(),
        Some(created.clone())
    );
    let err = counter.add(Add(1)).await.unwrap_err();
    assert!(err.is(ErrorKind::Unavailable), "{err}");
    assert_eq!(
        (a.status().actors_owned, m.nodes[2].status().actors_owned),
        (0, 0)
    );
    // b comes back as a new lifecycle: the move is not resumed there either.
    let b2 = start(
        discovered_node("b", &m.store, quick_lease())
            .placement_weight(0)
            .actor_type(counter_type("b", &m.seen)),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(b2.status().actors_owned, 0);
    assert_eq!(client.actors().find("f6").await.unwrap(), Some(created));
    let mut nodes = m.nodes;
    nodes.push(b2);
    stop(nodes).await;
}

/// Seed 002 §10, object routing and creation recovery, item 10.
#[tokio::test]
async fn a_ready_instance_spot_whose_owner_died_is_unavailable_to_intent_calls_and_never_activated_again(
) {
    // "An Instance Spot starts cold activation only when it is Missing. A Ready owner
    // process termination or an owner lease expiry is not turned into Missing or recovered
    // through cold activation."
    use zlink_tests::instance_matches::*;
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let built = Arc::new(AtomicUsize::new(0));
    let a = faulty_match_node("a", &store, &built, |b| b).await;
    MatchClient::instance(&a, "m")
        .score(&Score { by: "a".into() })
        .await
        .unwrap();
    let b = faulty_match_node("b", &store, &built, |b| b).await;
    wait_until(WAIT, "b sees a", || async { peer_rids(&b) == ["a"] }).await;
    let lease = a.discovery().owner_lease().unwrap().token.unwrap();
    a.crash().await;
    // Dead owner, and later a lease gone too: Unavailable, never a new activation.
    unavailable_before_and_after_lease_expiry(&b, &store, &lease).await;
    assert_eq!(
        built.load(Ordering::SeqCst),
        1,
        "no second incarnation anywhere"
    );
    assert_eq!(
        b.spots().find("m").await.unwrap().map(|s| s.rid),
        Some("a".to_string()),
        "the authority stays the dead owner's"
    );
    b.shutdown().await;
}

/// Seed 002 §10, object routing and creation recovery, item 11.
#[tokio::test]
async fn a_recovery_pointer_left_in_a_ready_authority_never_selects_another_target_after_its_owner_died(
) {
    // "Even if an activation recovery pointer, which points to the recovery root and replay
    // cursor of a cold activation, remains in the Ready authority, it is used only to
    // resume an incomplete operation of the initial cold activation on the same target
    // node·lifecycle designated by the authority. It is not used as grounds for selecting
    // another target after a failure of a steady Ready owner."
    use zlink_tests::instance_matches::*;
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let roots = Arc::new(MemoryRelocationStore::new());
    let gate = Arc::new(Semaphore::new(PERMITS as usize));
    let (built_b, built_c) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let a = mesh_node("a", &store, None).await;
    let b = gated_match_node("b", &store, &roots, &gate, &built_b).await;
    wait_until(WAIT, "a sees b serving matches", || async {
        a.spots().ready_nodes("match").unwrap_or_default() == ["b"]
    })
    .await;
    // b activates m; its first handler is held, so the Ready authority keeps the pointer.
    let permits = gate.acquire_many(PERMITS).await.unwrap();
    let first = tokio::spawn({
        let a = a.clone();
        async move {
            MatchClient::instance(&a, "m")
                .score(&Score { by: "first".into() })
                .await
        }
    });
    wait_until(WAIT, "m is Ready on b with its pointer", || async {
        a.spots().find("m").await.unwrap().is_some()
            && recovery_pointer(&store, "m").await.is_some()
    })
    .await;
    // Another serving node appears, then b dies with the pointer still in its authority.
    let c = gated_match_node("c", &store, &roots, &Arc::new(Semaphore::new(8)), &built_c).await;
    wait_until(WAIT, "a sees c serving matches", || async {
        a.spots()
            .ready_nodes("match")
            .unwrap_or_default()
            .contains(&"c".to_string())
    })
    .await;
    let lease = b.discovery().owner_lease().unwrap().token.unwrap();
    b.crash().await;
    drop(permits);
    assert!(
        first.await.unwrap().is_err(),
        "the held first call has no answer"
    );
    unavailable_before_and_after_lease_expiry(&a, &store, &lease).await;
    assert_eq!(built_c.load(Ordering::SeqCst), 0, "c never activated m");
    assert_eq!(
        a.spots().find("m").await.unwrap().map(|s| s.rid),
        Some("b".into())
    );
    assert!(
        recovery_pointer(&store, "m").await.is_some(),
        "the pointer is left alone"
    );
    stop([c, a]).await;
}

/// Seed 002 §10, object routing and creation recovery, item 12.
#[tokio::test]
async fn activation_recovery_is_never_used_for_actors_user_spots_ready_instance_spots_or_relocation(
) {
    // "Instance Spot cold activation recovery is not used for Actors, User Spots, Instance
    // Spots that are already Ready, or host relocation."
    use zlink_tests::instance_matches::*;
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let roots = Arc::new(MemoryRelocationStore::new());
    let node = |rid: &'static str| {
        let (store, roots) = (store.clone(), roots.clone());
        async move {
            let relocation: Arc<dyn RelocationStore> = roots;
            start(
                discovered_node(rid, &store, quick_lease())
                    .relocation_store(relocation)
                    .spot_type(Heat::spot_type(|_| Heat).unwrap())
                    .spot_type(Lounge::spot_type(|_| Lounge).unwrap())
                    .actor_type(Pawn::actor_type(|_| Pawn).unwrap()),
            )
            .await
        }
    };
    let (a, b) = (node("a").await, node("b").await);
    wait_until(WAIT, "a and b see each other", || async {
        peer_rids(&a) == ["b"] && peer_rids(&b) == ["a"]
    })
    .await;
    // A User Spot and an Actor: created without a pointer or a kept message.
    a.spots()
        .get_or_create("l", "lounge", bytes::Bytes::new())
        .await
        .unwrap();
    a.actors().get_or_create("p", "pawn").await.unwrap();
    assert_eq!(recovery_pointer(&store, "l").await, None);
    assert!(roots.is_empty(), "nothing kept for a User Spot or an Actor");
    // An Instance Spot: the pointer goes after its first handler...
    HeatClient::instance(&a, "h")
        .score(&Score { by: "first".into() })
        .await
        .unwrap();
    wait_until(WAIT, "the first activation's pointer went", || async {
        recovery_pointer(&store, "h").await.is_none() && roots.is_empty()
    })
    .await;
    let before = a.spots().find("h").await.unwrap().unwrap();
    // ...and a Ready one takes intent calls with none written again.
    for rt in [&a, &b] {
        HeatClient::instance(rt, "h")
            .score(&Score { by: "ready".into() })
            .await
            .unwrap();
        assert_eq!(recovery_pointer(&store, "h").await, None);
        assert!(roots.is_empty());
    }
    // A move is no activation: same incarnation, no pointer, nothing kept.
    let to = if before.rid == "a" { "b" } else { "a" };
    let owner = if before.rid == "a" { &a } else { &b };
    let moved = owner.spots().relocate("h", Some(to)).await.unwrap();
    assert_eq!(moved.generation, before.generation);
    assert_eq!(recovery_pointer(&store, "h").await, None);
    assert!(roots.is_empty(), "a move keeps no activating message");
    stop([b, a]).await;
}

/// Seed 002 §10, object routing and creation recovery, item 6.
#[tokio::test]
async fn creation_continues_one_id_and_generation_and_exactly_one_factory_runs() {
    // "Creation recovery continues only the same object ID and generation, and only one
    // target runs the factory."
    use std::sync::atomic::Ordering;
    use zlink::object::ActorCreation;
    use zlink_tests::relocating::{mesh_with_faulty_store, Add, CounterClient};
    // The node placement puts new counters on (a) loses the answer of its next change.
    let (m, faulty) = mesh_with_faulty_store(&["a", "b"], "a").await;
    let creator = &m.nodes[2];
    // A lost answer in the middle of a creation: the creation is read back and goes on
    // with the same ID and generation; its factory runs once.
    faulty.lose_result_of_next_apply(1);
    let created = creator.actors().create("r6", "counter").await.unwrap();
    assert_eq!(created.rid, "a");
    assert_eq!(
        faulty.take_lost_batches().len(),
        1,
        "the fault hit a creation write"
    );
    assert_eq!(m.seen.factories.load(Ordering::SeqCst), 1);
    let counted = CounterClient::new(creator, "r6").add(Add(1)).await.unwrap();
    assert_eq!(
        counted.generation, created.generation,
        "the same incarnation runs"
    );
    // Twelve racing creations of another ID from three nodes: one is Created, every one
    // names the same generation, one factory runs.
    let mut racing = Vec::new();
    for n in 0..12 {
        let node = [&m.nodes[0], &m.nodes[1], &m.nodes[2]][n % 3]
            .handle()
            .clone();
        racing.push(tokio::spawn(async move {
            node.actors().get_or_create("r6b", "counter").await
        }));
    }
    let mut generations = std::collections::BTreeSet::new();
    let mut made = 0;
    for race in racing {
        match race.await.unwrap().unwrap() {
            ActorCreation::Created(actor) => {
                made += 1;
                generations.insert(actor.generation);
            }
            ActorCreation::Existing(actor) => {
                generations.insert(actor.generation);
            }
        }
    }
    assert_eq!(
        (made, generations.len()),
        (1, 1),
        "one creation, one generation"
    );
    assert_eq!(
        m.seen.factories.load(Ordering::SeqCst),
        2,
        "one factory per ID"
    );
    stop(m.nodes).await;
}

/// Seed 002 §10, object routing and creation recovery, item 7.
#[tokio::test]
async fn a_direct_message_reaches_the_current_ready_object_whatever_generation_the_caller_resolved()
{
    // "Actor·Spot direct messages target the current Ready object of the logical ID, and
    // do not refuse to run the application handler merely because of an ObjectGeneration
    // mismatch."
    use zlink_tests::relocating::{mesh, Add, CounterClient};
    let m = mesh(&["a", "b"], None).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    let first = client.actors().create("g7", "counter").await.unwrap();
    let counter = CounterClient::new(client, "g7");
    assert_eq!(
        counter.add(Add(1)).await.unwrap().generation,
        first.generation
    );
    // Destroyed and created again on the same owner: the client still holds the route it
    // resolved for the first generation.
    assert!(a.actors().destroy(&first).await.unwrap());
    let second = a.actors().create("g7", "counter").await.unwrap();
    assert!(second.generation > first.generation);
    let reads = client
        .status()
        .store_operations
        .map_or(0, |s| s.reads.record.calls);
    let reached = counter.add(Add(5)).await.unwrap();
    assert_eq!(
        (reached.generation, reached.total),
        (second.generation, 5),
        "the new incarnation took the message"
    );
    assert_eq!(
        client
            .status()
            .store_operations
            .map_or(0, |s| s.reads.record.calls),
        reads,
        "on the route cached for the first generation, with no new lookup"
    );
    stop(m.nodes).await;
}

/// Seed 002 §10, object routing and creation recovery, item 8.
#[tokio::test]
async fn destroy_and_membership_changes_act_only_on_the_incarnation_they_name() {
    // "Destroy·Close, membership, relocation and creation recovery check that the
    // ObjectGeneration is the same."
    use zlink::object::{is_entry_spot_id, Execution};
    use zlink::ErrorKind;
    use zlink_tests::membership_rooms::*;
    let redis = RedisServer::start().expect("redis-server");
    let log = Log::default();
    let (a, _) = node_with(&redis, Execution::SpotWide, &log).await;
    a.spots().get_or_create("r8", "room", "").await.unwrap();
    // q, a member of the SpotWide room, holds the room's gate with a long turn.
    a.actors().create("q8", "player").await.unwrap();
    let q = PlayerClient::new(&a, "q8");
    q.enter(&Enter {
        spot: "r8".into(),
        request: "hi".into(),
    })
    .await
    .unwrap();
    let holding = tokio::spawn({
        let q = PlayerClient::new(&a, "q8");
        async move { q.pause(Pause(1500)).await }
    });
    // p's first incarnation asks to join; the room cannot answer while q holds its gate.
    let first = a.actors().create("p8", "player").await.unwrap();
    PlayerClient::new(&a, "p8")
        .enter(&Enter {
            spot: "r8".into(),
            request: "hi".into(),
        })
        .await
        .unwrap();
    // Meanwhile p is destroyed and made again: a new incarnation, in its Entry Spot.
    assert!(a.actors().destroy(&first).await.unwrap());
    let second = a.actors().create("p8", "player").await.unwrap();
    assert!(second.generation > first.generation);
    // Destroy names its incarnation: the old reference destroys nothing now.
    let stale = a.actors().destroy(&first).await.unwrap_err();
    assert!(stale.is(ErrorKind::InvalidOperation), "{stale}");
    holding.await.unwrap().unwrap();
    // The room decides the first incarnation's Join once its gate opens; the membership
    // change names that incarnation, so it fails and moves nothing of the second.
    wait_until(WAIT, "the old Join ended", || async {
        log.lock()
            .unwrap()
            .iter()
            .any(|l| l.starts_with("p8 failed"))
    })
    .await;
    let lines = log.lock().unwrap().clone();
    assert!(
        lines.contains(&"join p8".to_string()),
        "the room was asked: {lines:?}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l == "joined p8" || l.starts_with("p8 accepted")),
        "no member was added for either incarnation: {lines:?}"
    );
    let spot = spot_of(&a, "p8").await.expect("p8 has a Spot");
    assert!(
        is_entry_spot_id(&spot),
        "the new incarnation stayed put: {spot}"
    );
    stop([a]).await;
}
