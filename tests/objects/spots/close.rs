//! Closing a Spot: a close that gives up waiting, the closing reason the Spot hears, a
//! shutdown that lets accepted handlers finish within its grace, and one that does not wait
//! past it for a stuck handler.

use super::*;

#[tokio::test]
async fn shutdown_does_not_wait_for_a_handler_that_never_ends() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    a.spots().get_or_create("s", "room", "").await.unwrap();
    let stuck = tokio::spawn({
        let a = a.clone();
        async move { a.spots().request("s", &Say("forever".into())).await }
    });
    wait_until(WAIT, "the handler runs", || async {
        counters.busy.load(Ordering::SeqCst) == 1
    })
    .await;
    let grace = std::time::Duration::from_millis(500);
    let outcome = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        a.shutdown_with(zlink::ShutdownOptions::new().grace(grace)),
    )
    .await
    .expect("shutdown finished");
    assert_eq!(
        outcome,
        zlink::ShutdownOutcome::ForceStopped(zlink::ShutdownReason::DeadlineExceeded),
        "the handler outlived the grace: the shutdown says so"
    );
    let ended = stuck.await.unwrap().unwrap_err();
    assert!(ended.is(ErrorKind::ShuttingDown), "{ended}");
}

/// Reference §7.5 step 3: a shutdown lets the Spot handler it finds running finish within
/// its grace, before `on_closing` and the release; its caller on another node hears the
/// reply, and the shutdown ends `Stopped`.
#[tokio::test]
async fn a_shutdown_lets_accepted_spot_handlers_finish_within_its_grace() {
    let RoomServerAndCaller {
        _redis,
        counters,
        a,
        b,
        ..
    } = room_server_and_caller().await;
    a.spots().get_or_create("s", "room", "").await.unwrap();
    let call = {
        let b = b.handle().clone();
        tokio::spawn(async move { b.spots().request("s", &Say("slow".into())).await })
    };
    wait_until(WAIT, "the handler runs", || async {
        counters.busy.load(Ordering::SeqCst) == 1
    })
    .await;
    let outcome = a.shutdown().await;
    assert_eq!(outcome, zlink::ShutdownOutcome::Stopped);
    let said = call.await.unwrap().expect("the accepted call is answered");
    assert_eq!((said.lines, said.by.as_str()), (1, "a"));
    assert_eq!(
        b.spots().find("s").await.unwrap(),
        None,
        "then released: it reads Missing"
    );
    b.shutdown().await;
}

#[tokio::test]
async fn a_close_that_gives_up_waiting_stops_that_incarnation() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = start(
        discovered_node("a", &store, quick_lease())
            .request_timeout(std::time::Duration::from_millis(800))
            .spot_type(room_type("a", &counters)),
    )
    .await;
    let SpotCreation::Created(first, _) = a.spots().get_or_create("s", "room", "").await.unwrap()
    else {
        panic!("created")
    };
    let stuck = tokio::spawn({
        let a = a.clone();
        let patient = zlink::CallOptions::new().timeout(std::time::Duration::from_secs(10));
        async move {
            a.spots()
                .request("s", &Say("forever".into()))
                .options(patient)
                .await
        }
    });
    wait_until(WAIT, "the handler runs", || async {
        counters.busy.load(Ordering::SeqCst) == 1
    })
    .await;
    assert!(a.spots().close(&first).await.unwrap(), "released");
    // The stuck handler was stopped with its incarnation, not left running.
    let ended = stuck.await.unwrap().unwrap_err();
    assert!(ended.is(ErrorKind::ShuttingDown), "{ended}");
    // A new incarnation under the ID runs on its own.
    counters.busy.store(0, Ordering::SeqCst);
    let again = a.spots().get_or_create("s", "room", "").await.unwrap();
    assert!(matches!(again, SpotCreation::Created(..)), "{again:?}");
    let said = a.spots().request("s", &Say("hi".into())).await.unwrap();
    assert_eq!(said.lines, 1, "the new incarnation starts empty");
    assert_eq!(counters.factories.load(Ordering::SeqCst), 2);
    stop([a]).await;
}

#[tokio::test]
async fn a_spot_closing_hears_the_reason() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let reasons = Reasons::default();
    let a =
        start(discovered_node("a", &store, quick_lease()).spot_type(tally_type(&reasons))).await;
    let b = plain_node("b", &store).await;
    sees_servers(&b, &["a"]).await;
    let mut refs = Vec::new();
    for id in ["closed-here", "closed-remotely", "shut-down"] {
        let SpotCreation::Created(spot, _) = a
            .spots()
            .get_or_create(id, Tally::STABLE_TYPE, "")
            .await
            .unwrap()
        else {
            panic!("{id} not created")
        };
        refs.push(spot);
    }
    assert!(a.spots().close(&refs[0]).await.unwrap());
    // A close through the owner (command 48) is an explicit close too.
    assert!(b.spots().close(&refs[1]).await.unwrap());
    assert_eq!(
        *reasons.lock().unwrap(),
        [
            ("closed-here".to_string(), ClosingReason::ExplicitClose),
            ("closed-remotely".to_string(), ClosingReason::ExplicitClose),
        ]
    );
    a.shutdown().await;
    assert_eq!(
        reasons.lock().unwrap()[2..],
        [("shut-down".to_string(), ClosingReason::HostShutdown)],
        "the node's shutdown was the last turn of the Spot still open, once"
    );
    stop([b]).await;
}
