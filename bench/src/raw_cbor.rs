//! The serialization baseline: the raw `zeromq` DEALER -> ROUTER echo of [`crate::raw`], but
//! each side CBOR-encodes and decodes the same payload types the zlink side sends
//! ([`Echo`] and [`Echoed`], via `ciborium`). Set against zlink, it shows what the framework
//! costs beyond serialization.

use std::time::Duration;

use tokio::time::Instant;
use zeromq::prelude::*;
use zeromq::{DealerSocket, ZmqMessage};

use crate::raw::EchoServer;
use crate::stats::Throughput;
use crate::zlink_rpc::{Echo, Echoed};
use crate::BoxError;

/// The CBOR echo server: a raw ROUTER that decodes each [`Echo`] and answers with its
/// encoded [`Echoed`].
pub async fn start_server() -> Result<EchoServer, BoxError> {
    EchoServer::start_answering(answer).await
}

/// The reply to one ROUTER message: its identity frames, then the encoded [`Echoed`] of the
/// decoded [`Echo`] in its last frame.
fn answer(mut message: ZmqMessage) -> Result<ZmqMessage, BoxError> {
    if message.len() < 2 {
        return Err(format!("request of {} frame(s), no identity", message.len()).into());
    }
    let body = message.split_off(message.len() - 1);
    let frame = body.get(0).ok_or("request without a body frame")?;
    let request: Echo = ciborium::from_reader(&frame[..])?;
    message.push_back(encode(&Echoed(request.0))?.into());
    Ok(message)
}

fn encode<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, BoxError> {
    let mut bytes = Vec::with_capacity(80);
    ciborium::into_writer(value, &mut bytes)?;
    Ok(bytes)
}

/// A DEALER socket connected to `endpoint`.
pub async fn connect(endpoint: &str) -> Result<DealerSocket, BoxError> {
    let mut socket = DealerSocket::new();
    socket.connect(endpoint).await?;
    Ok(socket)
}

/// Encodes an [`Echo`] of `payload` and sends it.
async fn send(socket: &mut DealerSocket, payload: &[u8]) -> Result<(), BoxError> {
    let request = encode(&Echo(payload.to_vec()))?;
    socket.send(ZmqMessage::from(request)).await?;
    Ok(())
}

/// Receives one reply and decodes it as an [`Echoed`] of `len` bytes.
async fn receive(socket: &mut DealerSocket, len: usize) -> Result<(), BoxError> {
    let reply = socket.recv().await?;
    let frame = match reply.get(0) {
        Some(frame) if reply.len() == 1 => frame,
        _ => return Err(format!("unexpected reply: {} frame(s)", reply.len()).into()),
    };
    let Echoed(bytes) = ciborium::from_reader(&frame[..])?;
    if bytes.len() == len {
        Ok(())
    } else {
        Err(format!("echo of {len} bytes came back as {}", bytes.len()).into())
    }
}

/// `count` unmeasured round trips, one at a time (to warm up before [`pipelined`]).
pub async fn warm_up(
    socket: &mut DealerSocket,
    payload: &[u8],
    count: usize,
) -> Result<(), BoxError> {
    for _ in 0..count {
        send(socket, payload).await?;
        receive(socket, payload.len()).await?;
    }
    Ok(())
}

/// Keeps `window` requests in flight on the one socket for `duration`, as
/// [`crate::raw::pipelined`] does: each decoded reply lets one more encoded request go out.
/// Then waits for the outstanding replies.
pub async fn pipelined(
    socket: &mut DealerSocket,
    payload: &[u8],
    window: usize,
    duration: Duration,
) -> Result<Throughput, BoxError> {
    let started = Instant::now();
    let stop_sending = started + duration;
    for _ in 0..window {
        send(socket, payload).await?;
    }
    let mut outstanding = window;
    let mut messages = 0u64;
    while outstanding > 0 {
        receive(socket, payload.len()).await?;
        messages += 1;
        if Instant::now() < stop_sending {
            send(socket, payload).await?;
        } else {
            outstanding -= 1;
        }
    }
    Ok(Throughput {
        messages,
        elapsed: started.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_keeps_the_identity_and_echoes_the_payload() {
        let request = encode(&Echo(vec![7; 64])).unwrap();
        let mut message = ZmqMessage::from(b"peer".to_vec());
        message.push_back(request.into());
        let reply = answer(message).unwrap();
        assert_eq!(reply.len(), 2);
        assert_eq!(&reply.get(0).unwrap()[..], b"peer");
        let Echoed(bytes) = ciborium::from_reader(&reply.get(1).unwrap()[..]).unwrap();
        assert_eq!(bytes, vec![7; 64]);
    }

    #[test]
    fn answer_rejects_a_message_without_identity() {
        let request = encode(&Echo(vec![1, 2, 3])).unwrap();
        assert!(answer(ZmqMessage::from(request)).is_err());
    }
}
