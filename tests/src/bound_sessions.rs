//! The bound-session cluster the session and conformance tests share: a gateway node whose
//! sessions log a player in (bind) and relay the rest to it, and a players node.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{Actor, ActorContext, ActorCreation, ActorRef};
use zlink::session::{Packet, SessionContext, StreamListener};
use zlink::ErrorKind;
use zlink_testkit::TestCluster;

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "move", codec = zlink::Json)]
pub struct Move {
    pub n: u64,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "moved", codec = zlink::Json)]
pub struct Moved {
    pub n: u64,
    pub by: String,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "where", codec = zlink::Json, reply = Position)]
pub struct Where;

/// Push something now, and answer whether it could.
#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "shout", codec = zlink::Json, reply = Position)]
pub struct Shout;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(name = "position", codec = zlink::Json)]
pub struct Position {
    pub moves: Vec<u64>,
}

// ANCHOR: actor
/// A player Actor: records its moves and pushes each back to its session.
#[derive(Default)]
pub struct Player {
    moves: Vec<u64>,
}

#[zlink::actor(type = "player", relocation = disable)]
impl Player {
    #[handler]
    async fn step(&mut self, step: Move, ctx: &ActorContext) -> zlink::Result<()> {
        self.moves.push(step.n);
        ctx.push(&Moved {
            n: step.n,
            by: ctx.handle().rid().to_string(),
        })
        .await
    }

    #[handler]
    async fn shout(&mut self, _shout: Shout, ctx: &ActorContext) -> zlink::Result<Position> {
        ctx.push(&Moved {
            n: 0,
            by: ctx.handle().rid().to_string(),
        })
        .await?;
        Ok(Position {
            moves: self.moves.clone(),
        })
    }

    #[handler]
    async fn locate(&mut self, _where: Where, _ctx: &ActorContext) -> zlink::Result<Position> {
        Ok(Position {
            moves: self.moves.clone(),
        })
    }
}

impl Actor for Player {}
// ANCHOR_END: actor

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "login", codec = zlink::Json, reply = LoggedIn)]
pub struct Login {
    pub player: String,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "logged-in", codec = zlink::Json)]
pub struct LoggedIn {
    pub owner: String,
}

// ANCHOR: gateway
#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "logout", codec = zlink::Json)]
pub struct Logout;

/// Told to a client whose player logged in elsewhere.
#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "replaced", codec = zlink::Json)]
pub struct Replaced {
    pub player: String,
}

/// The gateway's session: `login` binds the player, everything else is relayed to it.
#[derive(Default)]
pub struct Gateway {
    player: Option<String>,
}

#[zlink::session]
impl Gateway {
    #[handler]
    async fn login(&mut self, login: Login, ctx: &SessionContext) -> zlink::Result<LoggedIn> {
        let actor = match ctx
            .handle()
            .actors()
            .get_or_create(&login.player, Player::STABLE_TYPE)
            .await?
        {
            ActorCreation::Created(actor) | ActorCreation::Existing(actor) => actor,
        };
        let bound = ctx.bind(&actor).await?;
        self.player = Some(login.player);
        Ok(LoggedIn { owner: bound.rid })
    }

    /// The client logs out but keeps its connection.
    #[handler]
    async fn logout(&mut self, _logout: Logout, ctx: &SessionContext) -> zlink::Result<()> {
        match self.player.take() {
            Some(player) => ctx.notify_disconnected(&player).await,
            None => Ok(()),
        }
    }

    #[on_actor_binding_replaced]
    async fn replaced(&mut self, actor: ActorRef, ctx: &SessionContext) {
        // Tell the client before the session closes.
        let _ = ctx
            .send(&Replaced {
                player: actor.id.to_string(),
            })
            .await;
    }

    #[on_packet]
    async fn relay_to_player(&mut self, packet: Packet, ctx: &SessionContext) -> zlink::Result<()> {
        let Some(player) = &self.player else {
            return Err(zlink::Error::new(
                ErrorKind::InvalidOperation,
                "log in first",
            ));
        };
        ctx.relay(player, packet).await
    }
}
// ANCHOR_END: gateway

/// The players node's Entry Spot hooks: which Actors' sessions disconnected.
#[derive(Clone, Default)]
pub struct Disconnects(pub std::sync::Arc<std::sync::Mutex<Vec<String>>>);

#[zlink::async_trait]
impl zlink::object::EntryHooks for Disconnects {
    async fn on_disconnect_actor(&mut self, _ctx: &zlink::object::SpotContext, actor: &ActorRef) {
        self.0.lock().unwrap().push(actor.id.to_string());
    }
}

/// [`cluster`], with n1's Entry Spot recording into `disconnects` every session end it
/// hears.
pub async fn cluster_with(disconnects: &Disconnects) -> (TestCluster, String) {
    let heard = disconnects.clone();
    let cluster = TestCluster::on_tcp_with_redis(2, move |i, node| {
        if i == 0 {
            node.route_cache_max_age(Duration::ZERO).stream_listener(
                StreamListener::new("clients")
                    .bind("tcp://127.0.0.1:0")
                    .session(Gateway::default),
            )
        } else {
            let heard = heard.clone();
            node.actor_type(Player::actor_type(|_| Player::default()).expect("an Actor type"))
                .entry_hooks(move || heard.clone())
        }
    })
    .await;
    cluster
        .node(0)
        .actors()
        .ready(Player::STABLE_TYPE, 1)
        .await
        .expect("n1 takes players");
    let endpoint = cluster.node(0).stream_endpoint("clients").expect("bound");
    (cluster, endpoint.trim_start_matches("tcp://").to_string())
}

/// n0: the gateway, with no route cache (any direct call reads the store); n1: players.
pub async fn cluster() -> (TestCluster, String) {
    cluster_with(&Disconnects::default()).await
}

/// `gateways` nodes (n0..) whose STREAM listener "clients" runs [`Gateway`] sessions,
/// then `players` nodes serving [`Player`] Actors, on real TCP and Redis.
pub async fn gateways_and_players(gateways: usize, players: usize) -> TestCluster {
    TestCluster::on_tcp_with_redis(gateways + players, move |i, node| {
        if i < gateways {
            node.stream_listener(
                StreamListener::new("clients")
                    .bind("tcp://127.0.0.1:0")
                    .session(Gateway::default),
            )
        } else {
            node.actor_type(Player::actor_type(|_| Player::default()).expect("an Actor type"))
        }
    })
    .await
}
