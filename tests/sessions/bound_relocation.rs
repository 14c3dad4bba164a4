//! A bound Actor moves live while its client stays connected (seed 000 §3.3): the seal
//! before the capture (42/43), the target's one-way route (44) once it dispatches, the
//! relays held meanwhile submitted in order, and the connection never touched.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zlink::TestFaults;

use serde_json::json;
use zlink::RuntimeBuilder;
use zlink_testkit::stream_client::{kind, StreamClient};
use zlink_tests::walking_sessions::*;

use crate::common::WAIT;

#[tokio::test]
async fn a_bound_actor_relocated_three_times_keeps_its_client_connected_and_loses_nothing() {
    // n0: the gateway; n1 and n2 serve walkers.
    let (cluster, mut client) = walkers(DEFAULT_SEAL_TIMEOUT, |node| node).await;
    let mut owner = join_walker(&mut client).await;
    // Steps keep flowing while the walker moves n1 <-> n2 three times.
    let steps = 300u64;
    let moving = Arc::new(AtomicBool::new(true));
    let mover = {
        let nodes: Vec<zlink::Handle> = (1..=2).map(|i| cluster.node(i).handle().clone()).collect();
        let moving = moving.clone();
        let first = owner.clone();
        tokio::spawn(async move {
            let mut at = first;
            for _ in 0..3 {
                tokio::time::sleep(std::time::Duration::from_millis(30)).await;
                let (from, to) = if at == "n1" { (0, "n2") } else { (1, "n1") };
                let moved = nodes[from]
                    .actors()
                    .relocate("w", Some(to))
                    .await
                    .expect("moved");
                at = moved.rid;
            }
            moving.store(false, Ordering::SeqCst);
            at
        })
    };
    let mut seen = Vec::new();
    let mut by = std::collections::BTreeSet::new();
    for n in 1..=steps {
        client.send_json("step", json!({ "n": n })).await.unwrap();
        if n % 30 == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
    let last_owner = mover.await.unwrap();
    while seen.len() < steps as usize {
        let packet = client
            .next(WAIT)
            .await
            .expect("every step's push, connection open");
        assert_eq!(packet.kind, kind::SEND, "{packet:?}");
        seen.push(packet.value()["n"].as_u64().unwrap());
        by.insert(packet.value()["by"].as_str().unwrap().to_string());
    }
    let expected: Vec<u64> = (1..=steps).collect();
    assert_eq!(seen, expected, "no step lost, duplicated or reordered");
    assert!(by.len() >= 2, "the steps ran on both nodes: {by:?}");
    // After the moves, the binding's route is the last owner's.
    client
        .send_json("step", json!({ "n": steps + 1 }))
        .await
        .unwrap();
    let after = client.next(WAIT).await.unwrap();
    owner.clone_from(&last_owner);
    assert_eq!(after.value()["by"], owner);
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_move_cancelled_before_relay_ready_releases_its_seal_by_44_abort_and_the_held_relays_go_to_the_source(
) {
    // Every move out of a walker node loses its relay-ready answer: the source cancels
    // and keeps the Actor. A seal never released would end the session in 1 s.
    let (cluster, mut client) = walkers(
        Duration::from_secs(1),
        RuntimeBuilder::test_lose_relay_ready,
    )
    .await;
    let from = join_walker(&mut client).await;
    // Steps go out all through the move, so some are relayed while it seals.
    let (mut sent, moved) = steps_during_move(&cluster, &from, &mut client).await;
    let cancelled = moved.unwrap_err();
    assert!(cancelled.is(zlink::ErrorKind::Unavailable), "{cancelled}");
    // One more after the cancel: the binding is open again on the source's route.
    sent += 1;
    client
        .send_json("step", json!({ "n": sent }))
        .await
        .unwrap();
    let mut seen = Vec::new();
    while seen.len() < sent as usize {
        let push = client
            .next(WAIT)
            .await
            .expect("every step's push, the connection open");
        assert_eq!(push.value()["by"], from, "ran on the source: {push:?}");
        seen.push(push.value()["n"].as_u64().unwrap());
    }
    let expected: Vec<u64> = (1..=sent).collect();
    assert_eq!(seen, expected, "none lost, duplicated or reordered");
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_relay_under_a_retired_binding_that_meets_a_move_is_refused_by_the_source_and_never_runs()
{
    // The walker's node loses every relay-ready answer (its moves cancel) and never tells
    // a retired session so (51), which therefore keeps relaying under its old binding.
    let (cluster, mut retired) = walkers(DEFAULT_SEAL_TIMEOUT, |node| {
        node.test_lose_relay_ready().test_drop_binding_replaced()
    })
    .await;
    let from = join_walker(&mut retired).await;
    let endpoint = cluster.node(0).stream_endpoint("clients").unwrap();
    let mut current = StreamClient::tcp(endpoint.trim_start_matches("tcp://"))
        .await
        .unwrap();
    let rebound = current
        .call_json(1, "join", json!({ "walker": "w" }), WAIT)
        .await
        .unwrap();
    assert_eq!(rebound.kind, kind::RESPONSE, "{:?}", rebound.error());

    // While the walker is held for its move, the retired session's steps reach the
    // source: a hold that took them would run them after the cancel, and their pushes
    // would reach the current session.
    let (sent, moved) = steps_during_move(&cluster, &from, &mut retired).await;
    let cancelled = moved.unwrap_err();
    assert!(cancelled.is(zlink::ErrorKind::Unavailable), "{cancelled}");
    assert!(sent > 0, "steps went out during the move");

    // The current session's step, after them all, is the only one that ran.
    current.send_json("step", json!({ "n": 0 })).await.unwrap();
    let push = current
        .next(WAIT)
        .await
        .expect("the current session's push");
    assert_eq!(
        push.value()["n"],
        0,
        "no step of the retired binding ran: {push:?}"
    );
    assert_eq!(push.value()["by"], from.as_str());
    cluster.shutdown().await;
}
