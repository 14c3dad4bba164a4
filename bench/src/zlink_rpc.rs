//! zlink request/reply: a client node calls, through the generated [`EchoServerClient`], a
//! server node whose `#[zlink::channel(server)]` group echoes the payload.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::security::CurveKeypair;
use zlink::{ClientServer, HandlerContext, PeerSpec, Runtime};

use crate::stats::Throughput;
use crate::BoxError;

const MESH: &str = "bench";
const CHANNEL: &str = "echo";
const SERVER_RID: &str = "bench-server";

/// The request: opaque bytes, encoded as one CBOR byte string.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
#[message(reply = Echoed)]
pub struct Echo(#[serde(with = "serde_bytes")] pub Vec<u8>);

/// The reply: the same bytes.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
pub struct Echoed(#[serde(with = "serde_bytes")] pub Vec<u8>);

/// The echo group: answers each [`Echo`] with the same bytes.
pub struct EchoServer;

#[zlink::channel(server)]
impl EchoServer {
    #[handler]
    async fn echo(&self, e: Echo, _ctx: &HandlerContext) -> zlink::Result<Echoed> {
        Ok(Echoed(e.0))
    }
}

/// A server node and a client node on 127.0.0.1, connected and ready.
pub struct Pair {
    /// Serves [`CHANNEL`] with an echo handler.
    pub server: Runtime,
    /// Calls [`CHANNEL`].
    pub client: Runtime,
}

impl Pair {
    /// Starts both nodes and waits until the client sees the server. With `curve`, both
    /// run ZMTP CURVE (each trusting the other's key).
    pub async fn start(curve: bool) -> Result<Pair, BoxError> {
        let (server_keys, client_keys) = (CurveKeypair::generate(), CurveKeypair::generate());
        let mut server = Runtime::builder()
            .mesh_name(MESH)
            .rid(SERVER_RID)
            .listen("tcp://127.0.0.1:0")
            .channel_server(CHANNEL, EchoServer);
        if curve {
            server = server
                .curve(server_keys.clone())
                .trust_key(client_keys.public());
        }
        let server = server.build()?.start().await?;
        let mut peer = PeerSpec::new(server.endpoint()).expect_rid(SERVER_RID);
        let mut client = Runtime::builder()
            .mesh_name(MESH)
            .rid("bench-client")
            .listen("tcp://127.0.0.1:0")
            .channel_client(CHANNEL);
        if curve {
            peer = peer.server_key(server_keys.public());
            client = client.curve(client_keys).trust_key(server_keys.public());
        }
        let client = client.peer(peer).build()?.start().await?;
        client
            .nodes()
            .wait_for(Duration::from_secs(10), |peers| {
                peers
                    .iter()
                    .any(|p| p.rid == SERVER_RID && p.weight(CHANNEL).is_some())
            })
            .await?;
        Ok(Pair { server, client })
    }

    /// Starts a ClientServer server (its own listener) and a client connected to it.
    pub async fn start_client_server() -> Result<Pair, BoxError> {
        let server = Runtime::builder()
            .mesh_name(MESH)
            .rid(SERVER_RID)
            .listen("tcp://127.0.0.1:0")
            .client_server(ClientServer::server(CHANNEL, EchoServer))
            .build()?
            .start()
            .await?;
        let endpoint = server
            .channels()
            .client_server_endpoint(CHANNEL)
            .ok_or("the ClientServer server has no endpoint")?;
        let client = Runtime::builder()
            .mesh_name(MESH)
            .rid("bench-client")
            .listen("tcp://127.0.0.1:0")
            .client_server(ClientServer::client(CHANNEL).connect(endpoint))
            .build()?
            .start()
            .await?;
        client.channels().ready(CHANNEL, 1).await?;
        Ok(Pair { server, client })
    }

    /// Shuts both nodes down.
    pub async fn shutdown(self) {
        self.client.shutdown().await;
        self.server.shutdown().await;
    }
}

/// One request/reply through `client` on the bench channel, checked.
fn round_trip(
    client: &EchoServerClient,
    payload: &Arc<[u8]>,
) -> impl std::future::Future<Output = Result<(), BoxError>> + Send + 'static {
    let (client, payload) = (client.clone(), payload.clone());
    async move {
        let reply = client.echo(&Echo(payload.to_vec())).await?;
        crate::drive::check_echo(payload.len(), reply.0.len())
    }
}

/// `warmup` unmeasured requests, then the time of each of `count` requests, one at a time.
pub async fn sequential(
    client: &zlink::Handle,
    payload: &[u8],
    warmup: usize,
    count: usize,
) -> Result<Vec<Duration>, BoxError> {
    let client = EchoServerClient::new(client, CHANNEL);
    let payload: Arc<[u8]> = payload.into();
    crate::drive::sequential(|| round_trip(&client, &payload), warmup, count).await
}

/// `window` callers sharing the node, each sending its next request as soon as the
/// previous one is answered, for `duration`.
pub async fn pipelined(
    client: &zlink::Handle,
    payload: &[u8],
    window: usize,
    duration: Duration,
) -> Result<Throughput, BoxError> {
    let client = EchoServerClient::new(client, CHANNEL);
    let payload: Arc<[u8]> = payload.into();
    crate::drive::pipelined(move || round_trip(&client, &payload), window, duration).await
}
