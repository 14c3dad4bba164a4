//! The Actor code shown in the book's "Spots and Actors" chapter: a player Actor declared
//! with `#[zlink::actor]`, created in its node's Entry Spot, called by ID from another
//! node, joining a table Spot on its node and leaving it, over real TCP on 127.0.0.1.

use serde::{Deserialize, Serialize};
use zlink::Runtime;

// ANCHOR: actor
use zlink::object::{Actor, ActorContext, JoinOutcome};
use zlink::Bytes;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Sit {
    pub table: String,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Stand;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Seat)]
pub struct WhereAmI;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Seat {
    pub spot: Option<String>,
    pub last_join: String,
}

/// A card player. Its handlers take `&mut self`: an Actor runs one message at a time.
#[derive(Default)]
pub struct Player {
    last_join: String,
}

#[zlink::actor(type = "player", relocation = recreate)]
impl Player {
    /// Registers a Join of the table; it runs when this handler has ended.
    #[handler]
    async fn sit(&mut self, sit: Sit, ctx: &ActorContext) -> zlink::Result<()> {
        ctx.join_spot(&sit.table, Bytes::from_static(b"one seat please"))
    }

    /// Back to this node's Entry Spot.
    #[handler]
    async fn stand(&mut self, _stand: Stand, ctx: &ActorContext) -> zlink::Result<()> {
        ctx.leave_spot()
    }

    #[handler]
    async fn where_am_i(&mut self, _q: WhereAmI, ctx: &ActorContext) -> zlink::Result<Seat> {
        Ok(Seat {
            spot: ctx.spot().map(|s| s.to_string()),
            last_join: self.last_join.clone(),
        })
    }
}

#[zlink::async_trait]
impl Actor for Player {
    /// How a Join ended: it runs before any message that came after it.
    async fn on_join_completed(&mut self, _ctx: &ActorContext, outcome: JoinOutcome) {
        self.last_join = match outcome {
            JoinOutcome::Accepted { reply, .. } => String::from_utf8_lossy(&reply).into_owned(),
            JoinOutcome::Rejected { reply } => {
                format!("rejected: {}", String::from_utf8_lossy(&reply))
            }
            JoinOutcome::Failed(e) => format!("failed: {e}"),
        };
    }
}
// ANCHOR_END: actor

// ANCHOR: table
use zlink::object::{ActorRef, JoinDecision, Spot, SpotContext};

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Seated)]
pub struct Seats;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Seated(pub Vec<String>);

/// A card table that seats up to four players.
#[derive(Default)]
pub struct Table {
    seated: Vec<String>,
}

#[zlink::spot(type = "table", relocation = disable, actors = Player)]
impl Table {
    #[handler]
    async fn seats(&mut self, _q: Seats, _ctx: &SpotContext) -> zlink::Result<Seated> {
        Ok(Seated(self.seated.clone()))
    }

    #[on_actor_join]
    async fn admit(
        &mut self,
        _actor: &ActorRef,
        _request: Bytes,
        _ctx: &SpotContext,
    ) -> JoinDecision {
        if self.seated.len() < 4 {
            JoinDecision::Accept(Bytes::from_static(b"welcome"))
        } else {
            JoinDecision::Reject(Bytes::from_static(b"table full"))
        }
    }

    #[on_joined_actor]
    async fn sat_down(&mut self, actor: &ActorRef, _ctx: &SpotContext) {
        self.seated.push(actor.id.to_string());
    }

    #[on_leave_actor]
    async fn stood_up(&mut self, actor: &ActorRef, _ctx: &SpotContext) {
        self.seated.retain(|p| p != actor.id.as_str());
    }
}

impl Spot for Table {}
// ANCHOR_END: table

#[tokio::test]
async fn actors_chapter() -> zlink::Result<()> {
    // ANCHOR: nodes
    use zlink::store::{LocationStore, RelocationStore};

    let store = <dyn LocationStore>::in_memory();
    // Players move between nodes (`relocation = recreate`): the nodes share a Relocation
    // Store too.
    let relocation = <dyn RelocationStore>::in_memory();
    // The game server runs tables and players; its Entry Spot is the players' first home.
    let game = Runtime::builder()
        .mesh_name("cards")
        .rid("game-1")
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .relocation_store(relocation.clone())
        .spot_type(Table::spot_type(|_ctx| Table::default())?)
        .actor_type(Player::actor_type(|_ctx| Player::default())?)
        .build()?
        .start()
        .await?;
    let gateway = Runtime::builder()
        .mesh_name("cards")
        .rid("gateway-1")
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .build()?
        .start()
        .await?;
    // ANCHOR_END: nodes

    // ANCHOR: create
    use zlink::object::ActorCreation;

    // Wait until placement can pick a node for Players, then create one.
    gateway.actors().ready(Player::STABLE_TYPE, 1).await?;
    let ana = gateway.actors().create("ana", Player::STABLE_TYPE).await?;
    assert_eq!(ana.rid, "game-1");
    let again = gateway
        .actors()
        .get_or_create("ana", Player::STABLE_TYPE)
        .await?;
    assert_eq!(again, ActorCreation::Existing(ana.clone()));
    gateway
        .spots()
        .get_or_create("table-1", Table::STABLE_TYPE, "")
        .await?;
    // ANCHOR_END: create

    // ANCHOR: join
    let player = PlayerClient::new(&gateway, "ana");
    player
        .sit(&Sit {
            table: "table-1".into(),
        })
        .await?;
    // The next message runs after the Join.
    let seat = player.where_am_i(&WhereAmI).await?;
    assert_eq!(seat.spot.as_deref(), Some("table-1"));
    assert_eq!(seat.last_join, "welcome");
    let seated = TableClient::new(&gateway, "table-1").seats(&Seats).await?;
    assert_eq!(seated.0, ["ana"]);

    player.stand(&Stand).await?;
    let seat = player.where_am_i(&WhereAmI).await?;
    assert!(seat
        .spot
        .as_deref()
        .is_some_and(zlink::object::is_entry_spot_id));
    // ANCHOR_END: join

    // ANCHOR: destroy
    assert!(gateway.actors().destroy(&ana).await?);
    let gone = player.where_am_i(&WhereAmI).await.unwrap_err();
    assert!(gone.is(zlink::ErrorKind::Unavailable) || gone.is(zlink::ErrorKind::NotFound));
    // ANCHOR_END: destroy

    gateway.shutdown().await;
    game.shutdown().await;
    Ok(())
}
