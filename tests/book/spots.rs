//! The code shown in the book's "Spots" chapter: a chat room Spot declared with
//! `#[zlink::spot]`, created through the Location Store and called by ID from another
//! node over real TCP on 127.0.0.1.

use serde::{Deserialize, Serialize};
use zlink::Runtime;

// ANCHOR: messages
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Joined)]
pub struct Join {
    pub player: String,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Joined {
    pub players: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Say {
    pub player: String,
    pub text: String,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Transcript)]
pub struct Read;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Transcript {
    pub lines: Vec<String>,
}
// ANCHOR_END: messages

// ANCHOR: spot
use zlink::object::{CreateDecision, Spot, SpotContext};
use zlink::Bytes;

/// One chat room. Its handlers take `&mut self`: a Room runs one message at a time.
#[derive(Default)]
pub struct Room {
    topic: String,
    players: Vec<String>,
    lines: Vec<String>,
}

#[zlink::spot(type = "room", relocation = disable)]
impl Room {
    #[handler]
    async fn join(&mut self, join: Join, _ctx: &SpotContext) -> zlink::Result<Joined> {
        if !self.players.contains(&join.player) {
            self.players.push(join.player);
        }
        Ok(Joined {
            players: self.players.clone(),
        })
    }

    #[handler]
    async fn say(&mut self, say: Say, _ctx: &SpotContext) -> zlink::Result<()> {
        self.lines
            .push(format!("[{}] {}: {}", self.topic, say.player, say.text));
        Ok(())
    }

    #[handler]
    async fn read(&mut self, _read: Read, _ctx: &SpotContext) -> zlink::Result<Transcript> {
        Ok(Transcript {
            lines: self.lines.clone(),
        })
    }
}

/// The lifecycle hooks: `on_create` reads the creator's request (the topic here).
#[zlink::async_trait]
impl Spot for Room {
    async fn on_create(&mut self, _ctx: &SpotContext, request: Bytes) -> CreateDecision {
        match String::from_utf8(request.to_vec()) {
            Ok(topic) if !topic.is_empty() => {
                self.topic = topic;
                CreateDecision::Accept(Bytes::from_static(b"room open"))
            }
            _ => CreateDecision::Reject(Bytes::from_static(b"a room needs a topic")),
        }
    }
}
// ANCHOR_END: spot

#[tokio::test]
async fn spots_chapter() -> zlink::Result<()> {
    // ANCHOR: nodes
    use zlink::store::LocationStore;

    let store = <dyn LocationStore>::in_memory();
    // The Object Server: it creates and runs Rooms.
    let server = Runtime::builder()
        .mesh_name("chat")
        .rid("rooms-1")
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .spot_type(Room::spot_type(|_ctx| Room::default())?)
        .build()?
        .start()
        .await?;
    // Any other node can create Rooms (placement picks a server) and talk to them.
    let lobby = Runtime::builder()
        .mesh_name("chat")
        .rid("lobby-1")
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .build()?
        .start()
        .await?;
    // ANCHOR_END: nodes

    // ANCHOR: create
    use zlink::object::SpotCreation;

    // Wait until placement can pick a Room server (the lobby has read it from the store
    // and is connected to it), then create.
    lobby.spots().ready(Room::STABLE_TYPE, 1).await?;
    let created = lobby
        .spots()
        .get_or_create("room-7", Room::STABLE_TYPE, "rust")
        .await?;
    let SpotCreation::Created(room, reply) = created else {
        panic!("room-7 existed already");
    };
    assert_eq!(room.rid, "rooms-1");
    assert_eq!(reply, "room open");
    // Asking again finds it: no second factory, no second on_create.
    let again = lobby
        .spots()
        .get_or_create("room-7", Room::STABLE_TYPE, "rust")
        .await?;
    assert!(matches!(again, SpotCreation::Existing(_)));
    // ANCHOR_END: create

    // ANCHOR: call
    let room7 = RoomClient::new(&lobby, "room-7");
    let joined = room7
        .join(&Join {
            player: "ana".into(),
        })
        .await?;
    assert_eq!(joined.players, ["ana"]);
    room7
        .say(&Say {
            player: "ana".into(),
            text: "hello".into(),
        })
        .await?;
    let transcript = room7.read(&Read).await?;
    assert_eq!(transcript.lines, ["[rust] ana: hello"]);
    // ANCHOR_END: call

    // ANCHOR: close
    assert!(lobby.spots().close(&room).await?);
    // The lobby's cached route is refused by the old owner (nothing ran, nothing is
    // sent anywhere else), and the call reports what the store says now: no Room...
    let gone = room7.read(&Read).await.unwrap_err();
    assert!(gone.is(zlink::ErrorKind::NotFound));
    // ...as every later call does.
    let missing = room7.read(&Read).await.unwrap_err();
    assert!(missing.is(zlink::ErrorKind::NotFound));
    // ANCHOR_END: close

    lobby.shutdown().await;
    server.shutdown().await;
    Ok(())
}
