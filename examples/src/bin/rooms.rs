//! Chat rooms as Spots: three nodes in one process on 127.0.0.1 and the embedded Location
//! Store. Two nodes serve rooms, one is a lobby. Rooms are created from the lobby (placement
//! picks a server), players join and talk by room ID from any node, then one room server
//! stops: its rooms are honestly `Unavailable`, nothing is re-created elsewhere, and the
//! other server's rooms go on.
//!
//! Run: `cargo run -p zlink-examples --bin rooms`
//!
//! With `--redis URL --role server --rid NAME` or `--redis URL --role lobby`, one node per
//! process, finding each other through Redis.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{CreateDecision, Spot, SpotContext, SpotCreation};
use zlink::store::{LocationStore, RedisLocationStore, RedisOptions};
use zlink::{Bytes, ErrorKind, Runtime};

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Members)]
struct Join {
    player: String,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
struct Members {
    players: Vec<String>,
    host: String,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Heard)]
struct Say {
    player: String,
    text: String,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
struct Heard {
    lines: usize,
}

/// One room: its players and what was said, on whichever node runs it.
struct Room {
    host: String,
    topic: String,
    players: Vec<String>,
    lines: Vec<String>,
}

#[zlink::spot(type = "room", relocation = disable)]
impl Room {
    #[handler]
    async fn join(&mut self, join: Join, _ctx: &SpotContext) -> zlink::Result<Members> {
        if !self.players.contains(&join.player) {
            self.players.push(join.player);
        }
        Ok(Members {
            players: self.players.clone(),
            host: self.host.clone(),
        })
    }

    #[handler]
    async fn say(&mut self, say: Say, _ctx: &SpotContext) -> zlink::Result<Heard> {
        self.lines
            .push(format!("[{}] {}: {}", self.topic, say.player, say.text));
        Ok(Heard {
            lines: self.lines.len(),
        })
    }
}

#[zlink::async_trait]
impl Spot for Room {
    async fn on_create(&mut self, _ctx: &SpotContext, request: Bytes) -> CreateDecision {
        self.topic = String::from_utf8_lossy(&request).into_owned();
        CreateDecision::Accept(Bytes::new())
    }
}

const MESH: &str = "rooms";

async fn start_node(
    rid: &str,
    store: &Arc<dyn LocationStore>,
    serves_rooms: bool,
) -> zlink::Result<Runtime> {
    let mut builder = Runtime::builder()
        .mesh_name(MESH)
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone());
    if serves_rooms {
        let host = rid.to_string();
        builder = builder.spot_type(Room::spot_type(move |_| Room {
            host: host.clone(),
            topic: String::new(),
            players: Vec::new(),
            lines: Vec::new(),
        })?);
    }
    builder.build()?.start().await
}

/// Waits until `lobby` is connected to `count` room servers. (A member is connected only
/// after its descriptor, with the Spot types it serves, was read.)
async fn wait_for_servers(lobby: &Runtime, count: usize) -> zlink::Result<()> {
    lobby
        .wait_for_peers(Duration::from_secs(10), |peers| {
            peers.iter().filter(|p| p.rid.starts_with("rooms-")).count() >= count
        })
        .await?;
    Ok(())
}

async fn open_room(lobby: &Runtime, id: &str, topic: &str) -> zlink::Result<String> {
    match lobby
        .spots()
        .get_or_create(id, Room::STABLE_TYPE, topic.to_string())
        .await?
    {
        SpotCreation::Created(room, _) | SpotCreation::Existing(room) => Ok(room.rid),
        SpotCreation::Rejected(_) => {
            Err(zlink::Error::new(ErrorKind::InvalidOperation, "declined"))
        }
    }
}

async fn one_process() -> zlink::Result<()> {
    let store = <dyn LocationStore>::in_memory();
    let east = start_node("rooms-east", &store, true).await?;
    let west = start_node("rooms-west", &store, true).await?;
    let lobby = start_node("lobby", &store, false).await?;
    wait_for_servers(&lobby, 2).await?;

    println!("Opening rooms from the lobby (placement picks a room server):");
    let mut hosts = Vec::new();
    for (id, topic) in [
        ("arena-1", "arena"),
        ("arena-2", "arena"),
        ("tavern", "tavern"),
        ("library", "library"),
    ] {
        let host = open_room(&lobby, id, topic).await?;
        println!("  {id:<8} runs on {host}");
        hosts.push((id, host));
    }

    println!();
    println!("Players join and talk by room ID, from any node:");
    for (id, _) in &hosts {
        let via_east = RoomClient::new(&east, *id);
        let via_west = RoomClient::new(&west, *id);
        via_east
            .join(&Join {
                player: "ana".into(),
            })
            .await?;
        let members = via_west
            .join(&Join {
                player: "bo".into(),
            })
            .await?;
        let heard = RoomClient::new(&lobby, *id)
            .say(&Say {
                player: "ana".into(),
                text: "hello".into(),
            })
            .await?;
        println!(
            "  {id:<8} (on {}): players {:?}, {} line(s)",
            members.host, members.players, heard.lines
        );
    }

    // Stop the node that runs the first room.
    let (doomed_room, doomed_host) = hosts[0].clone();
    let (killed, survivor) = if doomed_host == "rooms-east" {
        (east, west)
    } else {
        (west, east)
    };
    println!();
    println!("Stopping {doomed_host} (its rooms are not handed over: they stay with it)...");
    killed.shutdown().await;
    for (id, host) in &hosts {
        let room = RoomClient::new(&lobby, *id);
        let mut outcome = room
            .say(&Say {
                player: "ana".into(),
                text: "still here?".into(),
            })
            .await;
        // The first call after the crash may still be in flight to the dead node.
        if outcome.is_err() && host != &doomed_host {
            outcome = room
                .say(&Say {
                    player: "ana".into(),
                    text: "still here?".into(),
                })
                .await;
        }
        match outcome {
            Ok(heard) => println!("  {id:<8} on {host}: answered ({} lines)", heard.lines),
            Err(e) => println!(
                "  {id:<8} on {host}: {:?} ({e})",
                e.kind().unwrap_or(ErrorKind::InternalFailure)
            ),
        }
    }
    let again = lobby
        .spots()
        .get_or_create(doomed_room, Room::STABLE_TYPE, "arena".to_string())
        .await?;
    let where_now = match again {
        SpotCreation::Existing(room) => format!("still owned by {} (not re-created)", room.rid),
        other => format!("{other:?}"),
    };
    println!("  get_or_create({doomed_room:?}) -> {where_now}");

    lobby.shutdown().await;
    survivor.shutdown().await;
    Ok(())
}

async fn one_node(redis: &str, role: &str, rid: &str) -> zlink::Result<()> {
    let store: Arc<dyn LocationStore> =
        Arc::new(RedisLocationStore::new(RedisOptions::new(redis, MESH))?);
    match role {
        "server" => {
            let node = start_node(rid, &store, true).await?;
            println!("room server {rid} is up; press Ctrl-C to stop");
            let _ = tokio::signal::ctrl_c().await;
            node.shutdown().await;
        }
        _ => {
            let lobby = start_node(rid, &store, false).await?;
            wait_for_servers(&lobby, 1).await?;
            let host = open_room(&lobby, "arena-1", "arena").await?;
            let members = RoomClient::new(&lobby, "arena-1")
                .join(&Join {
                    player: rid.to_string(),
                })
                .await?;
            println!("arena-1 runs on {host}; players {:?}", members.players);
            lobby.shutdown().await;
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> zlink::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    match value("--redis") {
        Some(redis) => {
            let role = value("--role").unwrap_or_else(|| "lobby".into());
            let rid = value("--rid").unwrap_or_else(|| zlink::generate_rid(&role));
            one_node(&redis, &role, &rid).await
        }
        None => one_process().await,
    }
}
