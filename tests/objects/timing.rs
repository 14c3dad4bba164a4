//! RouteCacheMaxAge and MessageFollowDuration changed while nodes run (seed 000 §2.2,
//! §2.5): a new max age applies to routes cached from then on, a new follow duration to
//! moves that start from then on, 0 turns each off, and the 5 s gap between them holds.

use std::time::Duration;

use zlink::ErrorKind;
use zlink_tests::relocating::*;
use zlink_tests::{actor_created_on, stop};

fn record_reads(rt: &zlink::Runtime) -> u64 {
    rt.status()
        .store_operations
        .map_or(0, |s| s.reads.record.calls)
}

#[tokio::test]
async fn a_route_cache_max_age_set_at_run_time_applies_to_routes_cached_from_then_on() {
    let m = mesh(&["a", "b"], None).await;
    let client = &m.nodes[2];
    assert_eq!(
        client.route_cache_max_age().unwrap(),
        Duration::from_secs(15)
    );
    for id in ["old", "new"] {
        client.actors().create(id, "counter").await.unwrap();
    }
    client.set_route_cache_max_age(Duration::ZERO).unwrap();
    // Off: every call reads the authority.
    let old = CounterClient::new(client, "old");
    let before = record_reads(client);
    for _ in 0..3 {
        old.add(Add(1)).await.unwrap();
    }
    assert_eq!(
        record_reads(client) - before,
        3,
        "one read per call with the cache off"
    );
    // On again: one read, then the cached route.
    client
        .set_route_cache_max_age(Duration::from_secs(10))
        .unwrap();
    let before = record_reads(client);
    for _ in 0..3 {
        old.add(Add(1)).await.unwrap();
    }
    assert_eq!(
        record_reads(client) - before,
        1,
        "cached after the first read"
    );
    // Off once more: the route cached under 10 s keeps its lifetime, a new one is not cached.
    client.set_route_cache_max_age(Duration::ZERO).unwrap();
    let before = record_reads(client);
    old.add(Add(1)).await.unwrap();
    assert_eq!(
        record_reads(client) - before,
        0,
        "an existing entry keeps its lifetime"
    );
    let new = CounterClient::new(client, "new");
    let before = record_reads(client);
    new.add(Add(1)).await.unwrap();
    new.add(Add(1)).await.unwrap();
    assert_eq!(
        record_reads(client) - before,
        2,
        "a new route is not cached at 0"
    );
    stop(m.nodes).await;
}

#[tokio::test]
async fn a_message_follow_duration_set_at_run_time_applies_to_moves_that_start_from_then_on() {
    let m = mesh(&["a", "b"], None).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    assert_eq!(
        a.message_follow_duration().unwrap(),
        Duration::from_secs(30)
    );
    for id in ["off", "on"] {
        create_on(client, id, "a").await;
    }
    // Both routes are cached on the client, leading to a.
    let (off, on) = (
        CounterClient::new(client, "off"),
        CounterClient::new(client, "on"),
    );
    off.add(Add(1)).await.unwrap();
    on.add(Add(1)).await.unwrap();
    // Follow off on a: a move from then on leaves no detour.
    a.set_message_follow_duration(Duration::ZERO).unwrap();
    a.actors().relocate("off", Some("b")).await.unwrap();
    let lost = off.add(Add(1)).await.unwrap_err();
    assert!(lost.is(ErrorKind::Unavailable), "{lost}");
    // Follow on again: the next move is followed, the caller never notices.
    a.set_message_follow_duration(Duration::from_secs(30))
        .unwrap();
    a.actors().relocate("on", Some("b")).await.unwrap();
    let followed = on.add(Add(1)).await.unwrap();
    assert_eq!(followed.by, "b");
    stop(m.nodes).await;
}

#[tokio::test]
async fn the_5_s_gap_between_route_cache_max_age_and_message_follow_duration_holds_at_run_time() {
    let m = mesh(&["a", "b"], None).await;
    let a = &m.nodes[0];
    // 15 s and 30 s: a follow duration under 20 s, or a max age over 25 s, breaks the gap.
    let short = a
        .set_message_follow_duration(Duration::from_secs(19))
        .unwrap_err();
    assert!(matches!(short, zlink::Error::InvalidArgument(_)), "{short}");
    let long = a
        .set_route_cache_max_age(Duration::from_secs(26))
        .unwrap_err();
    assert!(matches!(long, zlink::Error::InvalidArgument(_)), "{long}");
    assert_eq!(
        (
            a.route_cache_max_age().unwrap(),
            a.message_follow_duration().unwrap()
        ),
        (Duration::from_secs(15), Duration::from_secs(30)),
        "a refused change changes nothing"
    );
    // The edges: exactly 5 s apart is allowed; 0 turns either off whatever the other is.
    a.set_route_cache_max_age(Duration::from_secs(25)).unwrap();
    a.set_message_follow_duration(Duration::ZERO).unwrap();
    a.set_route_cache_max_age(Duration::from_secs(60)).unwrap();
    a.set_route_cache_max_age(Duration::ZERO).unwrap();
    a.set_message_follow_duration(Duration::from_secs(3))
        .unwrap();
    stop(m.nodes).await;
}

/// Actor `id` of the counter type, created until placement puts it on node `rid`.
async fn create_on(client: &zlink::Handle, id: &str, rid: &str) {
    actor_created_on(client, id, "counter", rid, || {}).await;
}
