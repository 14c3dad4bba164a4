//! Shared messages and node helpers for the integration tests.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::{Handlers, PeerSpec, Runtime, RuntimeBuilder};

/// Echo request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Echo {
    pub text: String,
}
zlink::cbor_message!(Echo, "Echo");
impl zlink::Request for Echo {
    type Reply = Echoed;
}

/// Echo reply: who answered and what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Echoed {
    pub text: String,
    pub by: String,
    pub trace: Option<String>,
}
zlink::cbor_message!(Echoed, "Echoed");

/// A request whose handler sleeps before answering.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slow {
    pub millis: u64,
}
zlink::cbor_message!(Slow, "Slow");
impl zlink::Request for Slow {
    type Reply = Echoed;
}

/// A one-way note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note(pub String);
zlink::cbor_message!(Note, "Note");

/// A request nobody handles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unhandled;
zlink::cbor_message!(Unhandled, "Unhandled");
impl zlink::Request for Unhandled {
    type Reply = Echoed;
}

pub const MESH: &str = "test-mesh";
pub const CHANNEL: &str = "echo";
pub const WAIT: Duration = Duration::from_secs(10);

/// Handlers answering [`Echo`] and [`Slow`] with this node's name, and counting [`Note`]s.
pub fn echo_handlers(
    name: &str,
    notes: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> Handlers {
    let n1 = name.to_string();
    let n2 = name.to_string();
    Handlers::new()
        .on_request(move |ctx, e: Echo| {
            let by = n1.clone();
            async move {
                let trace = ctx.metadata().get("trace").map(str::to_string);
                Ok(Echoed {
                    text: e.text,
                    by,
                    trace,
                })
            }
        })
        .on_request(move |_ctx, s: Slow| {
            let by = n2.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(s.millis)).await;
                Ok(Echoed {
                    text: format!("slept {}", s.millis),
                    by,
                    trace: None,
                })
            }
        })
        .on_send(move |_ctx, _n: Note| {
            let notes = notes.clone();
            async move {
                notes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            }
        })
}

/// A builder for a node on 127.0.0.1 with a free port.
pub fn node(rid: &str) -> RuntimeBuilder {
    Runtime::builder()
        .mesh_name(MESH)
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
}

/// Builds and starts a node whose configuration the test knows to be valid.
pub async fn start(builder: RuntimeBuilder) -> Runtime {
    builder
        .build()
        .expect("valid config")
        .start()
        .await
        .expect("start")
}

/// Sends one [`Echo`] on [`CHANNEL`] and returns which node answered.
pub async fn echo_by(rt: &Runtime) -> String {
    rt.request_to_channel(CHANNEL, &Echo { text: "x".into() })
        .await
        .expect("echo answered")
        .by
}

/// Shuts the nodes down in order.
pub async fn stop(nodes: impl IntoIterator<Item = Runtime>) {
    for rt in nodes {
        rt.shutdown().await;
    }
}

/// A server node for [`CHANNEL`] with `weight`; it also answers node-direct echoes.
pub async fn server(rid: &str, weight: u32) -> Runtime {
    node(rid)
        .channel_server_weighted(CHANNEL, echo_handlers(rid, Default::default()), weight)
        .node_handlers(echo_handlers(rid, Default::default()))
        .build()
        .expect("valid config")
        .start()
        .await
        .expect("start")
}

/// A client node for [`CHANNEL`] connected to `servers`.
pub async fn client(rid: &str, servers: &[&Runtime]) -> Runtime {
    let mut b = node(rid).channel_client(CHANNEL);
    for s in servers {
        b = b.peer(PeerSpec::new(s.endpoint()).expect_rid(s.rid()));
    }
    let rt = b
        .build()
        .expect("valid config")
        .start()
        .await
        .expect("start");
    let want = servers.len();
    rt.wait_for_peers(WAIT, |p| p.len() == want)
        .await
        .expect("peers ready");
    rt
}
