//! Actor membership on one node, over real TCP on 127.0.0.1 and a real `redis-server`: an
//! Actor joins a User Spot and leaves it again with the callbacks in their order, a
//! declined or impossible Join keeps it where it was, a Spot with members does not close,
//! and SpotWide and PerActor Spots run their members one gate or one lane each.

use std::sync::Arc;
use std::time::Duration;

use zlink::object::{is_entry_spot_id, Execution};
use zlink::ErrorKind;
use zlink_testkit::RedisServer;
use zlink_tests::membership_rooms::*;
use zlink_tests::*;

#[tokio::test]
async fn an_actor_joins_a_user_spot_on_its_node_and_leaves_it_with_the_callbacks_in_order() {
    let redis = RedisServer::start().expect("redis-server");
    let (log, entry_log) = (Log::default(), Log::default());
    let (a, _) = node_with_entry_log(&redis, Execution::SpotWide, &log, &entry_log).await;
    a.spots().get_or_create("r", "room", "").await.unwrap();
    a.actors().create("p", "player").await.unwrap();
    let entry = spot_of(&a, "p").await.unwrap();
    assert!(is_entry_spot_id(&entry));
    let p = PlayerClient::new(&a, "p");
    // The next message runs after the Join: the Actor is in the room.
    enters(&a, "p", "r", "hi").await;
    p.exit(&Exit).await.unwrap();
    assert_eq!(spot_of(&a, "p").await, Some(entry));
    logged(&log, "left p").await;
    assert_eq!(
        *log.lock().unwrap(),
        [
            "join p",
            "joined p",
            "p accepted r welcome",
            "p asked r: InvalidOperation",
            "p accepted entry ",
            "left p"
        ]
    );
    // The Entry Spot saw the Actor created in it, leave, and come back.
    logged(&entry_log, "joined p").await;
    assert_eq!(
        *entry_log.lock().unwrap(),
        ["created p", "left p", "joined p"]
    );
    stop([a]).await;
}

#[tokio::test]
async fn a_declined_or_impossible_join_keeps_the_actor_where_it_was() {
    let RoomNode {
        _redis,
        log,
        a,
        store,
    } = node_with_room(Execution::SpotWide).await;
    a.spots().get_or_create("h", "hall", "").await.unwrap();
    a.actors().create("p", "player").await.unwrap();
    let entry = spot_of(&a, "p").await;
    let p = PlayerClient::new(&a, "p");
    let enter = |spot: &str, request: &str| Enter {
        spot: spot.into(),
        request: request.into(),
    };
    p.enter(enter("r", "no")).await.unwrap();
    logged(&log, "p rejected full").await;
    p.enter(enter("nowhere", "")).await.unwrap();
    logged(&log, "p failed NotFound").await;
    p.enter(enter("h", "")).await.unwrap();
    logged(&log, "p failed InvalidOperation").await;
    // A room on a node that runs no players: no compatible node.
    let b = start(
        discovered_node("b", &store, quick_lease()).spot_type(
            Room::spot_type(|_| Room {
                log: Log::default(),
                handled: Handled::default(),
            })
            .unwrap(),
        ),
    )
    .await;
    b.spots().get_or_create("far", "room", "").await.unwrap();
    let far = b.spots().find("far").await.unwrap().unwrap();
    assert_eq!(far.rid, "b");
    p.enter(enter("far", "")).await.unwrap();
    logged(&log, "p failed Unavailable").await;
    assert_eq!(spot_of(&a, "p").await, entry, "still in its Entry Spot");
    stop([a, b]).await;
}

#[tokio::test]
async fn a_spot_with_member_actors_closes_as_false_and_keeps_its_authority() {
    let RoomNode { _redis, log, a, .. } = node_with_room(Execution::SpotWide).await;
    let room = a.spots().find("r").await.unwrap().unwrap();
    let player = a.actors().create("p", "player").await.unwrap();
    let p = PlayerClient::new(&a, "p");
    enters(&a, "p", "r", "").await;
    assert!(!a.spots().close(&room).await.unwrap(), "a member is in it");
    assert_eq!(a.spots().find("r").await.unwrap(), Some(room.clone()));
    let in_room = a.actors().destroy(&player).await.unwrap_err();
    assert!(in_room.is(ErrorKind::InvalidOperation), "{in_room}");
    p.exit(&Exit).await.unwrap();
    logged(&log, "left p").await;
    assert!(a.actors().destroy(&player).await.unwrap());
    assert!(a.spots().close(&room).await.unwrap(), "empty now");
    stop([a]).await;
}

#[tokio::test]
async fn spot_wide_members_share_one_gate_and_per_actor_members_run_at_the_same_time() {
    for (execution, together) in [(Execution::SpotWide, false), (Execution::PerActor, true)] {
        let RoomNode { _redis, a, .. } = node_with_room(execution).await;
        for id in ["p1", "p2"] {
            a.actors().create(id, "player").await.unwrap();
            enters(&a, id, "r", "").await;
        }
        let (one, two) = (PlayerClient::new(&a, "p1"), PlayerClient::new(&a, "p2"));
        let (m1, m2) = tokio::join!(one.meet(&Meet), two.meet(&Meet));
        let met = (m1.unwrap().0, m2.unwrap().0);
        assert_eq!(met, (together, together), "{execution:?}");
        stop([a]).await;
    }
}

#[tokio::test]
async fn a_request_to_an_object_behind_the_callers_own_gate_is_invalid_operation() {
    let RoomNode { _redis, a, .. } = node_with_room(Execution::SpotWide).await;
    a.spots().get_or_create("r2", "room", "").await.unwrap();
    a.actors().create("p", "player").await.unwrap();
    let p = PlayerClient::new(&a, "p");
    // From the Entry Spot, asking a room is fine.
    assert_eq!(
        p.ask_room(AskRoom("r".into())).await.unwrap().0.as_deref(),
        Some("r")
    );
    enters(&a, "p", "r", "").await;
    // Inside r's gate, a request to r would wait for itself; another room is fine.
    let own = p.ask_room(AskRoom("r".into())).await.unwrap_err();
    assert!(own.is(ErrorKind::InvalidOperation), "{own}");
    assert_eq!(
        p.ask_room(AskRoom("r2".into())).await.unwrap().0.as_deref(),
        Some("r2")
    );
    stop([a]).await;
}

#[tokio::test]
async fn a_join_and_a_close_of_one_spot_never_both_succeed() {
    let RoomNode { _redis, log, a, .. } = node_with_room(Execution::SpotWide).await;
    let room = a.spots().find("r").await.unwrap().unwrap();
    a.actors().create("p", "player").await.unwrap();
    let entry = spot_of(&a, "p").await;
    // The close is under way (its last turn is slow) when the Join is registered.
    let closing = tokio::spawn({
        let (a, room) = (a.clone(), room.clone());
        async move { a.spots().close(&room).await }
    });
    zlink_testkit::wait_until(WAIT, "the close began", || async {
        a.spots().find("r").await.unwrap().is_none()
    })
    .await;
    PlayerClient::new(&a, "p")
        .enter(&Enter {
            spot: "r".into(),
            request: String::new(),
        })
        .await
        .unwrap();
    assert!(closing.await.unwrap().unwrap(), "the close went through");
    logged(&log, "p failed Unavailable").await;
    assert_eq!(
        spot_of(&a, "p").await,
        entry,
        "the Actor stayed in its Entry Spot"
    );
    stop([a]).await;
}

#[tokio::test]
async fn a_join_to_a_spot_on_another_node_moves_the_actor_with_the_callbacks_in_order() {
    let redis = RedisServer::start().expect("redis-server");
    let (log, entry_log) = (Log::default(), Log::default());
    // b alone places the room on itself; a, started next, takes the Actor.
    let (b, _) = node_as("b", 100, &redis, Execution::SpotWide, &log, &Log::default()).await;
    b.spots().get_or_create("remote", "room", "").await.unwrap();
    assert_eq!(b.spots().find("remote").await.unwrap().unwrap().rid, "b");
    let (a, _) = node_as("a", 100, &redis, Execution::SpotWide, &log, &entry_log).await;
    wait_entry_spots_seen(&[&a, &b], 1).await;
    // Placement picks a or b; the test wants an Actor on a.
    let created =
        actor_created_on(&a, "p", "player", "a", || entry_log.lock().unwrap().clear()).await;
    // The next message runs after the Join: on b, in the room, same incarnation.
    enters(&a, "p", "remote", "hi").await;
    let moved = a.actors().find("p").await.unwrap().unwrap();
    assert_eq!(
        (moved.rid.as_str(), moved.generation),
        ("b", created.generation)
    );
    logged(&log, "p asked remote: InvalidOperation").await;
    assert_eq!(
        *log.lock().unwrap(),
        [
            "join p",
            "joined p",
            "p accepted remote welcome",
            "p asked remote: InvalidOperation"
        ],
        "admitted on b, joined there, then the completion on b, behind the room's gate"
    );
    logged(&entry_log, "left p").await;
    assert_eq!(*entry_log.lock().unwrap(), ["created p", "left p"]);
    // Declined by a Spot on another node: the Actor stays, and hears it where it is.
    let q = loop {
        let made = a.actors().create("q", "player").await.unwrap();
        if made.rid == "a" {
            break made;
        }
        a.actors().destroy(&made).await.unwrap();
    };
    PlayerClient::new(&a, "q")
        .enter(&Enter {
            spot: "remote".into(),
            request: "no".into(),
        })
        .await
        .unwrap();
    logged(&log, "q rejected full").await;
    assert_eq!(a.actors().find("q").await.unwrap(), Some(q));
    assert_eq!(
        PlayerClient::new(&a, "q")
            .where_am_i(&Where)
            .await
            .unwrap()
            .0,
        spot_of(&a, "q").await
    );
    stop([a, b]).await;
}

/// A Join reaching a Spot whose node drains (it takes no Actor in, and the Spot is
/// about to move) is not failed: it follows the Spot to the node it moves to. The room
/// holds its turn so that b drains while the room still runs there.
#[tokio::test]
async fn a_join_to_a_spot_whose_node_drains_follows_the_spot_to_its_new_node() {
    let redis = RedisServer::start().expect("redis-server");
    let log = Log::default();
    let (b, _) = node_as("b", 100, &redis, Execution::SpotWide, &log, &Log::default()).await;
    b.spots().get_or_create("remote", "room", "").await.unwrap();
    let (a, _) = node_as("a", 100, &redis, Execution::SpotWide, &log, &Log::default()).await;
    let (c, _) = node_as("c", 100, &redis, Execution::SpotWide, &log, &Log::default()).await;
    wait_entry_spots_seen(&[&a, &b, &c], 2).await;
    let created = actor_created_on(&a, "p", "player", "a", || {}).await;
    let room = RoomClient::new(&b, "remote");
    let held = tokio::spawn(async move { room.pause(Pause(400)).await });
    logged(&log, "pausing remote").await;
    let controls = b.controls();
    let drain = tokio::spawn(async move { controls.drain().await });
    zlink_testkit::wait_until(WAIT, "b drains", || async { b.status().draining }).await;
    // The Join reaches b while it drains; it lands where the room moved.
    enters(&a, "p", "remote", "hi").await;
    assert_eq!(
        held.await.unwrap().unwrap().0,
        "b",
        "the room's turn ended on b"
    );
    let report = drain.await.unwrap().unwrap();
    assert!(report.is_complete(), "{report:?}");
    let room = a.spots().find("remote").await.unwrap().unwrap();
    assert_ne!(room.rid, "b");
    let player = a.actors().find("p").await.unwrap().unwrap();
    assert_eq!(
        (player.rid.as_str(), player.generation),
        (room.rid.as_str(), created.generation),
        "the player runs with its room, the same incarnation"
    );
    stop([a, b, c]).await;
}

#[tokio::test]
async fn a_cross_node_join_of_an_actor_that_may_not_move_fails_rejected_and_keeps_it_home() {
    let redis = RedisServer::start().expect("redis-server");
    let log = Log::default();
    // b alone places the dais on itself; both nodes serve daises and pinned Actors.
    let b = pinned_node("b", &redis, &log).await;
    b.spots().get_or_create("far", "dais", "").await.unwrap();
    assert_eq!(b.spots().find("far").await.unwrap().unwrap().rid, "b");
    let a = pinned_node("a", &redis, &log).await;
    wait_entry_spots_seen(&[&a, &b], 1).await;
    // Placement picks a or b; the test wants the Actor on a.
    let created = actor_created_on(&a, "pin", "pinned", "a", || {}).await;
    let pin = PinnedClient::new(&a, "pin");
    let entry = pin.where_am_i(&Where).await.unwrap().0;
    assert!(entry.as_deref().is_some_and(is_entry_spot_id));
    pin.enter(&Enter {
        spot: "far".into(),
        request: "hi".into(),
    })
    .await
    .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    let outcome = loop {
        let found = log
            .lock()
            .unwrap()
            .iter()
            .find(|l| l.starts_with("pin "))
            .cloned();
        if let Some(line) = found {
            break line;
        }
        assert!(tokio::time::Instant::now() < deadline, "no Join outcome");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert!(
        outcome.starts_with("pin failed Rejected:") && outcome.contains("relocation = disable"),
        "{outcome}"
    );
    // Refused before anything: the dais on b was never asked, nothing arrived on b, and
    // the Actor runs on at a, same incarnation, in its Entry Spot.
    assert_eq!(*log.lock().unwrap(), [outcome]);
    assert_eq!(b.status().actors_owned, 0);
    assert_eq!(a.actors().find("pin").await.unwrap(), Some(created));
    assert_eq!(pin.where_am_i(&Where).await.unwrap().0, entry);
    assert_eq!(pin.name(&Name).await.unwrap().0.as_deref(), Some("a"));
    assert_eq!(
        PinnedClient::new(&b, "pin")
            .name(&Name)
            .await
            .unwrap()
            .0
            .as_deref(),
        Some("a"),
        "answered by a, from b too"
    );
    stop([a, b]).await;
}

#[tokio::test]
async fn a_per_actor_spot_member_move_under_traffic_keeps_to_spot_and_to_actor_queues_apart() {
    let redis = RedisServer::start().expect("redis-server");
    let (log, handled) = (Log::default(), Handled::default());
    // a alone: the room and its players start there.
    let a = node_recording("a", &redis, Execution::PerActor, &log, 0, &handled).await;
    a.spots().get_or_create("pt", "room", "").await.unwrap();
    for player in ["t1", "t2"] {
        a.actors().create(player, "player").await.unwrap();
        enters(&a, player, "pt", "").await;
    }
    // b takes one player only: t1 follows its Spot there, t2 cannot and stays on a.
    let b = node_recording(
        "b",
        &redis,
        Execution::PerActor,
        &Log::default(),
        1,
        &handled,
    )
    .await;
    let store = redis_store(&redis);
    let client = start(discovered_node("client", &store, quick_lease())).await;
    zlink_testkit::wait_until(WAIT, "a and the client see b's Entry Spot", || async {
        [&a, &client].iter().all(|rt| {
            rt.discovery().status().is_some_and(|s| {
                s.members
                    .iter()
                    .any(|m| m.rid == "b" && m.entry_spot.is_some())
            }) && peer_rids(rt).iter().any(|p| p == "b")
        })
    })
    .await;
    log.lock().unwrap().clear();
    // Senders keep going to the Spot (from the client and from a) and to each Actor.
    let stop_flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let plan = [
        (&client, To::Spot, "pt", "client-pt"),
        (&a, To::Spot, "pt", "a-pt"),
        (&client, To::Actor, "t1", "client-t1"),
        (&client, To::Actor, "t2", "client-t2"),
    ];
    let senders: Vec<_> = plan
        .iter()
        .map(|(rt, to, target, sender)| {
            let run = send_sequence(rt.handle().clone(), *to, target, sender, stop_flag.clone());
            (*target, *sender, tokio::spawn(run))
        })
        .collect();
    zlink_testkit::wait_until(WAIT, "every target handles traffic", || async {
        ["pt", "t1", "t2"]
            .iter()
            .all(|t| handled_since(&handled, 0, t) >= 30)
    })
    .await;
    // t1 is in a long turn when the Spot moves: the shell moves first and serves on b
    // while t1's own queue still waits on a; then t1 moves, with its queue.
    let pausing = tokio::spawn({
        let client = client.clone();
        async move { PlayerClient::new(&client, "t1").pause(Pause(800)).await }
    });
    zlink_testkit::wait_until(WAIT, "t1 is in its long turn", || async {
        handled.lock().unwrap().iter().any(|h| h.1 == "pause")
    })
    .await;
    let moved = a.spots().relocate("pt", Some("b")).await.unwrap();
    assert_eq!(moved.rid, "b");
    assert_eq!(
        pausing.await.unwrap().unwrap().0,
        "a",
        "the long turn ended on a"
    );
    assert_eq!(owners_of(&a, &["t1", "t2"]).await, ["b", "a"]);
    let at_move = handled.lock().unwrap().len();
    zlink_testkit::wait_until(
        WAIT,
        "every target handles traffic after the move",
        || async {
            ["pt", "t1", "t2"]
                .iter()
                .all(|t| handled_since(&handled, at_move, t) >= 30)
        },
    )
    .await;
    stop_flag.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut answers = std::collections::HashMap::new();
    for (target, sender, task) in senders {
        let (sent, nodes) = task
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("{sender}: a call to {target} failed: {e}"));
        // Exactly once and in order, per sender and target.
        let seen: Vec<u64> = handled
            .lock()
            .unwrap()
            .iter()
            .filter(|h| h.0 == target && h.1 == sender)
            .map(|h| h.2)
            .collect();
        assert_eq!(
            seen,
            (0..sent).collect::<Vec<_>>(),
            "{sender} to {target}: every message handled once, in the order sent"
        );
        let on_b = nodes.iter().filter(|n| *n == "b").count();
        println!(
            "{sender} to {target}: {sent} sent, {} answered ({on_b} by b)",
            nodes.len()
        );
        answers.insert(sender, nodes);
    }
    // ToSpot follows the Spot's authority: a until the shell moved, b from then on.
    let spot_owner = a.spots().find("pt").await.unwrap().unwrap().rid;
    assert_eq!(spot_owner, "b");
    for sender in ["client-pt", "a-pt"] {
        assert!(
            switches_once(&answers[sender], "a", "b"),
            "{sender}: answered by a, then by the Spot's new owner: {:?}",
            answers[sender]
        );
    }
    // ToActor follows each member's own owner: t1 switched with its own move, t2 stayed.
    assert!(
        switches_once(&answers["client-t1"], "a", "b"),
        "{:?}",
        answers["client-t1"]
    );
    assert!(answers["client-t2"].iter().all(|n| n == "a"));
    // The two queues switched apart: the Spot already ran on b while t1's queue waited
    // on a behind the long turn.
    let order = handled.lock().unwrap().clone();
    let first_on_b = |target: &str| {
        order
            .iter()
            .position(|h| h.0 == target && h.3 == "b")
            .unwrap()
    };
    assert!(
        first_on_b("pt") < first_on_b("t1"),
        "ToSpot switched to b before ToActor of t1"
    );
    assert!(
        order[first_on_b("t1")..]
            .iter()
            .all(|h| h.0 != "t1" || h.3 == "b"),
        "nothing of t1 ran on a after it ran on b"
    );
    assert!(
        log.lock().unwrap().is_empty(),
        "a host move calls no membership callback: {:?}",
        log.lock().unwrap()
    );
    stop([a, b, client]).await;
}
