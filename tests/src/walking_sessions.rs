//! The walking-session cluster the session and conformance tests share: a gateway whose
//! Lobby sessions bind walker Actors that move between two walker nodes.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;
use zlink::object::{Actor, ActorContext, ActorCreation};
use zlink::session::{Packet, SessionContext, StreamLimits, StreamListener};
use zlink::RuntimeBuilder;
use zlink_testkit::stream_client::{kind, StreamClient};
use zlink_testkit::TestCluster;

/// How long the helpers wait for an answer.
const WAIT: Duration = Duration::from_secs(5);

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

/// The listener's own SessionRelocationSealTimeout.
pub const DEFAULT_SEAL_TIMEOUT: Duration = Duration::from_secs(10);

/// n0 a gateway whose sealed bindings wait `seal_timeout`; n1 and n2 walker nodes, each
/// built with `fault`.
pub async fn walkers(
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
pub async fn steps_during_move(
    cluster: &TestCluster,
    from: &str,
    client: &mut StreamClient,
) -> (u64, zlink::Result<zlink::object::ActorRef>) {
    let moving = tokio::spawn({
        let source = cluster.node(index_of(from)).handle().clone();
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
pub async fn join_walker(client: &mut StreamClient) -> String {
    let joined = client
        .call_json(1, "join", json!({ "walker": "w" }), WAIT)
        .await
        .unwrap();
    assert_eq!(joined.kind, kind::RESPONSE, "{:?}", joined.error());
    joined.value()["owner"].as_str().unwrap().to_string()
}

pub fn index_of(rid: &str) -> usize {
    rid.trim_start_matches('n').parse().expect("n<i>")
}

pub fn other_walker_node(rid: &str) -> &'static str {
    if rid == "n1" {
        "n2"
    } else {
        "n1"
    }
}
