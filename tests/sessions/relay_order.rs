//! Answers to requests a session relays: from one Actor they come back in the order the
//! client sent them, over TCP and WebSocket, whether the Actor runs on another node or on
//! the gateway itself; a slow Actor holds up none of another Actor's answers.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;
use zlink::object::{Actor, ActorContext, ActorCreation};
use zlink::session::{Packet, SessionContext, StreamListener};
use zlink::ErrorKind;
use zlink_testkit::stream_client::{kind, StreamClient, StreamPacket};
use zlink_testkit::TestCluster;

use crate::common::WAIT;
use crate::promises::connect;

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "nap", codec = zlink::Json, reply = Woke)]
pub struct Nap {
    pub ms: u64,
    pub tag: u64,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "woke", codec = zlink::Json)]
pub struct Woke {
    pub tag: u64,
    pub by: String,
}

/// An Actor that naps as long as it is asked, then answers with the request's tag.
pub struct Sleeper;

#[zlink::actor(type = "sleeper", relocation = disable)]
impl Sleeper {
    #[handler]
    async fn nap(&mut self, nap: Nap, ctx: &ActorContext) -> zlink::Result<Woke> {
        if nap.ms > 0 {
            tokio::time::sleep(Duration::from_millis(nap.ms)).await;
        }
        Ok(Woke {
            tag: nap.tag,
            by: ctx.id().to_string(),
        })
    }
}

impl Actor for Sleeper {}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "login", codec = zlink::Json, reply = Counted)]
pub struct Login {
    pub player: String,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "count", codec = zlink::Json, reply = Counted)]
pub struct Count;

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "counted", codec = zlink::Json)]
pub struct Counted {
    pub n: u64,
}

/// Binds any number of sleepers; relays each packet to the one its `to` metadata names;
/// answers `count` itself.
#[derive(Default)]
pub struct Switchboard {
    counted: u64,
}

#[zlink::session]
impl Switchboard {
    #[handler]
    async fn login(&mut self, login: Login, ctx: &SessionContext) -> zlink::Result<Counted> {
        let actor = match ctx
            .handle()
            .actors()
            .get_or_create(&login.player, Sleeper::STABLE_TYPE)
            .await?
        {
            ActorCreation::Created(actor) | ActorCreation::Existing(actor) => actor,
        };
        ctx.bind(&actor).await?;
        Ok(Counted { n: 0 })
    }

    #[handler]
    async fn count(&mut self, _count: Count, _ctx: &SessionContext) -> zlink::Result<Counted> {
        self.counted += 1;
        Ok(Counted { n: self.counted })
    }

    #[on_packet]
    async fn relay(&mut self, packet: Packet, ctx: &SessionContext) -> zlink::Result<()> {
        let Some(to) = packet.metadata().get("to").map(str::to_string) else {
            return Err(zlink::Error::new(ErrorKind::InvalidOperation, "name `to`"));
        };
        ctx.relay(&to, packet).await
    }
}

/// A gateway with the Switchboard listeners (TCP and WebSocket) and, when `local`, the
/// sleepers on the same node; otherwise on a second node.
async fn switchboard(local: bool) -> (TestCluster, String, String) {
    let nodes = if local { 1 } else { 2 };
    let cluster = TestCluster::on_tcp_with_redis(nodes, move |i, node| {
        let node = if i == 0 {
            node.stream_listener(
                StreamListener::new("tcp")
                    .bind("tcp://127.0.0.1:0")
                    .session(Switchboard::default),
            )
            .stream_listener(
                StreamListener::new("ws")
                    .bind("ws://127.0.0.1:0")
                    .session(Switchboard::default),
            )
        } else {
            node
        };
        if i == nodes - 1 {
            node.actor_type(Sleeper::actor_type(|_| Sleeper).expect("an Actor type"))
        } else {
            node
        }
    })
    .await;
    cluster
        .node(0)
        .actors()
        .ready(Sleeper::STABLE_TYPE, 1)
        .await
        .expect("sleepers placeable");
    let address = |name: &str| {
        let endpoint = cluster.node(0).stream_endpoint(name).expect("bound");
        endpoint.split_once("://").expect("scheme").1.to_string()
    };
    let (tcp, ws) = (address("tcp"), address("ws"));
    (cluster, tcp, ws)
}

fn nap_to(actor: &str, seq: u64, ms: u64) -> StreamPacket {
    let mut packet = StreamPacket::json(kind::REQUEST, "nap", &json!({ "ms": ms, "tag": seq }));
    packet.request_seq = Some(seq);
    packet.metadata = vec![("to".into(), actor.into())];
    packet
}

async fn log_in(client: &mut StreamClient, seq: u64, player: &str) {
    let answer = client
        .call_json(seq, "login", json!({ "player": player }), WAIT)
        .await
        .unwrap();
    assert_eq!(answer.kind, kind::RESPONSE, "{:?}", answer.error());
}

// Several workers: replies wake on whichever thread, as on a real gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn answers_to_pipelined_requests_relayed_to_one_actor_come_back_in_the_order_sent() {
    for local in [false, true] {
        let (cluster, tcp, ws) = switchboard(local).await;
        for (scheme, address) in [("tcp", &tcp), ("ws", &ws)] {
            let mut client = connect(scheme, address).await;
            log_in(&mut client, 1, "ann").await;
            // 160 relayed requests, and a request the session answers itself every fifth.
            let mut sent = Vec::new();
            for seq in 10..210u64 {
                let packet = if seq % 5 == 0 {
                    let mut count = StreamPacket::json(kind::REQUEST, "count", &json!(null));
                    count.request_seq = Some(seq);
                    count
                } else {
                    nap_to("ann", seq, 0)
                };
                sent.push(packet);
            }
            // Pipelined: every request is written before any answer is read.
            for packet in &sent {
                client.write(packet).await.unwrap();
            }
            let (mut relayed, mut own) = (Vec::new(), Vec::new());
            while relayed.len() + own.len() < 200 {
                let answer = client.next(WAIT).await.expect("every answer");
                assert_eq!(
                    answer.kind,
                    kind::RESPONSE,
                    "{answer:?} {:?}",
                    answer.closing()
                );
                let seq = answer.request_seq.expect("answers a request");
                if seq % 5 == 0 {
                    own.push(seq);
                } else {
                    assert_eq!(answer.value()["tag"], seq, "its own answer");
                    relayed.push(seq);
                }
            }
            let role = if local {
                "on the gateway"
            } else {
                "on another node"
            };
            let expected: Vec<u64> = (10..210).filter(|s| s % 5 != 0).collect();
            assert_eq!(
                relayed, expected,
                "{scheme}, Actor {role}: in the order sent"
            );
            let expected: Vec<u64> = (10..210).filter(|s| s % 5 == 0).collect();
            assert_eq!(
                own, expected,
                "{scheme}: the session's own answers in lane order"
            );
        }
        cluster.shutdown().await;
    }
}

#[tokio::test]
async fn a_slow_actor_holds_up_no_answer_relayed_to_another_actor_of_the_same_session() {
    let (cluster, tcp, _) = switchboard(false).await;
    let mut client = StreamClient::tcp(&tcp).await.unwrap();
    log_in(&mut client, 1, "slow").await;
    log_in(&mut client, 2, "quick").await;
    client.write(&nap_to("slow", 10, 1_500)).await.unwrap();
    client.write(&nap_to("quick", 11, 0)).await.unwrap();
    client.write(&nap_to("slow", 12, 0)).await.unwrap();
    let first = client.next(Duration::from_millis(1_000)).await.unwrap();
    assert_eq!(
        (first.request_seq, first.value()["by"].as_str()),
        (Some(11), Some("quick")),
        "the quick Actor's answer does not wait for the slow one"
    );
    let second = client.next(WAIT).await.unwrap();
    let third = client.next(WAIT).await.unwrap();
    assert_eq!(
        (second.request_seq, third.request_seq),
        (Some(10), Some(12)),
        "the slow Actor's answers in the order sent"
    );
    cluster.shutdown().await;
}
