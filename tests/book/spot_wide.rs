//! The code of the Relocation chapter's "Moving a Spot" section: a table Spot whose guests
//! (Actors) sit at it, moved with them as one unit, state and all.

use std::sync::Arc;

use zlink::store::{LocationStore, RelocationStore};
use zlink::Runtime;

// ANCHOR: table
use serde::{Deserialize, Serialize};
use zlink::object::{
    Actor, ActorContext, ActorRef, JoinDecision, RelocationState, Spot, SpotContext,
};
use zlink::Bytes;

/// Something said at the table (one-way).
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Say(pub String);

/// Asks the table what was said and who sits at it.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Scene)]
pub struct Look;

/// What was said, who sits, and which node runs the table.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Scene {
    pub said: Vec<String>,
    pub guests: Vec<String>,
    pub node: String,
}

/// A table: its guests run one turn at a time with it (`SpotWide`, the default) and move
/// with it; what was said and who sits are its state, kept across a move (`preserve`).
pub struct Table {
    node: String,
    said: Vec<String>,
    guests: Vec<String>,
}

/// What of a table moves with it.
#[derive(Serialize, Deserialize, zlink::Message)]
struct TableState {
    said: Vec<String>,
    guests: Vec<String>,
}

impl RelocationState for Table {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        let state = TableState {
            said: self.said.clone(),
            guests: self.guests.clone(),
        };
        Ok(zlink::Message::encode(&state)?.to_vec())
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        let state: TableState = zlink::Message::decode(state)?;
        (self.said, self.guests) = (state.said, state.guests);
        Ok(())
    }
}

#[zlink::spot(type = "table", relocation = preserve, actors = Guest)]
impl Table {
    #[handler]
    async fn say(&mut self, say: Say, _ctx: &SpotContext) -> zlink::Result<()> {
        self.said.push(say.0);
        Ok(())
    }

    #[handler]
    async fn look(&mut self, _look: Look, _ctx: &SpotContext) -> zlink::Result<Scene> {
        Ok(Scene {
            said: self.said.clone(),
            guests: self.guests.clone(),
            node: self.node.clone(),
        })
    }

    /// Whoever asks may sit.
    #[on_actor_join]
    async fn seat(
        &mut self,
        guest: &ActorRef,
        _request: Bytes,
        _ctx: &SpotContext,
    ) -> JoinDecision {
        self.guests.push(guest.id.to_string());
        JoinDecision::Accept(Bytes::new())
    }
}

impl Spot for Table {}

/// Asks a guest to sit at a table (by its Spot ID).
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Sit(pub String);

/// A guest; with nothing of its own to keep, it is made afresh where it moves.
pub struct Guest;

#[zlink::actor(type = "guest", relocation = recreate)]
impl Guest {
    #[handler]
    async fn sit(&mut self, sit: Sit, ctx: &ActorContext) -> zlink::Result<()> {
        ctx.join_spot(&sit.0, Bytes::new())
    }
}

impl Actor for Guest {}
// ANCHOR_END: table

/// A node that serves tables and guests, on the stores the test's nodes share.
async fn node(
    rid: &str,
    location: &Arc<dyn LocationStore>,
    relocation: &Arc<dyn RelocationStore>,
) -> zlink::Result<Runtime> {
    let host = rid.to_string();
    Runtime::builder()
        .mesh_name("book-tables")
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
        .location_store(location.clone())
        .relocation_store(relocation.clone())
        .spot_type(Table::spot_type(move |_| Table {
            node: host.clone(),
            said: Vec::new(),
            guests: Vec::new(),
        })?)
        .actor_type(Guest::actor_type(|_| Guest)?)
        .build()?
        .start()
        .await
}

#[tokio::test]
async fn a_table_moves_with_its_guests_and_what_was_said() -> zlink::Result<()> {
    let location = <dyn LocationStore>::in_memory();
    let relocation = <dyn RelocationStore>::in_memory();
    let a = node("a", &location, &relocation).await?;
    let b = node("b", &location, &relocation).await?;
    a.spots().ready(Table::STABLE_TYPE, 2).await?;
    // The table on a, and two guests there (a guest sits at a table on its own node;
    // placement picks the node of each creation, so creations elsewhere are skipped).
    let mut table = String::new();
    for n in 0.. {
        table = format!("t{n}");
        let created = a
            .spots()
            .get_or_create(&table, Table::STABLE_TYPE, Bytes::new())
            .await?;
        if matches!(created, zlink::object::SpotCreation::Created(ref at, _) if at.rid == "a") {
            break;
        }
    }
    let mut guests = Vec::new();
    for n in 0.. {
        let guest = format!("guest-{n}");
        if a.actors().create(&guest, Guest::STABLE_TYPE).await?.rid == "a" {
            GuestClient::new(&a, &guest).sit(Sit(table.clone())).await?;
            guests.push(guest);
        }
        if guests.len() == 2 {
            break;
        }
    }
    // A join completes after the guest's turn: wait until the table has seated both.
    let at_table = TableClient::new(&b, &table);
    zlink_testkit::wait_until(
        std::time::Duration::from_secs(5),
        "both guests seated",
        || async {
            at_table
                .look(Look)
                .await
                .is_ok_and(|scene| scene.guests.len() == 2)
        },
    )
    .await;
    at_table.say(Say("welcome".into())).await?;

    // ANCHOR: move_unit
    // The table and every guest seated at it now move to b, as one unit.
    let moved = a.spots().relocate(&table, Some("b")).await?;
    assert_eq!(moved.rid, "b");
    // ANCHOR_END: move_unit

    let scene = TableClient::new(&a, &table).look(Look).await?;
    assert_eq!(scene.node, "b");
    assert_eq!(scene.said, ["welcome"]);
    assert_eq!(scene.guests, guests);
    for guest in &guests {
        assert_eq!(
            a.actors().find(guest).await?.map(|g| g.rid),
            Some("b".to_string())
        );
    }
    b.shutdown().await;
    a.shutdown().await;
    Ok(())
}
