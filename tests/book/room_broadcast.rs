//! The Sessions chapter's "Broadcasting to a room" recipe, run: three clients log in
//! over TCP, two join one room, and a line said there reaches both, not the third.

use std::time::Duration;

use serde_json::json;
use zlink::session::StreamListener;
use zlink::Runtime;
use zlink_testkit::stream_client::{kind, StreamClient};

zlink_book_snippets::snippet!("sessions.md", "room-messages");

zlink_book_snippets::snippet!("sessions.md", "room-spot");

zlink_book_snippets::snippet!("sessions.md", "room-member");

zlink_book_snippets::snippet!("sessions.md", "room-session");

async fn node() -> zlink::Result<Runtime> {
    Runtime::builder()
        .mesh_name("rooms")
        .listen("tcp://127.0.0.1:0")
        .location_store(<dyn zlink::store::LocationStore>::in_memory())
        .spot_type(Room::spot_type(|_| Room::default())?)
        .actor_type(Member::actor_type(|_| Member::default())?)
        .stream_listener(
            StreamListener::new("clients")
                .bind("tcp://127.0.0.1:0")
                .session(Client::default),
        )
        .build()?
        .start()
        .await
}

#[tokio::test]
async fn a_line_said_in_a_room_is_pushed_to_every_members_client_and_no_one_else() {
    let node = node().await.unwrap();
    node.actors().ready(Member::STABLE_TYPE, 1).await.unwrap();
    let endpoint = node.stream_endpoint("clients").unwrap();
    let address = endpoint.trim_start_matches("tcp://");
    let wait = Duration::from_secs(5);
    let mut clients = Vec::new();
    for (seq, (name, room)) in [("ann", "den"), ("bob", "den"), ("cid", "attic")]
        .into_iter()
        .enumerate()
    {
        let mut client = StreamClient::tcp(address).await.unwrap();
        let seq = seq as u64 * 2 + 1;
        let login = client
            .call_json(seq, "login", json!({ "name": name }), wait)
            .await
            .unwrap();
        assert_eq!(login.kind, kind::RESPONSE, "{:?}", login.error());
        let joined = client
            .call_json(seq + 1, "join", json!({ "room": room }), wait)
            .await
            .unwrap();
        assert_eq!(joined.kind, kind::RESPONSE, "{:?}", joined.error());
        clients.push(client);
    }
    clients[0]
        .send_json("say", json!({ "text": "hello, den" }))
        .await
        .unwrap();
    for client in &mut clients[..2] {
        let line = client.next(wait).await.unwrap();
        assert_eq!((line.kind, line.name.as_str()), (kind::SEND, "line"));
        assert_eq!(line.value(), json!({ "from": "ann", "text": "hello, den" }));
    }
    assert!(
        clients[2].next(Duration::from_millis(300)).await.is_err(),
        "the attic heard nothing"
    );
    node.shutdown().await;
}
