//! zlink's instruments, read the way Prometheus reads them: through the exporter's text.

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use zlink::store::LocationStore;
use zlink_tests::relocating::{
    counter_type, ledger_type, Add, CounterClient, LedgerClient, Log, Seen, Show,
};
use zlink_tests::*;

/// The process's recorder, installed before the first node starts (as an application does).
fn exporter() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        PrometheusBuilder::new()
            .set_buckets(zlink::telemetry::DURATION_BUCKETS_SECONDS)
            .expect("buckets")
            .install_recorder()
            .expect("the one recorder of this test process")
    })
}

/// The value of the series `name` whose labels include every one of `labels`; `None` when
/// there is no such series.
fn series(name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let text = exporter().render();
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (key, value) = line.rsplit_once(' ')?;
            let (metric, rest) = key.split_once('{').unwrap_or((key, "}"));
            (metric == name).then_some((rest.trim_end_matches('}'), value))
        })
        .find(|(rest, _)| {
            labels
                .iter()
                .all(|(k, v)| rest.split(',').any(|l| l == format!("{k}=\"{v}\"")))
        })
        .and_then(|(_, value)| value.parse().ok())
}

/// Every label key zlink's series carry: none of them can hold an ID, a packet or a session.
const CLOSED_LABELS: &[&str] = &[
    "mesh",
    "rid",
    "surface",
    "kind",
    "outcome",
    "state",
    "reason",
    "op",
    "le",
    "direction",
    "security",
];

#[tokio::test]
async fn every_application_call_is_counted_by_surface_kind_and_outcome_under_its_node() {
    exporter();
    let server = server("calls-s", 1).await;
    let client = client("calls-c", &[&server]).await;
    let peers = |rid: &str, state: &str| {
        series(
            zlink::telemetry::names::PEERS,
            &[("rid", rid), ("state", state)],
        )
    };
    assert_eq!(peers("calls-c", "configured"), Some(1.0));
    assert_eq!(peers("calls-c", "ready"), Some(1.0));
    // The server names no peer; the client's connection is admitted there too.
    assert_eq!(peers("calls-s", "configured"), Some(0.0));
    zlink_testkit::wait_until(WAIT, "the server counts its client ready", || async {
        peers("calls-s", "ready") == Some(1.0)
    })
    .await;
    let echo = echo_client(&client);
    for i in 0..5 {
        echo.echo(&Echo {
            text: format!("{i}"),
        })
        .await
        .unwrap();
    }
    for i in 0..3 {
        echo.note(&Note(format!("{i}"))).await.unwrap();
    }
    let late = echo
        .slow(&Slow { millis: 500 })
        .timeout(Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(late.is(zlink::ErrorKind::DeadlineExceeded), "{late}");
    // A caller that drops its call: counted as cancelled, and no longer in flight.
    let dropped =
        tokio::time::timeout(Duration::from_millis(30), echo.slow(&Slow { millis: 300 })).await;
    assert!(dropped.is_err(), "the slow request was still running");

    let of = |kind: &str, outcome: &str| {
        series(
            zlink::telemetry::names::CALLS,
            &[
                ("rid", "calls-c"),
                ("surface", "channel"),
                ("kind", kind),
                ("outcome", outcome),
            ],
        )
    };
    assert_eq!(of("request", "ok"), Some(5.0));
    assert_eq!(of("send", "ok"), Some(3.0));
    assert_eq!(of("request", "deadline_exceeded"), Some(1.0));
    assert_eq!(of("request", "cancelled"), Some(1.0));
    let duration = |suffix: &str, outcome: &str, extra: &[(&str, &str)]| {
        let mut labels = vec![
            ("rid", "calls-c"),
            ("surface", "channel"),
            ("outcome", outcome),
        ];
        labels.extend_from_slice(extra);
        series(
            &format!("{}{suffix}", zlink::telemetry::names::CALL_DURATION),
            &labels,
        )
    };
    // Only requests are timed; the buckets are the ones set, so nodes aggregate.
    assert_eq!(duration("_count", "ok", &[]), Some(5.0));
    assert_eq!(duration("_bucket", "ok", &[("le", "30")]), Some(5.0));
    assert_eq!(duration("_count", "deadline_exceeded", &[]), Some(1.0));
    assert_eq!(
        series(
            zlink::telemetry::names::CALLS_IN_FLIGHT,
            &[("rid", "calls-c"), ("surface", "channel")]
        ),
        Some(0.0)
    );
    // The server made no call of its own: nothing is counted under its name.
    assert_eq!(
        series(zlink::telemetry::names::CALLS, &[("rid", "calls-s")]),
        None
    );
    stop([client, server]).await;
}

#[tokio::test]
async fn calls_to_spots_and_actors_are_counted_under_their_surface() {
    exporter();
    let seen = Seen::default();
    let rt = start(
        node("calls-o")
            .location_store(<dyn LocationStore>::in_memory())
            .relocation_store(relocation_store())
            .actor_type(counter_type("calls-o", &seen))
            .spot_type(ledger_type("calls-o", &seen)),
    )
    .await;
    rt.actors().create("m-a1", "counter").await.unwrap();
    rt.spots()
        .get_or_create("m-l1", "ledger", "")
        .await
        .unwrap();
    let counter = CounterClient::new(&rt, "m-a1");
    for n in 0..4 {
        counter.add(Add(n)).await.unwrap();
    }
    let ledger = LedgerClient::new(&rt, "m-l1");
    ledger.log(Log(1)).await.unwrap();
    ledger.log(Log(2)).await.unwrap();
    let missing = LedgerClient::new(&rt, "m-nobody")
        .show(&Show)
        .await
        .unwrap_err();
    assert!(missing.is(zlink::ErrorKind::NotFound), "{missing}");

    let of = |surface: &str, kind: &str, outcome: &str| {
        series(
            zlink::telemetry::names::CALLS,
            &[
                ("rid", "calls-o"),
                ("surface", surface),
                ("kind", kind),
                ("outcome", outcome),
            ],
        )
    };
    assert_eq!(of("actor", "request", "ok"), Some(4.0));
    assert_eq!(of("spot", "send", "ok"), Some(2.0));
    assert_eq!(of("spot", "request", "not_found"), Some(1.0));
    rt.shutdown().await;
}

#[tokio::test]
async fn no_series_carries_a_label_outside_the_closed_set() {
    exporter();
    let server = server("labels-s", 1).await;
    let client = client("labels-c", &[&server]).await;
    echo_client(&client)
        .echo(&Echo { text: "x".into() })
        .await
        .unwrap();
    let text = exporter().render();
    let zlink_series: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("zlink_"))
        .collect();
    assert!(!zlink_series.is_empty());
    for line in zlink_series {
        let Some((_, rest)) = line.split_once('{') else {
            continue;
        };
        let labels = rest.split_once('}').map_or("", |(labels, _)| labels);
        for label in labels.split(',') {
            let key = label.split_once('=').map_or(label, |(k, _)| k);
            assert!(CLOSED_LABELS.contains(&key), "{key} in {line}");
        }
    }
    stop([client, server]).await;
}

/// Objects owned, created and moved are counted on the node that did it, and a call that
/// follows a moved Actor is counted as relayed on the node it left.
#[tokio::test]
async fn objects_owned_created_and_moved_are_counted_on_the_nodes_that_did_it() {
    exporter();
    let m = zlink_tests::relocating::mesh(&["mo-a", "mo-b"], None).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    let made = client.actors().create("mo-1", "counter").await.unwrap();
    assert_eq!(made.rid, "mo-a");
    let owned = |rid: &str| {
        series(
            zlink::telemetry::names::OBJECTS_OWNED,
            &[("rid", rid), ("kind", "actor")],
        )
    };
    assert_eq!(owned("mo-a"), Some(1.0));
    assert_eq!(
        series(
            zlink::telemetry::names::CREATIONS,
            &[("rid", "mo-a"), ("kind", "actor"), ("outcome", "created")]
        ),
        Some(1.0)
    );
    // The client's route to mo-a stays in its cache across the move.
    let counter = CounterClient::new(client, "mo-1");
    counter.add(Add(1)).await.unwrap();
    let moved = a.actors().relocate("mo-1", Some("mo-b")).await.unwrap();
    assert_eq!(moved.rid, "mo-b");
    // Its next call goes to mo-a, which relays it by Message Follow.
    assert_eq!(counter.add(Add(1)).await.unwrap().total, 2);
    let relayed = series(zlink::telemetry::names::FOLLOW_RELAYED, &[("rid", "mo-a")]);
    assert!(relayed >= Some(1.0), "{relayed:?}");
    assert_eq!(relayed, Some(a.status().relayed_by_message_follow as f64));
    assert_eq!(owned("mo-a"), Some(0.0));
    assert_eq!(owned("mo-b"), Some(1.0));
    let moves = |suffix: &str| {
        series(
            &format!("{}{suffix}", zlink::telemetry::names::RELOCATIONS),
            &[("rid", "mo-a"), ("kind", "actor"), ("outcome", "moved")],
        )
    };
    assert_eq!(moves(""), Some(1.0));
    assert_eq!(
        series(
            &format!("{}_count", zlink::telemetry::names::RELOCATION_DURATION),
            &[("rid", "mo-a"), ("kind", "actor"), ("outcome", "moved")],
        ),
        Some(1.0)
    );
    // The target did not start the move: nothing is counted under its name.
    assert_eq!(
        series(zlink::telemetry::names::RELOCATIONS, &[("rid", "mo-b")]),
        None
    );
    // Closed by the node that runs it now (a destroy on the client's cached route to
    // mo-a can meet a stale route under load; that is not what this test counts).
    assert!(m.nodes[1].actors().destroy(&moved).await.unwrap());
    assert_eq!(owned("mo-b"), Some(0.0));
    stop(m.nodes).await;
}

/// An accepted one-way that cannot be delivered is counted by its reason on the node that
/// lost it, next to the `status()` count and the warn line: here an Instance intent
/// one-way whose activation fails because every node serving the type is full.
#[tokio::test]
async fn a_lost_one_way_is_counted_by_reason_on_the_node_that_lost_it() {
    use zlink_tests::instance_matches::{full_after_one_match, Mark, MatchClient, Score};
    exporter();
    let redis = zlink_testkit::RedisServer::start().expect("redis-server");
    let (server, caller) = full_after_one_match(&redis_store(&redis), "lost-s", "lost-c").await;
    MatchClient::instance(&caller, "full")
        .score(&Score { by: "c".into() })
        .await
        .unwrap();
    MatchClient::instance(&caller, "lost")
        .mark(&Mark { by: "c".into() })
        .await
        .unwrap();
    let lost = || {
        series(
            zlink::telemetry::names::LOST_ONE_WAYS,
            &[("rid", "lost-c"), ("reason", "activation_failed")],
        )
    };
    zlink_testkit::wait_until(WAIT, "the lost one-way is counted", || async {
        lost() == Some(1.0)
    })
    .await;
    assert_eq!(caller.status().lost_one_ways.activation_failed, 1);
    stop([caller, server]).await;
}

/// Every Location Store call is counted by operation and outcome, and timed: the owner
/// lease's renewals while the store answers, failures while it does not; and how late the
/// lease keeper woke for each renewal.
#[tokio::test]
async fn store_calls_are_counted_by_operation_and_outcome_and_timed() {
    exporter();
    let redis = zlink_testkit::RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let node = start(discovered_node("store-a", &store, quick_lease())).await;
    let calls = |op: &str, outcome: &str| {
        series(
            zlink::telemetry::names::STORE_OPERATIONS,
            &[("rid", "store-a"), ("op", op), ("outcome", outcome)],
        )
        .unwrap_or(0.0)
    };
    zlink_testkit::wait_until(WAIT, "renewals are counted", || async {
        calls("renew_lease", "ok") >= 2.0
    })
    .await;
    assert!(calls("claim_lease", "ok") >= 1.0);
    let timed = series(
        &format!(
            "{}_count",
            zlink::telemetry::names::STORE_OPERATION_DURATION
        ),
        &[("rid", "store-a"), ("op", "renew_lease")],
    )
    .unwrap_or(0.0);
    assert!(timed >= 2.0, "renewals are timed: {timed}");
    let woke = series(
        &format!("{}_count", zlink::telemetry::names::LEASE_RENEWAL_LATENESS),
        &[("rid", "store-a")],
    )
    .unwrap_or(0.0);
    assert!(
        woke >= 1.0,
        "the lease keeper's wake-ups are measured: {woke}"
    );
    redis.pause().expect("pause redis");
    zlink_testkit::wait_until(WAIT, "failed calls are counted", || async {
        calls("renew_lease", "failed") >= 1.0
    })
    .await;
    redis.resume().expect("resume redis");
    stop([node]).await;
}

/// STREAM sessions: the gateway counts them open while they are, and by reason once they
/// end (here: a client that breaks the packet format, closed `protocol_error`).
#[tokio::test]
async fn stream_sessions_are_counted_and_told_open_and_closed_by_reason() {
    use zlink_testkit::stream_client::StreamClient;
    exporter();
    let cluster = zlink_tests::bound_sessions::gateways_and_players(1, 1).await;
    let gateway = cluster.node(0).rid().to_string();
    let address = cluster.node(0).stream_endpoint("clients").expect("bound");
    let open = || series(zlink::telemetry::names::SESSIONS_OPEN, &[("rid", &gateway)]);
    let mut stream = cluster.node(0).observe();
    let mut client = StreamClient::tcp(address.trim_start_matches("tcp://"))
        .await
        .unwrap();
    client
        .call_json(1, "login", serde_json::json!({ "player": "ops" }), WAIT)
        .await
        .unwrap();
    assert_eq!(open(), Some(1.0));
    // A length prefix with a header far past any limit.
    client
        .write_raw(&zlink_testkit::stream_client::prefix(u16::MAX, u32::MAX))
        .await
        .unwrap();
    zlink_testkit::wait_until(WAIT, "the broken session is counted closed", || async {
        series(
            zlink::telemetry::names::SESSIONS_CLOSED,
            &[("rid", &gateway), ("reason", "protocol_error")],
        ) == Some(1.0)
    })
    .await;
    assert_eq!(open(), Some(0.0));
    let bytes = |direction: &str| {
        series(
            zlink::telemetry::names::SESSION_BYTES,
            &[("rid", &gateway), ("direction", direction)],
        )
        .unwrap_or(0.0)
    };
    assert!(
        bytes("received") > 0.0 && bytes("sent") > 0.0,
        "the login and its answer"
    );
    // The status stream told both, naming the listener, the session and the reason.
    let mut told = Vec::new();
    while let Some(observed) = stream.try_next() {
        told.push(observed.event.what);
    }
    use zlink::telemetry::Happened;
    let opened = told.iter().find_map(|e| match e {
        Happened::SessionOpened { listener, session } => Some((listener.as_str(), *session)),
        _ => None,
    });
    let (listener, session) = opened.unwrap_or_else(|| panic!("{told:#?}"));
    assert_eq!(listener, "clients");
    assert!(
        told.contains(&Happened::SessionClosed {
            listener: "clients".into(),
            session,
            reason: "protocol_error",
        }),
        "{told:#?}"
    );
    cluster.shutdown().await;
}

/// What a node's turns, Message Follow, route cache, links and channel selection cost:
/// the time a message waited in the mailbox and the mailbox's depth, a turn of 1 s or
/// more counted as long, an activation's duration, the follow notice and barrier the
/// source sent to a caller on an old route, the caller's cache hits and misses, the bytes
/// and admissions of its links, and a channel call that found no server.
#[tokio::test]
async fn turns_follow_notices_route_cache_links_and_selection_failures_are_counted() {
    use zlink::telemetry::names;
    use zlink_tests::relocating::{mesh, Hold};
    exporter();
    let m = mesh(&["tm-a", "tm-b"], Some(Duration::from_secs(30))).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    client.actors().create("tm-1", "counter").await.unwrap();
    CounterClient::new(client, "tm-1")
        .hold(Hold(1_100))
        .await
        .unwrap();
    // Fresh routes in the client's cache (it keeps one for RouteCacheMaxAge).
    for _ in 0..3 {
        CounterClient::new(client, "tm-1")
            .add(Add(1))
            .await
            .unwrap();
    }
    a.actors().relocate("tm-1", Some("tm-b")).await.unwrap();
    // On the client's old route: tm-a relays it, then tells the client where it went.
    CounterClient::new(client, "tm-1")
        .add(Add(1))
        .await
        .unwrap();
    let on = |name: &str, rid: &str, more: &[(&str, &str)]| {
        let mut labels = vec![("rid", rid)];
        labels.extend_from_slice(more);
        series(name, &labels).unwrap_or(0.0)
    };
    zlink_testkit::wait_until(WAIT, "tm-a sent a follow notice", || async {
        on(names::FOLLOW_NOTICES, "tm-a", &[]) >= 1.0
    })
    .await;
    assert!(on(names::FOLLOW_BARRIERS, "tm-a", &[]) >= 1.0);
    assert!(on(names::FOLLOW_RELAYED, "tm-a", &[]) >= 1.0);
    let actor = [("kind", "actor")];
    assert_eq!(on(names::LONG_TURNS, "tm-a", &actor), 1.0);
    let waits = format!("{}_count", names::MAILBOX_WAIT);
    assert!(on(&waits, "tm-a", &actor) >= 4.0, "every message's wait");
    let depths = format!("{}_count", names::MAILBOX_DEPTH);
    assert!(on(&depths, "tm-b", &actor) + on(&depths, "tm-a", &actor) >= 1.0);
    let pauses = format!("{}_count", names::RELOCATION_PAUSE);
    assert_eq!(
        on(&pauses, "tm-a", &actor),
        1.0,
        "the move's pause, on its source"
    );
    assert!(
        on(names::RELOCATION_BYTES, "tm-a", &actor) > 0.0,
        "its state and queue"
    );
    let activations = format!("{}_count", names::ACTIVATION_DURATION);
    assert_eq!(on(&activations, "tm-a", &actor), 1.0);
    assert!(on(names::ROUTE_CACHE_LOOKUPS, "client", &[("outcome", "hit")]) >= 2.0);
    assert!(on(names::ROUTE_CACHE_LOOKUPS, "client", &[("outcome", "miss")]) >= 1.0);
    assert!(on(names::LINK_BYTES, "client", &[("direction", "sent")]) > 0.0);
    assert!(on(names::LINK_BYTES, "tm-a", &[("direction", "received")]) > 0.0);
    assert!(on(names::LINK_ADMISSIONS, "client", &[("security", "null")]) >= 2.0);
    // A channel nobody in this mesh serves.
    let failed = echo_client(client.handle())
        .echo(&Echo { text: "x".into() })
        .await;
    assert!(failed.is_err());
    assert_eq!(
        on(
            names::SELECTION_FAILURES,
            "client",
            &[("reason", "no_member")]
        ),
        1.0
    );
    // A node-direct request to a node that serves no such packet: dropped there.
    let unserved = client
        .nodes()
        .request("tm-a", &Echo { text: "x".into() })
        .await;
    assert!(unserved.unwrap_err().is(zlink::ErrorKind::NotFound));
    assert_eq!(
        on(names::DROPPED_MESSAGES, "tm-a", &[("reason", "no_handler")]),
        1.0
    );
    stop(m.nodes).await;
}
