//! The socket limit: a raw tokio TCP echo with a 4-byte length prefix, no framework and
//! no ZMTP, so `rpc` prints how far every contestant is from what the loopback itself
//! carries. Both sides batch what is ready into one write, as zeromq does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::stats::Throughput;
use crate::BoxError;

/// The largest frame either side accepts.
const MAX_FRAME: usize = 1 << 20;

/// An echo server on 127.0.0.1: each connection's frames come back as they are.
pub struct EchoServer {
    addr: String,
    task: JoinHandle<()>,
}

impl EchoServer {
    /// Binds a free port and starts echoing.
    pub async fn start() -> Result<EchoServer, BoxError> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?.to_string();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                tokio::spawn(async move {
                    let (read, write) = stream.into_split();
                    let (mut read, mut write) = (BufReader::new(read), BufWriter::new(write));
                    while let Ok(payload) = read_frame(&mut read).await {
                        if write.write_all(&frame(&payload)).await.is_err() {
                            break;
                        }
                        // Echoes of what was read together go out together, as a
                        // batching server's would.
                        if read.buffer().is_empty() && write.flush().await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Ok(EchoServer { addr, task })
    }

    /// Where it listens.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Stops accepting (open connections end with their clients).
    pub fn stop(self) {
        self.task.abort();
    }
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

async fn read_frame<R: AsyncRead + Unpin>(io: &mut R) -> std::io::Result<Vec<u8>> {
    let len = io.read_u32().await? as usize;
    if len > MAX_FRAME {
        return Err(std::io::Error::other("frame too large"));
    }
    let mut payload = vec![0u8; len];
    io.read_exact(&mut payload).await?;
    Ok(payload)
}

async fn connect(addr: &str) -> Result<TcpStream, BoxError> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

fn check_echo(reply: &[u8], len: usize) -> Result<(), BoxError> {
    if reply.len() == len {
        Ok(())
    } else {
        Err(format!("unexpected echo of {} bytes, sent {len}", reply.len()).into())
    }
}

/// `warmup` unmeasured round trips, then the time of each of `count`, one at a time.
pub async fn sequential(
    addr: &str,
    payload: &[u8],
    warmup: usize,
    count: usize,
) -> Result<Vec<Duration>, BoxError> {
    let mut stream = connect(addr).await?;
    let request = frame(payload);
    let mut samples = Vec::with_capacity(count);
    for i in 0..warmup + count {
        let started = Instant::now();
        stream.write_all(&request).await?;
        check_echo(&read_frame(&mut stream).await?, payload.len())?;
        if i >= warmup {
            samples.push(started.elapsed());
        }
    }
    Ok(samples)
}

/// Keeps `window` messages in flight on one connection for `duration`: each echo lets
/// one more go out.
pub async fn pipelined(
    addr: &str,
    payload: &[u8],
    window: usize,
    duration: Duration,
) -> Result<Throughput, BoxError> {
    let (read, write) = connect(addr).await?.into_split();
    let room = Arc::new(Semaphore::new(window));
    let echoed = Arc::new(AtomicU64::new(0));
    let len = payload.len();
    let reader = {
        let (room, echoed) = (room.clone(), echoed.clone());
        tokio::spawn(async move {
            let mut read = BufReader::new(read);
            while let Ok(reply) = read_frame(&mut read).await {
                check_echo(&reply, len)?;
                echoed.fetch_add(1, Ordering::Relaxed);
                room.add_permits(1);
            }
            Ok::<_, BoxError>(())
        })
    };
    let request = frame(payload);
    let mut write = BufWriter::new(write);
    let started = Instant::now();
    while started.elapsed() < duration {
        // Requests that have room now go out in one write.
        match room.try_acquire() {
            Ok(permit) => permit.forget(),
            Err(_) => {
                write.flush().await?;
                room.acquire().await?.forget();
            }
        }
        write.write_all(&request).await?;
    }
    write.flush().await?;
    // The last ones in flight come back before the clock stops.
    let _ = tokio::time::timeout(Duration::from_secs(5), room.acquire_many(window as u32)).await;
    let elapsed = started.elapsed();
    drop(write);
    reader.abort();
    Ok(Throughput {
        messages: echoed.load(Ordering::Relaxed),
        elapsed,
    })
}
