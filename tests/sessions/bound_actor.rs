//! Sessions bound to Actors on other nodes (seed 000 §3.1–3.2), over real TCP and a real
//! `redis-server`: the bind validates the Actor's owner once; relays and pushes then use
//! the stored route and never read the Location Store.

use std::time::Duration;

use serde_json::json;
use zlink::session::{CloseReason, StreamListener};
use zlink::ErrorKind;
use zlink_testkit::stream_client::{kind, StreamClient};
use zlink_testkit::TestCluster;
use zlink_tests::bound_sessions::*;

use crate::common::WAIT;

#[tokio::test]
async fn session_relay_and_actor_push_use_the_stored_binding_route_without_store_reads() {
    let (cluster, address) = cluster().await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    let logged_in = client
        .call_json(1, "login", json!({ "player": "ann" }), WAIT)
        .await
        .unwrap();
    assert_eq!(logged_in.kind, kind::RESPONSE, "{:?}", logged_in.error());
    assert_eq!(
        logged_in.value()["owner"],
        "n1",
        "the Actor lives on the other node"
    );
    let reads = cluster.store_reads(0);
    for n in 1..=20u64 {
        client.send_json("move", json!({ "n": n })).await.unwrap();
    }
    client.request_json(2, "where", json!(null)).await.unwrap();
    let (mut pushes, mut position) = (Vec::new(), None);
    while pushes.len() < 20 || position.is_none() {
        let packet = client.next(WAIT).await.expect("a push or the answer");
        match packet.kind {
            kind::SEND => {
                assert_eq!(packet.name, "moved");
                assert_eq!(packet.value()["by"], "n1");
                pushes.push(packet.value()["n"].as_u64().unwrap());
            }
            kind::RESPONSE => position = Some(packet.value()["moves"].clone()),
            other => panic!("unexpected packet kind {other}: {packet:?}"),
        }
    }
    let in_order: Vec<u64> = (1..=20).collect();
    assert_eq!(pushes, in_order, "every push, in order");
    assert_eq!(
        position.unwrap(),
        json!(in_order),
        "the request came after the 20 sends"
    );
    assert_eq!(
        cluster.store_reads(0),
        reads,
        "21 relays and 20 pushes, zero Location Store reads on the gateway"
    );
    // The counter does count: one direct call from the gateway reads the store.
    PlayerClient::new(cluster.node(0), "ann")
        .locate(&Where)
        .await
        .unwrap();
    assert!(cluster.store_reads(0) > reads);
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_relay_before_any_bind_is_refused_and_a_push_without_a_binding_is_invalid_operation() {
    let (cluster, address) = cluster().await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    let refused = client
        .call_json(1, "where", json!(null), WAIT)
        .await
        .unwrap();
    assert_eq!(
        refused.error().unwrap().0,
        ErrorKind::InvalidOperation.code()
    );
    // An Actor no session is bound to: its push fails, and the one-way handler's error
    // is what its caller's send records.
    cluster
        .node(0)
        .actors()
        .create("bob", Player::STABLE_TYPE)
        .await
        .unwrap();
    let bob = PlayerClient::new(cluster.node(0), "bob");
    let unbound = bob.shout(&Shout).await.unwrap_err();
    assert!(unbound.is(ErrorKind::InvalidOperation), "{unbound}");
    assert!(
        unbound.to_string().contains("bound to no session"),
        "{unbound}"
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_rebind_from_another_session_tells_the_first_which_closes_and_pushes_follow_the_new_one()
{
    let (cluster, address) = cluster().await;
    let mut first = StreamClient::tcp(&address).await.unwrap();
    first
        .call_json(1, "login", json!({ "player": "cy" }), WAIT)
        .await
        .unwrap();
    let mut second = StreamClient::tcp(&address).await.unwrap();
    let again = second
        .call_json(1, "login", json!({ "player": "cy" }), WAIT)
        .await
        .unwrap();
    assert_eq!(again.kind, kind::RESPONSE);
    // The first session hears it in its callback (command 51), then closes.
    let told = first.next(WAIT).await.expect("the replaced notice");
    assert_eq!(
        (told.name.as_str(), told.value()["player"].as_str()),
        ("replaced", Some("cy"))
    );
    let notice = first.closed_with(WAIT).await.expect("closed in time");
    assert_eq!(notice.map(|n| n.0), Some(CloseReason::ServerDrain as u8));
    // The second session's move is pushed to it.
    second.send_json("move", json!({ "n": 7 })).await.unwrap();
    let push = second.next(WAIT).await.unwrap();
    assert_eq!(
        (push.name.as_str(), push.value()["n"].as_u64()),
        ("moved", Some(7))
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn the_same_session_binding_again_is_idempotent_and_does_not_replace_itself() {
    let (cluster, address) = cluster().await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    for seq in 1..=3 {
        let logged_in = client
            .call_json(seq, "login", json!({ "player": "fay" }), WAIT)
            .await
            .unwrap();
        assert_eq!(logged_in.kind, kind::RESPONSE);
    }
    client.send_json("move", json!({ "n": 1 })).await.unwrap();
    let push = client.next(WAIT).await.unwrap();
    assert_eq!(push.name, "moved", "no replaced notice, no close: {push:?}");
    cluster.shutdown().await;
}

#[tokio::test]
async fn an_actor_on_the_gateway_itself_is_bound_relayed_and_pushes_without_the_mesh() {
    // One node serves both the sessions and the players.
    let cluster = TestCluster::on_tcp_with_redis(1, |_, node| {
        node.actor_type(Player::actor_type(|_| Player::default()).expect("an Actor type"))
            .stream_listener(
                StreamListener::new("clients")
                    .bind("tcp://127.0.0.1:0")
                    .session(Gateway::default),
            )
    })
    .await;
    let node = cluster.node(0);
    node.actors().ready(Player::STABLE_TYPE, 1).await.unwrap();
    let endpoint = node.stream_endpoint("clients").unwrap();
    let mut client = StreamClient::tcp(endpoint.trim_start_matches("tcp://"))
        .await
        .unwrap();
    let logged_in = client
        .call_json(1, "login", json!({ "player": "eve" }), WAIT)
        .await
        .unwrap();
    assert_eq!(logged_in.value()["owner"], "n0");
    for n in 1..=5u64 {
        client.send_json("move", json!({ "n": n })).await.unwrap();
    }
    client.request_json(2, "where", json!(null)).await.unwrap();
    let (mut pushes, mut position) = (Vec::new(), None);
    while pushes.len() < 5 || position.is_none() {
        let packet = client.next(WAIT).await.expect("a push or the answer");
        match packet.kind {
            kind::SEND => pushes.push(packet.value()["n"].as_u64().unwrap()),
            _ => position = Some(packet.value()["moves"].clone()),
        }
    }
    assert_eq!(position.unwrap(), json!([1, 2, 3, 4, 5]));
    assert_eq!(pushes, vec![1, 2, 3, 4, 5]);
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_closed_connection_reaches_the_actors_spot_once_per_binding() {
    let disconnects = Disconnects::default();
    let (cluster, address) = cluster_with(&disconnects).await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    client
        .call_json(1, "login", json!({ "player": "gus" }), WAIT)
        .await
        .unwrap();
    drop(client);
    zlink_testkit::wait_until(WAIT, "the Entry Spot heard the disconnect", || async {
        !disconnects.0.lock().unwrap().is_empty()
    })
    .await;
    // A later bind and close of another player is its own binding: heard once more.
    let mut again = StreamClient::tcp(&address).await.unwrap();
    again
        .call_json(1, "login", json!({ "player": "hal" }), WAIT)
        .await
        .unwrap();
    drop(again);
    zlink_testkit::wait_until(WAIT, "the second disconnect", || async {
        disconnects.0.lock().unwrap().len() == 2
    })
    .await;
    assert_eq!(
        *disconnects.0.lock().unwrap(),
        vec!["gus".to_string(), "hal".to_string()]
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn notify_disconnected_keeps_the_connection_and_the_close_after_it_is_not_told_twice() {
    let disconnects = Disconnects::default();
    let (cluster, address) = cluster_with(&disconnects).await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    client
        .call_json(1, "login", json!({ "player": "ivy" }), WAIT)
        .await
        .unwrap();
    client.send_json("logout", json!(null)).await.unwrap();
    zlink_testkit::wait_until(WAIT, "the logout reached the Spot", || async {
        disconnects.0.lock().unwrap().len() == 1
    })
    .await;
    // The connection is still open, and the session is bound to nothing now.
    let unbound = client
        .call_json(2, "where", json!(null), WAIT)
        .await
        .unwrap();
    assert_eq!(
        unbound.error().unwrap().0,
        ErrorKind::InvalidOperation.code()
    );
    drop(client);
    // Its close tells no one again: the binding ended already.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
    while tokio::time::Instant::now() < deadline {
        assert_eq!(disconnects.0.lock().unwrap().len(), 1, "told once");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cluster.shutdown().await;
}

/// Reference §7.5: a node that stops cleanly closes the sessions bound to its Actors
/// (on other gateways) with a reason, and releases the Actors: the ID reads Missing.
#[tokio::test]
async fn a_clean_shutdown_of_the_actors_node_closes_its_bound_sessions_with_a_reason() {
    let (cluster, address) = cluster().await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    client
        .call_json(1, "login", json!({ "player": "nia" }), WAIT)
        .await
        .unwrap();
    let outcome = cluster.node(1).shutdown().await;
    assert_eq!(outcome, zlink::ShutdownOutcome::Stopped);
    let notice = client.closed_with(WAIT).await.expect("closed in time");
    assert_eq!(notice.map(|n| n.0), Some(CloseReason::ServerDrain as u8));
    assert!(cluster
        .node(0)
        .actors()
        .find("nia")
        .await
        .unwrap()
        .is_none());
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_session_relay_never_changes_its_actor_a_dead_owner_fails_it_and_the_connection_stays() {
    let (mut cluster, address) = cluster().await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    client
        .call_json(1, "login", json!({ "player": "kim" }), WAIT)
        .await
        .unwrap();
    cluster.kill(1).await;
    // The relay fails with the owner's absence; no other owner is looked up for it.
    let failed = client
        .call_json(2, "where", json!(null), WAIT)
        .await
        .unwrap();
    assert_eq!(failed.error().unwrap().0, ErrorKind::Unavailable.code());
    // The client's connection is untouched: the session still answers.
    let again = client
        .call_json(3, "where", json!(null), WAIT)
        .await
        .unwrap();
    assert_eq!(again.kind, kind::ERROR);
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_binding_route_is_used_only_within_the_session_owners_lease_admission_and_an_outage_never_extends_it(
) {
    let (cluster, address) = cluster().await;
    let gateway = cluster.node(0);
    let mut client = StreamClient::tcp(&address).await.unwrap();
    let logged_in = client
        .call_json(1, "login", json!({ "player": "lea" }), WAIT)
        .await
        .unwrap();
    assert_eq!(logged_in.kind, kind::RESPONSE, "{:?}", logged_in.error());
    let lease = gateway.discovery().owner_lease().unwrap();
    let bound_under = lease.token.clone().unwrap();

    // The gateway loses the store: the stored route needs no read, so it still carries
    // relays, until the gateway's own lease stops admitting work.
    cluster.store_of(0).set_down(true);
    let served = client
        .call_json(2, "where", json!(null), WAIT)
        .await
        .unwrap();
    assert_eq!(served.kind, kind::RESPONSE, "{:?}", served.error());
    zlink_testkit::wait_until(WAIT, "the gateway's admission deadline passed", || async {
        !gateway.discovery().owner_lease().unwrap().admits_new_work()
    })
    .await;
    let refused = client
        .call_json(3, "where", json!(null), WAIT)
        .await
        .unwrap();
    assert_eq!(
        refused.error().map(|e| e.0),
        Some(ErrorKind::Unavailable.code()),
        "past the deadline the route carries nothing: {refused:?}"
    );

    // The outage outlives the lease at the store; back, the gateway claims a new lease,
    // and that never revives the route taken under the old one.
    zlink_testkit::wait_until(WAIT, "the gateway's lease expired at the store", || async {
        matches!(
            cluster.store().read_lease(&bound_under.owner).await,
            Ok(None)
        )
    })
    .await;
    cluster.store_of(0).set_down(false);
    zlink_testkit::wait_until(WAIT, "the gateway admits work again", || async {
        gateway.discovery().owner_lease().unwrap().admits_new_work()
    })
    .await;
    let renewed = gateway.discovery().owner_lease().unwrap().token.unwrap();
    assert_ne!(renewed.generation, bound_under.generation, "a new claim");
    let stale = client
        .call_json(4, "where", json!(null), WAIT)
        .await
        .unwrap();
    assert_eq!(
        stale.error().map(|e| e.0),
        Some(ErrorKind::Unavailable.code()),
        "{stale:?}"
    );
    // The connection stayed; binding again (under the new lease) carries relays again.
    let again = client
        .call_json(5, "login", json!({ "player": "lea" }), WAIT)
        .await
        .unwrap();
    assert_eq!(again.kind, kind::RESPONSE, "{:?}", again.error());
    let position = client
        .call_json(6, "where", json!(null), WAIT)
        .await
        .unwrap();
    assert_eq!(position.kind, kind::RESPONSE, "{:?}", position.error());
    cluster.shutdown().await;
}

/// Restarts and failures, "What is recovered": a session whose Actor's owner crashed
/// keeps its connection; once an operator reclaimed the Actor (after the dead owner's
/// lease expired), the same session logs in again and binds a new incarnation on a
/// surviving node, whose relays and pushes work as before.
#[tokio::test]
async fn a_session_whose_actor_was_reclaimed_after_a_crash_binds_a_new_incarnation() {
    let mut cluster = gateways_and_players(1, 2).await;
    let gateway = cluster.node(0).handle().clone();
    gateway
        .actors()
        .ready(Player::STABLE_TYPE, 2)
        .await
        .unwrap();
    let address = cluster.node(0).stream_endpoint("clients").expect("bound");
    let mut client = StreamClient::tcp(address.trim_start_matches("tcp://"))
        .await
        .unwrap();
    let logged_in = client
        .call_json(1, "login", json!({ "player": "lee" }), WAIT)
        .await
        .unwrap();
    let owner = logged_in.value()["owner"].as_str().unwrap().to_string();
    let (dead, survivor) = if owner == "n1" { (1, "n2") } else { (2, "n1") };
    client.send_json("move", json!({ "n": 1 })).await.unwrap();
    assert_eq!(client.next(WAIT).await.unwrap().value()["n"], 1);
    cluster.kill(dead).await;
    let failed = client
        .call_json(2, "where", json!(null), WAIT)
        .await
        .unwrap();
    assert_eq!(failed.error().unwrap().0, ErrorKind::Unavailable.code());
    let recovery = cluster.node(0).objects().unwrap();
    zlink_testkit::wait_until(
        Duration::from_secs(10),
        "the dead owner's lease expired and lee was reclaimed",
        || async {
            let report = recovery.reclaim_actor("lee").await.unwrap();
            !report.released.is_empty()
        },
    )
    .await;
    // The same connection, the same session: it binds anew.
    let again = client
        .call_json(3, "login", json!({ "player": "lee" }), WAIT)
        .await
        .unwrap();
    assert_eq!(again.kind, kind::RESPONSE, "{:?}", again.error());
    assert_eq!(again.value()["owner"], survivor);
    client.send_json("move", json!({ "n": 2 })).await.unwrap();
    let pushed = client.next(WAIT).await.unwrap();
    assert_eq!(
        (pushed.value()["n"].as_u64(), pushed.value()["by"].as_str()),
        (Some(2), Some(survivor)),
        "the new incarnation pushes to the session"
    );
    let position = client
        .call_json(4, "where", json!(null), WAIT)
        .await
        .unwrap();
    assert_eq!(
        position.value()["moves"],
        json!([2]),
        "a new incarnation: nothing of the dead one's state"
    );
    cluster.shutdown().await;
}
