//! A node's status stream (`observe`): ordered, numbered events of what changed on it,
//! over real TCP and Redis, and a reader that falls behind never holds the node back.

use std::time::Duration;

use futures::StreamExt;
use zlink::telemetry::{Happened, HostState, ObjectClass, Observed, Observer};
use zlink_tests::relocating::mesh;
use zlink_tests::*;

const WAIT: Duration = Duration::from_secs(10);

/// Reads `observer` until `wanted` says the event just read is the last one needed;
/// every event read on the way, in order.
async fn read_until(observer: &mut Observer, wanted: impl Fn(&Happened) -> bool) -> Vec<Observed> {
    let mut read = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let next = tokio::time::timeout_at(deadline, observer.next())
            .await
            .unwrap_or_else(|_| panic!("the awaited event never came; read so far: {read:#?}"))
            .expect("the node is alive");
        let done = wanted(&next.event.what);
        read.push(next);
        if done {
            return read;
        }
    }
}

/// Every event's sequence is one more than the one before (nothing lost) and none was
/// counted lost.
fn assert_gapless(events: &[Observed]) {
    for pair in events.windows(2) {
        assert_eq!(
            pair[1].event.sequence,
            pair[0].event.sequence + 1,
            "{events:#?}"
        );
    }
    assert!(events.iter().all(|e| e.lost == 0), "{events:#?}");
}

/// On the node that does it, the stream tells an Actor created, moved (started, ended
/// with its target), drained and served again, and a peer lost; on the target, that it
/// arrived and was closed; every event numbered one after the other.
#[tokio::test]
async fn the_status_stream_tells_what_changed_on_each_node_in_order_with_sequence_numbers() {
    let m = mesh(&["ev-a", "ev-b"], None).await;
    let (a, b, client) = (&m.nodes[0], &m.nodes[1], &m.nodes[2]);
    let (mut on_a, mut on_b) = (a.observe(), b.observe());

    let actor = client.actors().create("ev-1", "counter").await.unwrap();
    let created = read_until(&mut on_a, |e| matches!(e, Happened::ObjectCreated { .. })).await;
    assert_eq!(
        created.last().map(|e| &e.event.what),
        Some(&Happened::ObjectCreated {
            kind: ObjectClass::Actor,
            id: "ev-1".into(),
            generation: actor.generation,
        })
    );

    a.actors().relocate("ev-1", Some("ev-b")).await.unwrap();
    let moved = read_until(&mut on_a, |e| matches!(e, Happened::RelocationEnded { .. })).await;
    let ended = &moved.last().unwrap().event.what;
    assert!(
        matches!(ended, Happened::RelocationEnded { kind: ObjectClass::Actor, id, outcome: "moved", to: Some(to), .. } if id == "ev-1" && to == "ev-b"),
        "{ended:?}"
    );
    assert!(
        moved.iter().any(|e| e.event.what
            == Happened::RelocationStarted {
                kind: ObjectClass::Actor,
                id: "ev-1".into()
            }),
        "{moved:#?}"
    );
    let arrived = read_until(&mut on_b, |e| matches!(e, Happened::ObjectArrived { .. })).await;
    assert_eq!(
        arrived.last().map(|e| &e.event.what),
        Some(&Happened::ObjectArrived {
            kind: ObjectClass::Actor,
            id: "ev-1".into(),
            generation: actor.generation,
        })
    );
    let moved_ref = client.actors().find("ev-1").await.unwrap().expect("found");
    assert!(client.actors().destroy(&moved_ref).await.unwrap());
    let closed = read_until(&mut on_b, |e| matches!(e, Happened::ObjectClosed { .. })).await;
    assert_eq!(
        closed.last().map(|e| &e.event.what),
        Some(&Happened::ObjectClosed {
            kind: ObjectClass::Actor,
            id: "ev-1".into()
        })
    );

    a.relocate_all().await.unwrap();
    a.undrain().await.unwrap();
    let states = read_until(&mut on_a, |e| {
        *e == Happened::HostState {
            state: HostState::Serving,
        }
    })
    .await;
    assert!(
        states.iter().any(|e| e.event.what
            == Happened::HostState {
                state: HostState::Draining
            }),
        "{states:#?}"
    );

    let [a, b, client]: [zlink::Runtime; 3] = m.nodes.try_into().ok().expect("three nodes");
    client.shutdown().await;
    let lost = read_until(&mut on_a, |e| matches!(e, Happened::PeerLost { .. })).await;
    assert_eq!(
        lost.last().map(|e| &e.event.what),
        Some(&Happened::PeerLost {
            peer: "client".into()
        })
    );
    let mut all_a = created;
    all_a.extend(moved);
    all_a.extend(states);
    all_a.extend(lost);
    assert_gapless(&all_a);
    let mut all_b = arrived;
    all_b.extend(closed);
    assert_gapless(&all_b);
    stop(vec![a, b]).await;
}

/// An observer that never reads does not hold the node back: 1,500 creations finish, and
/// when it reads at last it gets the newest events in order with the skipped ones counted
/// lost (received + lost = all). A reader resuming after an old sequence gets what the
/// node retained after it, the rest counted lost.
#[tokio::test]
async fn a_slow_observer_never_slows_the_node_and_counts_what_it_lost() {
    const CREATIONS: usize = 1_500;
    let m = mesh(&["slow-a"], None).await;
    let (a, client) = (&m.nodes[0], &m.nodes[1]);
    let mut never_read = a.observe();
    let mut keeping_up = a.observe();
    client.actors().create("slow-0", "counter").await.unwrap();
    let first_sequence = keeping_up.next().await.expect("an event").event.sequence;
    // A reader that keeps up, beside the one that never reads.
    let reader = tokio::spawn(async move {
        let mut created = 1;
        while created < CREATIONS {
            let next = tokio::time::timeout(WAIT, keeping_up.next())
                .await
                .expect("the creations' events")
                .expect("alive");
            if matches!(next.event.what, Happened::ObjectCreated { .. }) {
                created += 1;
            }
        }
        keeping_up.lost()
    });
    let made = futures::stream::iter(1..CREATIONS)
        .map(|i| async move {
            client
                .actors()
                .create(&format!("slow-{i}"), "counter")
                .await
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    assert!(made.iter().all(Result::is_ok), "every creation finished");

    // The creation events reach the node's stream after each reply: the reader that
    // keeps up saw every one of them, and lost none.
    assert_eq!(reader.await.unwrap(), 0);
    let last_sequence = first_sequence + CREATIONS as u64 - 1;

    let mut received = Vec::new();
    while let Some(observed) = never_read.try_next() {
        received.push(observed);
    }
    let lost = never_read.lost();
    assert!(lost > 0, "the unread queue overflowed");
    assert_eq!(received.len() as u64 + lost, CREATIONS as u64);
    assert_eq!(
        received.last().map(|e| e.event.sequence),
        Some(last_sequence)
    );
    assert!(received
        .windows(2)
        .all(|p| p[1].event.sequence == p[0].event.sequence + 1));
    assert!(received.iter().all(|e| e.lost == lost));

    // Resuming after the first event: the node retained only the newest ones.
    let mut resumed = a.operator().observe_after(first_sequence);
    let first = resumed.try_next().expect("a retained event");
    assert_eq!(
        first.event.sequence,
        last_sequence + 1 - zlink::telemetry::RETAINED_EVENTS as u64
    );
    assert_eq!(first.lost, first.event.sequence - first_sequence - 1);
    stop(m.nodes).await;
}
