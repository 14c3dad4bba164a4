//! The independent Python STREAM clients bound to a player Actor on another node while
//! the test moves that Actor three times (seed 000 §3.3): the connection never drops,
//! every request is answered once, every one-way comes back as one push, in order.

use std::process::Stdio;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use zlink::object::{Actor, ActorContext, ActorCreation, RelocationState};
use zlink::session::{Packet, SessionContext, StreamListener};
use zlink_testkit::{wait_until, TestCluster};

use crate::common::WAIT;
use crate::interop::{python, script};

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "ask", codec = zlink::Json, reply = Answer)]
pub struct Ask {
    pub n: u64,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "answer", codec = zlink::Json)]
pub struct Answer {
    pub n: u64,
    pub asked: u64,
    pub by: String,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "tick", codec = zlink::Json)]
pub struct Tick {
    pub n: u64,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "ticked", codec = zlink::Json)]
pub struct Ticked {
    pub n: u64,
    pub heard: u64,
    pub by: String,
}

/// A player whose counts move with it: each request and each one-way is counted once.
#[derive(Default, Serialize, Deserialize)]
pub struct Pilot {
    asked: u64,
    heard: u64,
}

impl RelocationState for Pilot {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| zlink::Error::InvalidArgument(e.to_string()))
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        *self = serde_json::from_slice(state)
            .map_err(|e| zlink::Error::InvalidArgument(e.to_string()))?;
        Ok(())
    }
}

#[zlink::actor(type = "pilot", relocation = preserve)]
impl Pilot {
    #[handler]
    async fn ask(&mut self, ask: Ask, ctx: &ActorContext) -> zlink::Result<Answer> {
        self.asked += 1;
        Ok(Answer {
            n: ask.n,
            asked: self.asked,
            by: ctx.handle().rid().to_string(),
        })
    }

    #[handler]
    async fn tick(&mut self, tick: Tick, ctx: &ActorContext) -> zlink::Result<()> {
        self.heard += 1;
        ctx.push(&Ticked {
            n: tick.n,
            heard: self.heard,
            by: ctx.handle().rid().to_string(),
        })
        .await
    }
}

impl Actor for Pilot {}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "join", codec = zlink::Json, reply = Joined)]
pub struct Join {
    pub player: String,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "joined", codec = zlink::Json)]
pub struct Joined {
    pub owner: String,
}

/// Joins the client to its pilot, then relays everything else to it.
#[derive(Default)]
pub struct Gate {
    player: Option<String>,
}

#[zlink::session]
impl Gate {
    #[handler]
    async fn join(&mut self, join: Join, ctx: &SessionContext) -> zlink::Result<Joined> {
        let actors = ctx.handle().actors();
        let pilot = match actors
            .get_or_create(&join.player, Pilot::STABLE_TYPE)
            .await?
        {
            ActorCreation::Created(a) | ActorCreation::Existing(a) => a,
        };
        let bound = ctx.bind(&pilot).await?;
        self.player = Some(join.player);
        Ok(Joined { owner: bound.rid })
    }

    #[on_packet]
    async fn relay_to_pilot(&mut self, packet: Packet, ctx: &SessionContext) -> zlink::Result<()> {
        let Some(player) = self.player.clone() else {
            return Err(zlink::Error::new(
                zlink::ErrorKind::InvalidOperation,
                "join first",
            ));
        };
        ctx.relay(&player, packet).await
    }
}

/// Runs `script` bound to `player` through a gateway on `scheme`, moving the player
/// between n1 and n2 three times while it talks; its summary and the moves' owners.
async fn three_moves_under(script_name: &str, scheme: &str, player: &str) {
    let cluster = TestCluster::on_tcp_with_redis(3, |i, node| {
        if i == 0 {
            node.stream_listener(
                StreamListener::new("clients")
                    .bind(format!("{scheme}://127.0.0.1:0"))
                    .session(Gate::default),
            )
        } else {
            node.actor_type(Pilot::actor_type(|_| Pilot::default()).expect("an Actor type"))
        }
    })
    .await;
    cluster
        .node(0)
        .actors()
        .ready(Pilot::STABLE_TYPE, 2)
        .await
        .unwrap();
    let endpoint = cluster.node(0).stream_endpoint("clients").unwrap();
    let address = endpoint.split_once("://").unwrap().1.to_string();
    let mut child = tokio::process::Command::new(python())
        .arg(script(script_name))
        .args([address.as_str(), "bound", player])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python runs");
    // Once the client joined, move its player three times while it talks.
    let gateway = cluster.node(0);
    wait_until(WAIT, "the client joined its player", || async {
        gateway.actors().find(player).await.ok().flatten().is_some()
    })
    .await;
    let mut owners = vec![gateway.actors().find(player).await.unwrap().unwrap().rid];
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let at = owners.last().unwrap().clone();
        let (from, to) = if at == "n1" { (1, "n2") } else { (2, "n1") };
        let moved = cluster
            .node(from)
            .actors()
            .relocate(player, Some(to))
            .await
            .expect("the player moved");
        owners.push(moved.rid);
    }
    let mut stdin = child.stdin.take().unwrap();
    // A client that ended early already fails the check below, with its output.
    let _ = stdin.write_all(b"done\n").await;
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the client finished")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "python client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value = serde_json::from_str(stdout.trim()).expect("a summary");
    let asked = summary["asked"].as_u64().unwrap();
    assert!(asked > 0, "{summary}");
    assert_eq!(summary["ticked"], asked, "every one-way came back once");
    let seen: Vec<String> = summary["owners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        seen, owners,
        "the client's answers came from every owner in turn: it talked through all 3 moves"
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_python_socket_client_bound_to_a_moving_actor_keeps_its_connection_and_loses_nothing() {
    three_moves_under("stream_client.py", "tcp", "py-tcp").await;
}

#[tokio::test]
async fn a_python_websocket_client_bound_to_a_moving_actor_keeps_its_connection_and_loses_nothing()
{
    three_moves_under("stream_ws_client.py", "ws", "py-ws").await;
}
