//! Typed creation arguments (`create = Args` and an `#[on_create]` method) and the
//! generated client's one-call `get_or_create`, over real TCP and a real `redis-server`.

use super::*;

zlink_book_snippets::snippet!("spots.md", "typed");

async fn hall_server(rid: &str, store: &Arc<dyn zlink::store::LocationStore>) -> Runtime {
    start(
        discovered_node(rid, store, quick_lease())
            .spot_type(Hall::spot_type(|_| Hall::default()).expect("a Spot type")),
    )
    .await
}

/// The creator's arguments reach `#[on_create]` typed, the client is one call, and a
/// second call finds the Spot (its arguments are not applied again).
#[tokio::test]
async fn typed_creation_arguments_reach_on_create_and_the_client_is_one_call() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let server = hall_server("halls", &store).await;
    let caller = plain_node("caller", &store).await;
    caller
        .spots()
        .ready(Hall::STABLE_TYPE, 1)
        .await
        .expect("ready");

    zlink_book_snippets::statements!("spots.md", "typed_call");
    assert_eq!(hall.capacity(AskCapacity).await.expect("answered").0, 40);
    let again = HallClient::get_or_create(&server, "main", &OpenHall { capacity: 7 })
        .await
        .expect("found");
    assert_eq!(again.capacity(AskCapacity).await.expect("answered").0, 40);
    stop([caller, server]).await;
}

/// A declined creation is `Rejected` with the hook's reply, and so is a request that is
/// not the declared arguments (raw bytes through the untyped call); nothing stays.
#[tokio::test]
async fn a_declined_or_undecodable_typed_creation_is_rejected_and_leaves_nothing() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let server = hall_server("halls", &store).await;
    server
        .spots()
        .ready(Hall::STABLE_TYPE, 1)
        .await
        .expect("ready");

    let err = HallClient::get_or_create(&server, "empty", &OpenHall { capacity: 0 })
        .await
        .expect_err("declined");
    assert_eq!(err.kind(), Some(ErrorKind::Rejected));
    assert!(err.to_string().contains("a hall holds someone"), "{err}");
    assert!(server.spots().find("empty").await.expect("store").is_none());

    let raw = server
        .spots()
        .get_or_create(
            "garbled",
            Hall::STABLE_TYPE,
            Bytes::from_static(b"\xff\x00"),
        )
        .await
        .expect("an outcome");
    let SpotCreation::Rejected(reply) = raw else {
        panic!("undecodable arguments were accepted: {raw:?}");
    };
    assert!(
        String::from_utf8_lossy(&reply).contains("not a OpenHall"),
        "{reply:?}"
    );
    assert!(server
        .spots()
        .find("garbled")
        .await
        .expect("store")
        .is_none());
    stop([server]).await;
}
