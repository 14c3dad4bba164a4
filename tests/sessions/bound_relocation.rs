//! A bound Actor moves live while its client stays connected (seed 000 §3.3): the seal
//! before the capture (42/43), the target's one-way route (44) once it dispatches, the
//! relays held meanwhile submitted in order, and the connection never touched.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::json;
use zlink::object::{Actor, ActorContext, ActorCreation};
use zlink::session::{CloseReason, Packet, SessionContext, StreamLimits, StreamListener};
use zlink::RuntimeBuilder;
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

    #[handler]
    async fn locate(&mut self, _: Locate, ctx: &ActorContext) -> zlink::Result<Located> {
        Ok(Located {
            rid: ctx.handle().rid().to_string(),
        })
    }
}

impl Actor for Walker {}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "locate", codec = zlink::Json, reply = Located)]
pub struct Locate;

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "located", codec = zlink::Json)]
pub struct Located {
    pub rid: String,
}

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

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "rejoin", codec = zlink::Json, reply = Joined)]
pub struct Rejoin {
    /// `bind` instead of `bind_or_get`.
    pub plain: bool,
}

/// Binds each walker it is asked to join; a packet goes to the walker its `walker`
/// metadata names (the last joined one without it).
#[derive(Default)]
pub struct Lobby {
    walker: Option<String>,
    /// The reference the last join bound, as it was then.
    joined: Option<zlink::object::ActorRef>,
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
        self.joined = Some(actor);
        Ok(Joined { owner: bound.rid })
    }

    /// Binds the reference the last join took again, as it was then.
    #[handler]
    async fn rejoin(&mut self, rejoin: Rejoin, ctx: &SessionContext) -> zlink::Result<Joined> {
        let Some(joined) = &self.joined else {
            return Err(zlink::Error::new(
                zlink::ErrorKind::InvalidOperation,
                "join first",
            ));
        };
        let bound = if rejoin.plain {
            ctx.bind(joined).await?
        } else {
            ctx.bind_or_get(joined).await?
        };
        assert_eq!(ctx.find(joined.id.as_str()), Some(bound.clone()));
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
    let (cluster, mut client) = walkers(DEFAULT_SEAL_TIMEOUT, |node| node).await;
    let mut owner = join_walker(&mut client).await;
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
    let (cluster, mut client) = walkers(DEFAULT_SEAL_TIMEOUT, |node| node).await;
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

/// The listener's own SessionRelocationSealTimeout.
const DEFAULT_SEAL_TIMEOUT: Duration = Duration::from_secs(10);

/// n0 a gateway whose sealed bindings wait `seal_timeout`; n1 and n2 walker nodes, each
/// built with `fault`.
async fn walkers(
    seal_timeout: Duration,
    fault: fn(RuntimeBuilder) -> RuntimeBuilder,
) -> (TestCluster, StreamClient) {
    let cluster = TestCluster::on_tcp_with_redis(3, move |i, node| {
        if i == 0 {
            let mut limits = StreamLimits::default();
            limits.relocation_seal_timeout = seal_timeout;
            node.stream_listener(
                StreamListener::new("clients")
                    .bind("tcp://127.0.0.1:0")
                    .limits(limits)
                    .session(Lobby::default),
            )
        } else {
            fault(node.actor_type(Walker::actor_type(|_| Walker).expect("an Actor type")))
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
    let client = StreamClient::tcp(endpoint.trim_start_matches("tcp://"))
        .await
        .unwrap();
    (cluster, client)
}

/// Moves walker `w` from node `from` to the other walker node while `client` sends
/// numbered steps 1, 2, … (at most 5,000) until the move ends: how many went out, and
/// how the move ended.
async fn steps_during_move(
    cluster: &TestCluster,
    from: &str,
    client: &mut StreamClient,
) -> (u64, zlink::Result<zlink::object::ActorRef>) {
    let moving = tokio::spawn({
        let source = cluster.node(index_of(from)).clone();
        let to = other_walker_node(from);
        async move { source.actors().relocate("w", Some(to)).await }
    });
    let mut sent = 0u64;
    while !moving.is_finished() && sent < 5_000 {
        sent += 1;
        client
            .send_json("step", json!({ "n": sent }))
            .await
            .unwrap();
        if sent.is_multiple_of(20) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    (sent, moving.await.expect("the move's task"))
}

/// Has `client`'s session join walker `w`: the node the walker runs on.
async fn join_walker(client: &mut StreamClient) -> String {
    let joined = client
        .call_json(1, "join", json!({ "walker": "w" }), WAIT)
        .await
        .unwrap();
    assert_eq!(joined.kind, kind::RESPONSE, "{:?}", joined.error());
    joined.value()["owner"].as_str().unwrap().to_string()
}

fn index_of(rid: &str) -> usize {
    rid.trim_start_matches('n').parse().expect("n<i>")
}

fn other_walker_node(rid: &str) -> &'static str {
    if rid == "n1" {
        "n2"
    } else {
        "n1"
    }
}

#[tokio::test]
async fn command_44_is_one_way_and_never_resent_the_target_does_not_wait_and_a_lost_one_ends_the_session_on_its_seal_timeout(
) {
    // Both walker nodes lose every 44 commit they send.
    let seal_timeout = Duration::from_millis(1500);
    let (cluster, mut client) =
        walkers(seal_timeout, RuntimeBuilder::test_drop_session_routes).await;
    let from = join_walker(&mut client).await;
    let to = other_walker_node(&from);
    client.send_json("step", json!({ "n": 1 })).await.unwrap();
    assert_eq!(client.next(WAIT).await.unwrap().value()["by"], from);
    // The move completes although the session owner never hears the new route: the
    // target does not wait for 44, and serves at once.
    let moved = cluster
        .node(index_of(&from))
        .actors()
        .relocate("w", Some(to))
        .await
        .unwrap();
    let sealed_at = Instant::now();
    assert_eq!(moved.rid, to);
    let located = WalkerClient::new(cluster.node(0), "w")
        .locate(&Locate)
        .await
        .unwrap();
    assert_eq!(
        located.rid, to,
        "the target dispatches while the session is sealed"
    );
    // What the session relays now is held by the seal; no route change ever lifts it
    // (44 is not resent), so the session ends on its seal timeout, and nothing held is
    // delivered to the Actor by any other path.
    client.send_json("step", json!({ "n": 2 })).await.unwrap();
    let mut after = Vec::new();
    let closing = loop {
        match client.next(seal_timeout + WAIT).await {
            Ok(packet) => match packet.closing() {
                Some(closing) => break closing,
                None => after.push(packet.value()),
            },
            Err(end) => panic!("the session ended without its notice: {end:?}"),
        }
    };
    assert_eq!(closing.0, CloseReason::ServerDrain as u8, "{closing:?}");
    assert!(
        sealed_at.elapsed() >= seal_timeout - Duration::from_millis(100),
        "the session ended on the seal timeout, not before: {:?}",
        sealed_at.elapsed()
    );
    assert!(
        after.is_empty(),
        "the held step was not delivered: {after:?}"
    );
    assert!(
        client.closed_with(WAIT).await.is_ok(),
        "the connection closed"
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_move_cancelled_before_relay_ready_releases_its_seal_by_44_abort_and_the_held_relays_go_to_the_source(
) {
    // Every move out of a walker node loses its relay-ready answer: the source cancels
    // and keeps the Actor. A seal never released would end the session in 1 s.
    let (cluster, mut client) = walkers(
        Duration::from_secs(1),
        RuntimeBuilder::test_lose_relay_ready,
    )
    .await;
    let from = join_walker(&mut client).await;
    // Steps go out all through the move, so some are relayed while it seals.
    let (mut sent, moved) = steps_during_move(&cluster, &from, &mut client).await;
    let cancelled = moved.unwrap_err();
    assert!(cancelled.is(zlink::ErrorKind::Unavailable), "{cancelled}");
    // One more after the cancel: the binding is open again on the source's route.
    sent += 1;
    client
        .send_json("step", json!({ "n": sent }))
        .await
        .unwrap();
    let mut seen = Vec::new();
    while seen.len() < sent as usize {
        let push = client
            .next(WAIT)
            .await
            .expect("every step's push, the connection open");
        assert_eq!(push.value()["by"], from, "ran on the source: {push:?}");
        seen.push(push.value()["n"].as_u64().unwrap());
    }
    let expected: Vec<u64> = (1..=sent).collect();
    assert_eq!(seen, expected, "none lost, duplicated or reordered");
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_relay_under_a_retired_binding_that_meets_a_move_is_refused_by_the_source_and_never_runs()
{
    // The walker's node loses every relay-ready answer (its moves cancel) and never tells
    // a retired session so (51), which therefore keeps relaying under its old binding.
    let (cluster, mut retired) = walkers(DEFAULT_SEAL_TIMEOUT, |node| {
        node.test_lose_relay_ready().test_drop_binding_replaced()
    })
    .await;
    let from = join_walker(&mut retired).await;
    let endpoint = cluster.node(0).stream_endpoint("clients").unwrap();
    let mut current = StreamClient::tcp(endpoint.trim_start_matches("tcp://"))
        .await
        .unwrap();
    let rebound = current
        .call_json(1, "join", json!({ "walker": "w" }), WAIT)
        .await
        .unwrap();
    assert_eq!(rebound.kind, kind::RESPONSE, "{:?}", rebound.error());

    // While the walker is held for its move, the retired session's steps reach the
    // source: a hold that took them would run them after the cancel, and their pushes
    // would reach the current session.
    let (sent, moved) = steps_during_move(&cluster, &from, &mut retired).await;
    let cancelled = moved.unwrap_err();
    assert!(cancelled.is(zlink::ErrorKind::Unavailable), "{cancelled}");
    assert!(sent > 0, "steps went out during the move");

    // The current session's step, after them all, is the only one that ran.
    current.send_json("step", json!({ "n": 0 })).await.unwrap();
    let push = current
        .next(WAIT)
        .await
        .expect("the current session's push");
    assert_eq!(
        push.value()["n"],
        0,
        "no step of the retired binding ran: {push:?}"
    );
    assert_eq!(push.value()["by"], from.as_str());
    cluster.shutdown().await;
}

#[tokio::test]
async fn bind_or_get_returns_the_sessions_binding_of_that_incarnation_wherever_it_moved_without_a_bind(
) {
    let (cluster, mut client) = walkers(DEFAULT_SEAL_TIMEOUT, |node| node).await;
    let from = join_walker(&mut client).await;
    let to = other_walker_node(&from);
    let moved = cluster
        .node(index_of(&from))
        .actors()
        .relocate("w", Some(to))
        .await
        .unwrap();
    assert_eq!(moved.rid, to);
    // A plain bind of the reference taken before the move goes where it points, to a node
    // that no longer runs the walker: refused, and the binding stays as it was.
    let plain = client
        .call_json(2, "rejoin", json!({ "plain": true }), WAIT)
        .await
        .unwrap();
    assert_eq!(plain.kind, kind::ERROR, "{plain:?}");
    // bind_or_get finds this session's binding of that incarnation, where it is now.
    let got = client
        .call_json(3, "rejoin", json!({ "plain": false }), WAIT)
        .await
        .unwrap();
    assert_eq!(got.kind, kind::RESPONSE, "{:?}", got.error());
    assert_eq!(got.value()["owner"], to);
    client.send_json("step", json!({ "n": 1 })).await.unwrap();
    let push = client.next(WAIT).await.expect("the step's push");
    assert_eq!(
        push.value()["by"],
        to,
        "the binding carries relays: {push:?}"
    );
    cluster.shutdown().await;
}
