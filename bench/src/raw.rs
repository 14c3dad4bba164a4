//! The baseline: raw `zeromq` DEALER -> ROUTER echo, no framework in between.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use zeromq::prelude::*;
use zeromq::{DealerSocket, RouterSocket, ZmqMessage};

use crate::stats::Throughput;
use crate::BoxError;

/// A ROUTER socket on 127.0.0.1 that sends every message back to its sender (the identity
/// frame the ROUTER prepends routes it back).
pub struct EchoServer {
    endpoint: String,
    task: JoinHandle<()>,
}

impl EchoServer {
    /// Binds a free port and starts echoing.
    pub async fn start() -> Result<EchoServer, BoxError> {
        Self::start_answering(Ok).await
    }

    /// Binds a free port and answers each message with what `answer` makes of it (the
    /// identity frames the ROUTER prepends must stay first). The server stops at its first
    /// error: a socket error, or a message `answer` refuses.
    pub async fn start_answering(
        answer: fn(ZmqMessage) -> Result<ZmqMessage, BoxError>,
    ) -> Result<EchoServer, BoxError> {
        let mut socket = RouterSocket::new();
        let endpoint = socket.bind("tcp://127.0.0.1:0").await?.to_string();
        let task = tokio::spawn(async move {
            while let Ok(message) = socket.recv().await {
                let Ok(reply) = answer(message) else { break };
                if socket.send(reply).await.is_err() {
                    break;
                }
            }
        });
        Ok(EchoServer { endpoint, task })
    }

    /// Where it listens.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Stops the server task (dropping its socket).
    pub fn stop(self) {
        self.task.abort();
    }
}

/// A DEALER socket connected to `endpoint`.
pub async fn connect(endpoint: &str) -> Result<DealerSocket, BoxError> {
    let mut socket = DealerSocket::new();
    socket.connect(endpoint).await?;
    Ok(socket)
}

async fn round_trip(socket: &mut DealerSocket, payload: &[u8]) -> Result<(), BoxError> {
    socket.send(ZmqMessage::from(payload.to_vec())).await?;
    check_echo(socket.recv().await?, payload.len())
}

fn check_echo(reply: ZmqMessage, len: usize) -> Result<(), BoxError> {
    match reply.get(0) {
        Some(frame) if reply.len() == 1 && frame.len() == len => Ok(()),
        _ => Err(format!("unexpected echo: {} frame(s)", reply.len()).into()),
    }
}

/// `warmup` unmeasured round trips, then the time of each of `count` round trips, one at a
/// time.
pub async fn sequential(
    socket: &mut DealerSocket,
    payload: &[u8],
    warmup: usize,
    count: usize,
) -> Result<Vec<Duration>, BoxError> {
    for _ in 0..warmup {
        round_trip(socket, payload).await?;
    }
    let mut samples = Vec::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        round_trip(socket, payload).await?;
        samples.push(started.elapsed());
    }
    Ok(samples)
}

/// Keeps `window` messages in flight on the one socket for `duration`: each reply received
/// lets one more message go out. Then waits for the outstanding replies.
pub async fn pipelined(
    socket: &mut DealerSocket,
    payload: &[u8],
    window: usize,
    duration: Duration,
) -> Result<Throughput, BoxError> {
    let started = Instant::now();
    let stop_sending = started + duration;
    for _ in 0..window {
        socket.send(ZmqMessage::from(payload.to_vec())).await?;
    }
    let mut outstanding = window;
    let mut messages = 0u64;
    while outstanding > 0 {
        check_echo(socket.recv().await?, payload.len())?;
        messages += 1;
        if Instant::now() < stop_sending {
            socket.send(ZmqMessage::from(payload.to_vec())).await?;
        } else {
            outstanding -= 1;
        }
    }
    Ok(Throughput {
        messages,
        elapsed: started.elapsed(),
    })
}
