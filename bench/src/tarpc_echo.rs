//! The RPC-framework baseline: a `#[tarpc::service]` echo over TCP on 127.0.0.1, tarpc's
//! serde transport with bincode, carrying the same payload types as the zlink side
//! ([`Echo`] and [`Echoed`]).
//!
//! Both ends set `TCP_NODELAY`, as zeromq does on its sockets, so that neither side of the
//! comparison waits on Nagle's algorithm.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tarpc::server::{BaseChannel, Channel};
use tarpc::tokio_serde::formats::Bincode;
use tarpc::{client, context, serde_transport};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::stats::Throughput;
use crate::zlink_rpc::{Echo, Echoed};
use crate::BoxError;

/// The echo service: one call answering an [`Echo`] with the same bytes.
#[tarpc::service]
pub trait EchoService {
    /// Returns the request's bytes.
    async fn echo(request: Echo) -> Echoed;
}

/// The [`EchoService`] implementation.
#[derive(Debug, Clone, Copy)]
struct Echoer;

impl EchoService for Echoer {
    async fn echo(self, _: context::Context, request: Echo) -> Echoed {
        Echoed(request.0)
    }
}

/// A TCP listener on 127.0.0.1 serving [`EchoService`]: each connection gets a tarpc
/// channel in its own task, and each request is answered in a task of its own (tarpc's
/// usual `execute(..).for_each(spawn)`).
pub struct EchoServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl EchoServer {
    /// Binds a free port and starts accepting.
    pub async fn start() -> Result<EchoServer, BoxError> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                if stream.set_nodelay(true).is_err() {
                    continue;
                }
                let transport = serde_transport::Transport::from((stream, Bincode::default()));
                let requests = BaseChannel::with_defaults(transport).execute(Echoer.serve());
                tokio::spawn(requests.for_each(|answer| async {
                    tokio::spawn(answer);
                }));
            }
        });
        Ok(EchoServer { addr, task })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting. A connection's task ends when its client disconnects.
    pub fn stop(self) {
        self.task.abort();
    }
}

/// A client connected to `addr`, its dispatch task spawned.
pub async fn connect(addr: SocketAddr) -> Result<EchoServiceClient, BoxError> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let transport = serde_transport::Transport::from((stream, Bincode::default()));
    Ok(EchoServiceClient::new(client::Config::default(), transport).spawn())
}

/// One echo call through `client`, checked.
fn round_trip(
    client: &EchoServiceClient,
    payload: &Arc<[u8]>,
) -> impl std::future::Future<Output = Result<(), BoxError>> + Send + 'static {
    let (client, payload) = (client.clone(), payload.clone());
    async move {
        let reply = client
            .echo(context::current(), Echo(payload.to_vec()))
            .await?;
        crate::drive::check_echo(payload.len(), reply.0.len())
    }
}

/// `warmup` unmeasured calls, then the time of each of `count` calls, one at a time.
pub async fn sequential(
    client: &EchoServiceClient,
    payload: &[u8],
    warmup: usize,
    count: usize,
) -> Result<Vec<Duration>, BoxError> {
    let payload: Arc<[u8]> = payload.into();
    crate::drive::sequential(|| round_trip(client, &payload), warmup, count).await
}

/// `window` tasks sharing the one client (one connection), each making its next call as
/// soon as the previous one is answered, for `duration`: the same scheme as zlink's.
pub async fn pipelined(
    client: &EchoServiceClient,
    payload: &[u8],
    window: usize,
    duration: Duration,
) -> Result<Throughput, BoxError> {
    let client = client.clone();
    let payload: Arc<[u8]> = payload.into();
    crate::drive::pipelined(move || round_trip(&client, &payload), window, duration).await
}
