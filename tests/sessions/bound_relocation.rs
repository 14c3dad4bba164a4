//! A bound Actor moves live while its client stays connected (seed 000 §3.3): the seal
//! before the capture (42/43), the target's one-way route (44) once it dispatches, the
//! relays held meanwhile submitted in order, and the connection never touched.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::json;
use zlink::object::{Actor, ActorContext, ActorCreation};
use zlink::session::{Packet, SessionContext, StreamListener};
use zlink_testkit::stream_client::{kind, StreamClient};
use zlink_testkit::TestCluster;

use crate::common::WAIT;

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "step", codec = zlink::Json)]
pub struct Step {
    pub n: u64,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "stepped", codec = zlink::Json)]
pub struct Stepped {
    pub n: u64,
    pub by: String,
}

/// A moving Actor: pushes back each step with the node it ran on.
#[derive(Default)]
pub struct Walker;

#[zlink::actor(type = "walker", relocation = recreate)]
impl Walker {
    #[handler]
    async fn step(&mut self, step: Step, ctx: &ActorContext) -> zlink::Result<()> {
        ctx.push(&Stepped {
            n: step.n,
            by: ctx.handle().rid().to_string(),
        })
        .await
    }
}

impl Actor for Walker {}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "join", codec = zlink::Json, reply = Joined)]
pub struct Join {
    pub walker: String,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "joined", codec = zlink::Json)]
pub struct Joined {
    pub owner: String,
}

/// Binds each walker it is asked to join; a packet goes to the walker its `walker`
/// metadata names (the last joined one without it).
#[derive(Default)]
pub struct Lobby {
    walker: Option<String>,
}

#[zlink::session]
impl Lobby {
    #[handler]
    async fn join(&mut self, join: Join, ctx: &SessionContext) -> zlink::Result<Joined> {
        let actor = match ctx
            .handle()
            .actors()
            .get_or_create(&join.walker, Walker::STABLE_TYPE)
            .await?
        {
            ActorCreation::Created(a) | ActorCreation::Existing(a) => a,
        };
        let bound = ctx.bind(&actor).await?;
        self.walker = Some(join.walker);
        Ok(Joined { owner: bound.rid })
    }

    #[on_packet]
    async fn relay_to_walker(&mut self, packet: Packet, ctx: &SessionContext) -> zlink::Result<()> {
        let walker = match packet.metadata().get("walker") {
            Some(named) => named.to_string(),
            None => self.walker.clone().unwrap_or_default(),
        };
        ctx.relay(&walker, packet).await
    }
}

#[tokio::test]
async fn a_bound_actor_relocated_three_times_keeps_its_client_connected_and_loses_nothing() {
    // n0: the gateway; n1 and n2 serve walkers.
    let cluster = TestCluster::on_tcp_with_redis(3, |i, node| {
        if i == 0 {
            node.stream_listener(
                StreamListener::new("clients")
                    .bind("tcp://127.0.0.1:0")
                    .session(Lobby::default),
            )
        } else {
            node.actor_type(Walker::actor_type(|_| Walker).expect("an Actor type"))
        }
    })
    .await;
    cluster
        .node(0)
        .actors()
        .ready(Walker::STABLE_TYPE, 2)
        .await
        .unwrap();
    let endpoint = cluster.node(0).stream_endpoint("clients").unwrap();
    let mut client = StreamClient::tcp(endpoint.trim_start_matches("tcp://"))
        .await
        .unwrap();
    let joined = client
        .call_json(1, "join", json!({ "walker": "w" }), WAIT)
        .await
        .unwrap();
    let mut owner = joined.value()["owner"].as_str().unwrap().to_string();
    // Steps keep flowing while the walker moves n1 <-> n2 three times.
    let steps = 300u64;
    let moving = Arc::new(AtomicBool::new(true));
    let mover = {
        let nodes: Vec<zlink::Runtime> = (1..=2).map(|i| cluster.node(i).clone()).collect();
        let moving = moving.clone();
        let first = owner.clone();
        tokio::spawn(async move {
            let mut at = first;
            for _ in 0..3 {
                tokio::time::sleep(std::time::Duration::from_millis(30)).await;
                let (from, to) = if at == "n1" { (0, "n2") } else { (1, "n1") };
                let moved = nodes[from]
                    .actors()
                    .relocate("w", Some(to))
                    .await
                    .expect("moved");
                at = moved.rid;
            }
            moving.store(false, Ordering::SeqCst);
            at
        })
    };
    let mut seen = Vec::new();
    let mut by = std::collections::BTreeSet::new();
    for n in 1..=steps {
        client.send_json("step", json!({ "n": n })).await.unwrap();
        if n % 30 == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
    let last_owner = mover.await.unwrap();
    while seen.len() < steps as usize {
        let packet = client
            .next(WAIT)
            .await
            .expect("every step's push, connection open");
        assert_eq!(packet.kind, kind::SEND, "{packet:?}");
        seen.push(packet.value()["n"].as_u64().unwrap());
        by.insert(packet.value()["by"].as_str().unwrap().to_string());
    }
    let expected: Vec<u64> = (1..=steps).collect();
    assert_eq!(seen, expected, "no step lost, duplicated or reordered");
    assert!(by.len() >= 2, "the steps ran on both nodes: {by:?}");
    // After the moves, the binding's route is the last owner's.
    client
        .send_json("step", json!({ "n": steps + 1 }))
        .await
        .unwrap();
    let after = client.next(WAIT).await.unwrap();
    owner.clone_from(&last_owner);
    assert_eq!(after.value()["by"], owner);
    cluster.shutdown().await;
}

#[tokio::test]
async fn moving_one_bound_actor_keeps_the_other_actors_routes_of_the_same_session() {
    let cluster = TestCluster::on_tcp_with_redis(3, |i, node| {
        if i == 0 {
            node.stream_listener(
                StreamListener::new("clients")
                    .bind("tcp://127.0.0.1:0")
                    .session(Lobby::default),
            )
        } else {
            node.actor_type(Walker::actor_type(|_| Walker).expect("an Actor type"))
        }
    })
    .await;
    cluster
        .node(0)
        .actors()
        .ready(Walker::STABLE_TYPE, 2)
        .await
        .unwrap();
    // Both walkers made on n1, then bound by one session.
    for id in ["a", "b"] {
        cluster
            .node(1)
            .actors()
            .create(id, Walker::STABLE_TYPE)
            .await
            .unwrap();
    }
    let owner_of = |id: &str| {
        let node = cluster.node(0).clone();
        let id = id.to_string();
        async move { node.actors().find(&id).await.unwrap().unwrap().rid }
    };
    let (a_at, b_at) = (owner_of("a").await, owner_of("b").await);
    let endpoint = cluster.node(0).stream_endpoint("clients").unwrap();
    let mut client = StreamClient::tcp(endpoint.trim_start_matches("tcp://"))
        .await
        .unwrap();
    for (seq, id) in [(1, "a"), (2, "b")] {
        let joined = client
            .call_json(seq, "join", json!({ "walker": id }), WAIT)
            .await
            .unwrap();
        assert_eq!(joined.kind, kind::RESPONSE);
    }
    // Move only `a`, to the other walker node.
    let a_index = if a_at == "n1" { 1 } else { 2 };
    let to = if a_at == "n1" { "n2" } else { "n1" };
    let moved = cluster
        .node(a_index)
        .actors()
        .relocate("a", Some(to))
        .await
        .unwrap();
    assert_eq!(moved.rid, to);
    let step = |walker: &str, n: u64| {
        let mut packet = zlink_testkit::stream_client::StreamPacket::json(
            kind::SEND,
            "step",
            &json!({ "n": n }),
        );
        packet.metadata.push(("walker".into(), walker.into()));
        packet
    };
    client.write(&step("a", 1)).await.unwrap();
    client.write(&step("b", 2)).await.unwrap();
    let mut by = std::collections::BTreeMap::new();
    while by.len() < 2 {
        let push = client.next(WAIT).await.unwrap();
        by.insert(
            push.value()["n"].as_u64().unwrap(),
            push.value()["by"].as_str().unwrap().to_string(),
        );
    }
    assert_eq!(by[&1], to, "a's route switched to its new owner");
    assert_eq!(by[&2], b_at, "b's route is untouched");
    cluster.shutdown().await;
}
