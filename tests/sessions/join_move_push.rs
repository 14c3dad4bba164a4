//! A bound Actor that joins a Spot on another node moves there with its binding, and its
//! first turn there (`on_join_completed`) can already push to its session: the binding
//! is back before the Actor's dispatch opens. Over real TCP and a real `redis-server`.

use serde::{Deserialize, Serialize};
use serde_json::json;
use zlink::object::{Actor, ActorContext, JoinOutcome, Spot, SpotCreation};
use zlink::session::{Packet, SessionContext, StreamListener};
use zlink::{Bytes, ErrorKind};
use zlink_testkit::stream_client::{kind, StreamClient};
use zlink_testkit::TestCluster;

use crate::common::WAIT;

#[derive(Serialize, Deserialize, zlink::Message)]
pub struct Go {
    pub hall: String,
}

/// Pushed from `on_join_completed`: where the walker arrived.
#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "arrived", codec = zlink::Json)]
pub struct Arrived {
    pub hall: String,
    pub node: String,
}

/// A hall on each node; walkers join them in turn.
#[derive(Default)]
pub struct Hall;

#[zlink::spot(type = "hall", relocation = recreate, actors = Walker)]
impl Hall {}

impl Spot for Hall {}

/// Joins the hall it is sent to and tells its client where it arrived.
#[derive(Default, Serialize, Deserialize)]
pub struct Walker;

impl zlink::object::RelocationState for Walker {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        Ok(Vec::new())
    }

    fn restore(&mut self, _state: &[u8]) -> zlink::Result<()> {
        Ok(())
    }
}

#[zlink::actor(type = "walker", relocation = preserve)]
impl Walker {
    #[handler]
    async fn go(&mut self, go: Go, ctx: &ActorContext) -> zlink::Result<()> {
        ctx.join_spot(&go.hall, Bytes::new())
    }
}

#[zlink::async_trait]
impl Actor for Walker {
    async fn on_join_completed(&mut self, ctx: &ActorContext, outcome: JoinOutcome) {
        let JoinOutcome::Accepted { spot, .. } = outcome else {
            return;
        };
        let arrived = Arrived {
            hall: spot.to_string(),
            node: ctx.handle().rid().to_string(),
        };
        // The test counts these: a push that fails here is one it never sees.
        let _ = ctx.push(&arrived).await;
    }
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "login", codec = zlink::Json, reply = LoggedIn)]
pub struct Login {
    pub walker: String,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "logged-in", codec = zlink::Json)]
pub struct LoggedIn;

/// Binds the walker the client names.
#[derive(Default)]
pub struct Gate;

#[zlink::session]
impl Gate {
    #[handler]
    async fn login(&mut self, login: Login, ctx: &SessionContext) -> zlink::Result<LoggedIn> {
        let actor = ctx
            .handle()
            .actors()
            .find(&login.walker)
            .await?
            .ok_or_else(|| zlink::Error::new(ErrorKind::NotFound, "no such walker"))?;
        ctx.bind(&actor).await?;
        Ok(LoggedIn)
    }

    #[on_packet]
    async fn other(&mut self, _packet: Packet, _ctx: &SessionContext) -> zlink::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bound_actor_moved_by_a_join_pushes_from_its_first_turn_on_the_new_node() {
    // n0: the gateway; n1 and n2: a hall and walkers each.
    let cluster = TestCluster::on_tcp_with_redis(3, |i, node| match i {
        0 => node.stream_listener(
            StreamListener::new("clients")
                .bind("tcp://127.0.0.1:0")
                .session(Gate::default),
        ),
        _ => node
            .spot_type(Hall::spot_type(|_| Hall).expect("a Spot type"))
            .actor_type(Walker::actor_type(|_| Walker).expect("an Actor type")),
    })
    .await;
    let gateway = cluster.node(0);
    gateway.spots().ready("hall", 2).await.unwrap();
    gateway.actors().ready("walker", 2).await.unwrap();
    for (hall, rid) in [("hall-1", "n1"), ("hall-2", "n2")] {
        let spot = match gateway
            .spots()
            .get_or_create(hall, "hall", "")
            .await
            .unwrap()
        {
            SpotCreation::Created(spot, _) | SpotCreation::Existing(spot) => spot,
            SpotCreation::Rejected(_) => panic!("a hall takes every creation"),
        };
        if spot.rid != rid {
            let owner = if spot.rid == "n1" { 1 } else { 2 };
            let moved = cluster.node(owner).spots().relocate(hall, Some(rid)).await;
            assert_eq!(moved.unwrap().rid, rid);
        }
    }
    let address = gateway.stream_endpoint("clients").expect("bound");
    let address = address.trim_start_matches("tcp://").to_string();
    // Eight walkers at once, each back and forth between the nodes: every join is a
    // move, and every move's first turn pushes.
    let walks = (0..8).map(|n| walk(gateway, &address, format!("walker-{n}")));
    futures::future::join_all(walks).await;
    cluster.shutdown().await;
}

/// Creates walker `name`, binds a client to it and sends it 20 times to the hall on the
/// other node, reading each arrival's push.
async fn walk(gateway: &zlink::Runtime, address: &str, name: String) {
    gateway.actors().create(&name, "walker").await.unwrap();
    let mut client = StreamClient::tcp(address).await.unwrap();
    let login = client
        .call_json(1, "login", json!({ "walker": name }), WAIT)
        .await
        .unwrap();
    assert_eq!(login.kind, kind::RESPONSE, "{:?}", login.error());
    let walker = WalkerClient::new(gateway, name.as_str());
    for trip in 0..20 {
        let (hall, node) = if trip % 2 == 0 {
            ("hall-2", "n2")
        } else {
            ("hall-1", "n1")
        };
        walker.go(&Go { hall: hall.into() }).await.unwrap();
        let pushed = loop {
            let packet = client.next(WAIT).await.unwrap_or_else(|end| {
                panic!("{name}, trip {trip}: no push from its first turn on {node}: {end:?}")
            });
            if packet.kind == kind::SEND && packet.name == "arrived" {
                break packet.value();
            }
        };
        let arrived = (pushed["hall"].as_str(), pushed["node"].as_str());
        assert_eq!(arrived, (Some(hall), Some(node)), "{name}, trip {trip}");
    }
}
