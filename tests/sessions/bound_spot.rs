//! A bound Actor's Spot hears its session's end wherever the Spot runs (seed 000 §3.2,
//! reference §6.5), over real TCP and a real `redis-server`: here a PerActor Spot's shell
//! moved to another node and its member stayed behind, so the Actor's owner tells the
//! Spot's node, once per binding.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::json;
use zlink::object::{Actor, ActorContext, ActorRef, Execution, Spot, SpotContext, SpotCreation};
use zlink::session::{Packet, SessionContext, StreamListener};
use zlink::{Bytes, ErrorKind};
use zlink_testkit::stream_client::{kind, StreamClient};
use zlink_testkit::{wait_until, TestCluster};

use crate::common::WAIT;

/// What each Lobby heard: (the node it ran on, the Actor whose session ended).
type Heard = Arc<Mutex<Vec<(String, String)>>>;

#[derive(Serialize, Deserialize, zlink::Message)]
pub struct Enter {
    pub lobby: String,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(reply = InLobby)]
pub struct Which;

#[derive(Serialize, Deserialize, zlink::Message)]
pub struct InLobby(pub Option<String>);

/// A PerActor Spot: a stateless shell that records every session end it hears.
pub struct Lobby {
    heard: Heard,
}

#[zlink::spot(type = "lobby", relocation = recreate, actors = Member)]
impl Lobby {
    #[on_disconnect_actor]
    async fn disconnected(&mut self, actor: &ActorRef, ctx: &SpotContext) {
        let node = ctx.handle().rid().to_string();
        self.heard
            .lock()
            .unwrap()
            .push((node, actor.id.to_string()));
    }
}

impl Spot for Lobby {}

pub struct Member;

#[zlink::actor(type = "member", relocation = recreate)]
impl Member {
    #[handler]
    async fn enter(&mut self, enter: Enter, ctx: &ActorContext) -> zlink::Result<()> {
        ctx.join_spot(&enter.lobby, Bytes::new())
    }

    #[handler]
    async fn which(&mut self, _which: Which, ctx: &ActorContext) -> zlink::Result<InLobby> {
        Ok(InLobby(ctx.spot().map(|s| s.to_string())))
    }
}

impl Actor for Member {}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "login", codec = zlink::Json, reply = Bound)]
pub struct Login {
    pub member: String,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "bound", codec = zlink::Json)]
pub struct Bound {
    pub owner: String,
}

/// Binds the member the client names; nothing else.
#[derive(Default)]
pub struct Door;

#[zlink::session]
impl Door {
    #[handler]
    async fn login(&mut self, login: Login, ctx: &SessionContext) -> zlink::Result<Bound> {
        let actor = ctx
            .handle()
            .actors()
            .find(&login.member)
            .await?
            .ok_or_else(|| zlink::Error::new(ErrorKind::NotFound, "no such member"))?;
        let bound = ctx.bind(&actor).await?;
        Ok(Bound { owner: bound.rid })
    }

    #[on_packet]
    async fn other(&mut self, _packet: Packet, _ctx: &SessionContext) -> zlink::Result<()> {
        Ok(())
    }
}

/// n0: the gateway; n1: members and lobbies; n2: lobbies only, so a lobby's shell can
/// move there while its member cannot follow.
async fn cluster(heard: &Heard) -> (TestCluster, String) {
    let heard = heard.clone();
    let cluster = TestCluster::on_tcp_with_redis(3, move |i, node| {
        let heard = heard.clone();
        let lobbies = Lobby::spot_type(move |_| Lobby {
            heard: heard.clone(),
        })
        .and_then(|t| t.execution(Execution::PerActor))
        .expect("a Spot type");
        match i {
            0 => node.stream_listener(
                StreamListener::new("clients")
                    .bind("tcp://127.0.0.1:0")
                    .session(Door::default),
            ),
            1 => node
                .spot_type(lobbies)
                .actor_type(Member::actor_type(|_| Member).expect("an Actor type")),
            _ => node.spot_type(lobbies),
        }
    })
    .await;
    let endpoint = cluster.node(0).stream_endpoint("clients").expect("bound");
    (cluster, endpoint.trim_start_matches("tcp://").to_string())
}

#[tokio::test]
async fn a_closed_connection_reaches_the_actors_spot_on_another_node_once_per_binding() {
    let heard = Heard::default();
    let (cluster, address) = cluster(&heard).await;
    let (gateway, n1) = (cluster.node(0), cluster.node(1));
    n1.actors().ready("member", 1).await.unwrap();
    let lobby = match n1.spots().get_or_create("hall", "lobby", "").await.unwrap() {
        SpotCreation::Created(spot, _) | SpotCreation::Existing(spot) => spot,
        SpotCreation::Rejected(_) => panic!("a lobby takes every creation"),
    };
    if lobby.rid == "n2" {
        // Placement chose n2: move it to n1 (a move runs on the Spot's owner).
        let at = cluster.node(2).spots().relocate("hall", Some("n1")).await;
        assert_eq!(at.unwrap().rid, "n1");
    }
    let member = gateway.actors().create("mia", "member").await.unwrap();
    assert_eq!(member.rid, "n1", "only n1 runs members");
    MemberClient::new(gateway, "mia")
        .enter(&Enter {
            lobby: "hall".into(),
        })
        .await
        .unwrap();
    let in_lobby = || async {
        MemberClient::new(gateway, "mia")
            .which(&Which)
            .await
            .unwrap()
            .0
            .as_deref()
            == Some("hall")
    };
    wait_until(WAIT, "mia is in the hall", in_lobby).await;
    // The hall's shell moves to n2; mia cannot follow (n2 runs no members) and stays a
    // member on n1.
    let moved = n1.spots().relocate("hall", Some("n2")).await.unwrap();
    assert_eq!(moved.rid, "n2");
    assert_eq!(
        gateway.actors().find("mia").await.unwrap().unwrap().rid,
        "n1"
    );
    assert!(in_lobby().await, "still the hall's member");

    for round in 1..=2 {
        let mut client = StreamClient::tcp(&address).await.unwrap();
        let bound = client
            .call_json(1, "login", json!({ "member": "mia" }), WAIT)
            .await
            .unwrap();
        assert_eq!(bound.kind, kind::RESPONSE, "{:?}", bound.error());
        assert_eq!(bound.value()["owner"], "n1");
        drop(client);
        wait_until(WAIT, "the hall heard the session end", || async {
            heard.lock().unwrap().len() == round
        })
        .await;
    }
    // Each binding's end was heard once, by the hall where it runs.
    let settle = tokio::time::Instant::now() + std::time::Duration::from_millis(300);
    while tokio::time::Instant::now() < settle {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert_eq!(heard.lock().unwrap().len(), 2, "never told twice");
    }
    let want = vec![("n2".to_string(), "mia".to_string()); 2];
    assert_eq!(*heard.lock().unwrap(), want);
    cluster.shutdown().await;
}
