//! `stream`: STREAM sessions against a raw tokio TCP echo with the same framing.
//!
//! - Echo: one client connection keeps 64 requests in flight. The raw server reads the
//!   6-byte prefix, the header and the payload, and writes back a response packet of
//!   the same shape; zlink's is a `#[zlink::session]` handler echoing a Raw message.
//! - Idle: 10,000 connections opened by a child process (one process's descriptor
//!   limit would not hold both ends) and held: the node's RSS growth per session,
//!   against a raw tokio server holding each connection on a task that reads it.
//! - Moves: 100 clients bound to Actors that all move at once under load
//!   (`stream_moves`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use zlink::session::{SessionContext, StreamLimits, StreamListener};

use crate::stats::rss_kib;
use crate::stats::{Latency, Throughput};
use crate::BoxError;

/// Requests in flight on the echo connection.
const WINDOW: usize = 64;
/// Idle connections held.
const IDLE: usize = 10_000;

/// A request's bytes: Raw codec, the sequence flag, name "echo", `payload`.
fn request(seq: u64, payload: &[u8]) -> Vec<u8> {
    let mut header = vec![0xF2, 2, 0, 0x01];
    header.extend_from_slice(&seq.to_be_bytes());
    header.push(4);
    header.extend_from_slice(b"echo");
    frame(&header, payload)
}

pub(crate) fn frame(header: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(6 + header.len() + payload.len());
    out.extend_from_slice(&(header.len() as u16).to_be_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(header);
    out.extend_from_slice(payload);
    out
}

/// Reads one packet: (header, payload).
pub(crate) async fn read_packet<R: AsyncReadExt + Unpin>(
    io: &mut R,
) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut prefix = [0u8; 6];
    io.read_exact(&mut prefix).await?;
    let header_len = usize::from(u16::from_be_bytes([prefix[0], prefix[1]]));
    let payload_len = u32::from_be_bytes([prefix[2], prefix[3], prefix[4], prefix[5]]) as usize;
    if header_len > 1024 || payload_len > 1 << 20 {
        return Err(std::io::Error::other("packet too large"));
    }
    let mut header = vec![0u8; header_len];
    io.read_exact(&mut header).await?;
    let mut payload = vec![0u8; payload_len];
    io.read_exact(&mut payload).await?;
    Ok((header, payload))
}

/// The raw echo: per connection, read a request, answer Response with its sequence.
async fn raw_echo_server() -> Result<(String, tokio::task::JoinHandle<()>), BoxError> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?.to_string();
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut read = BufReader::new(read);
                while let Ok((header, payload)) = read_packet(&mut read).await {
                    let seq = header.get(4..12).unwrap_or(&[0; 8]);
                    let mut reply = vec![0xF2, 3, 0, 0x01];
                    reply.extend_from_slice(seq);
                    reply.push(0);
                    if write.write_all(&frame(&reply, &payload)).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    Ok((addr, task))
}

/// A Raw message: the bytes as they are.
#[derive(zlink::Message)]
#[message(name = "echo", codec = zlink::Raw, reply = Blob)]
pub struct Blob(Bytes);

impl From<Bytes> for Blob {
    fn from(bytes: Bytes) -> Self {
        Blob(bytes)
    }
}

impl AsRef<[u8]> for Blob {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The session the zlink side runs: an echo handler.
#[derive(Default)]
pub struct EchoSession;

#[zlink::session]
impl EchoSession {
    #[handler]
    async fn echo(&mut self, blob: Blob, _ctx: &SessionContext) -> zlink::Result<Blob> {
        Ok(blob)
    }
}

async fn echo_node(limits: StreamLimits) -> Result<(zlink::Runtime, String), BoxError> {
    let runtime = zlink::Runtime::builder()
        .mesh_name("bench-stream")
        .listen("tcp://127.0.0.1:0")
        .stream_listener(
            StreamListener::new("clients")
                .bind("tcp://127.0.0.1:0")
                .limits(limits)
                .session(EchoSession::default),
        )
        .build()?
        .start()
        .await?;
    let endpoint = runtime
        .stream_endpoint("clients")
        .ok_or("the listener has no endpoint")?;
    let addr = endpoint.trim_start_matches("tcp://").to_string();
    Ok((runtime, addr))
}

/// A one-way the bound echo Actor pushes back to its session, as it came.
#[derive(zlink::Message)]
#[message(name = "bounce", codec = zlink::Raw)]
pub struct Bounce(Bytes);

impl From<Bytes> for Bounce {
    fn from(bytes: Bytes) -> Self {
        Bounce(bytes)
    }
}

impl AsRef<[u8]> for Bounce {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The echo Actor the bound echo relays to: it answers the bytes it got.
#[derive(Default)]
pub struct EchoActor;

#[zlink::actor(type = "bench-echo", relocation = disable)]
impl EchoActor {
    #[handler]
    async fn echo(
        &mut self,
        blob: Blob,
        _ctx: &zlink::object::ActorContext,
    ) -> zlink::Result<Blob> {
        Ok(blob)
    }

    #[handler]
    async fn bounce(
        &mut self,
        bounce: Bounce,
        ctx: &zlink::object::ActorContext,
    ) -> zlink::Result<()> {
        ctx.push(&bounce).await
    }
}

impl zlink::object::Actor for EchoActor {}

/// Binds the echo Actor when the client logs in.
#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(name = "login", codec = zlink::Json, reply = LoggedIn)]
pub struct Login;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(name = "logged-in", codec = zlink::Json)]
pub struct LoggedIn;

/// The gateway's session: `login` binds the client's echo Actor (on the other node),
/// every other packet is relayed to it.
#[derive(Default)]
pub struct BoundSession {
    actor: Option<String>,
}

#[zlink::session]
impl BoundSession {
    #[handler]
    async fn login(&mut self, _login: Login, ctx: &SessionContext) -> zlink::Result<LoggedIn> {
        let id = format!("echo-{}", ctx.id().get());
        let actor = match ctx
            .handle()
            .actors()
            .get_or_create(&id, EchoActor::STABLE_TYPE)
            .await?
        {
            zlink::object::ActorCreation::Created(a)
            | zlink::object::ActorCreation::Existing(a) => a,
        };
        ctx.bind(&actor).await?;
        self.actor = Some(id);
        Ok(LoggedIn)
    }

    #[on_packet]
    async fn relay_to_actor(
        &mut self,
        packet: zlink::session::Packet,
        ctx: &SessionContext,
    ) -> zlink::Result<()> {
        let actor = self
            .actor
            .as_deref()
            .ok_or_else(|| zlink::Error::new(zlink::ErrorKind::InvalidOperation, "log in first"))?;
        ctx.relay(actor, packet).await
    }
}

/// A gateway node and an Actor node sharing one in-memory store: the gateway's address.
async fn bound_pair() -> Result<(zlink::Runtime, zlink::Runtime, String), BoxError> {
    let store = <dyn zlink::store::LocationStore>::in_memory();
    let actors = zlink::Runtime::builder()
        .mesh_name("bench-bound")
        .rid("actors")
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .actor_type(EchoActor::actor_type(|_| EchoActor)?)
        .build()?
        .start()
        .await?;
    let gateway = zlink::Runtime::builder()
        .mesh_name("bench-bound")
        .rid("gateway")
        .listen("tcp://127.0.0.1:0")
        .location_store(store)
        .stream_listener(
            StreamListener::new("clients")
                .bind("tcp://127.0.0.1:0")
                .session(BoundSession::default),
        )
        .build()?
        .start()
        .await?;
    gateway.actors().ready(EchoActor::STABLE_TYPE, 1).await?;
    let endpoint = gateway
        .stream_endpoint("clients")
        .ok_or("the listener has no endpoint")?;
    let addr = endpoint.trim_start_matches("tcp://").to_string();
    Ok((gateway, actors, addr))
}

/// Logs in on `stream` (the bound echo's first packet) and waits for the answer.
async fn login(stream: &mut TcpStream) -> Result<(), BoxError> {
    let mut header = vec![0xF2, 2, 1, 0x01];
    header.extend_from_slice(&u64::MAX.to_be_bytes());
    header.push(5);
    header.extend_from_slice(b"login");
    stream.write_all(&frame(&header, b"null")).await?;
    let (answer, _) = read_packet(stream).await?;
    if answer.get(1) != Some(&3) {
        return Err("the login was refused".into());
    }
    Ok(())
}

/// One-way `bounce` packets on one bound connection, `WINDOW` in flight, for `duration`:
/// the pushes that came back (relay to the Actor's node, push back to the session).
async fn pushed_back(
    addr: &str,
    payload: &[u8],
    duration: Duration,
) -> Result<Throughput, BoxError> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    login(&mut stream).await?;
    let (read, mut write) = stream.into_split();
    let window = Arc::new(Semaphore::new(WINDOW));
    let pushed = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let stop = started + duration;
    let reader = {
        let (window, pushed) = (window.clone(), pushed.clone());
        tokio::spawn(async move {
            let mut read = BufReader::new(read);
            while let Ok((header, _)) = read_packet(&mut read).await {
                // A push is a Send (kind 1) from the server.
                if header.get(1) == Some(&1) {
                    pushed.fetch_add(1, Ordering::Relaxed);
                    window.add_permits(1);
                }
            }
        })
    };
    let mut header = vec![0xF2, 1, 0, 0x00];
    header.push(6);
    header.extend_from_slice(b"bounce");
    let packet = frame(&header, payload);
    while Instant::now() < stop {
        window.acquire().await?.forget();
        write.write_all(&packet).await?;
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), window.acquire_many(WINDOW as u32)).await;
    let elapsed = started.elapsed();
    drop(write);
    reader.abort();
    Ok(Throughput {
        messages: pushed.load(Ordering::Relaxed),
        elapsed,
    })
}

/// One request at a time, `count` of them after `warmup`: their round trips.
async fn sequential(
    addr: &str,
    payload: &[u8],
    bound: bool,
    warmup: usize,
    count: usize,
) -> Result<Vec<Duration>, BoxError> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    if bound {
        login(&mut stream).await?;
    }
    let mut samples = Vec::with_capacity(count);
    for seq in 1..=(warmup + count) as u64 {
        let started = Instant::now();
        stream.write_all(&request(seq, payload)).await?;
        let (header, _) = read_packet(&mut stream).await?;
        if header.get(1) != Some(&3) {
            return Err(format!("not a response: {header:?}").into());
        }
        if seq as usize > warmup {
            samples.push(started.elapsed());
        }
    }
    Ok(samples)
}

/// One connection, `WINDOW` requests in flight, for `duration`: answered requests.
async fn pipelined(
    addr: &str,
    payload: &[u8],
    duration: Duration,
    bound: bool,
) -> Result<Throughput, BoxError> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    if bound {
        login(&mut stream).await?;
    }
    let (read, mut write) = stream.into_split();
    let window = Arc::new(Semaphore::new(WINDOW));
    let answered = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let stop = started + duration;
    let reader = {
        let window = window.clone();
        let answered = answered.clone();
        tokio::spawn(async move {
            let mut read = BufReader::new(read);
            while let Ok((header, _)) = read_packet(&mut read).await {
                if header.get(1) == Some(&3) {
                    answered.fetch_add(1, Ordering::Relaxed);
                    window.add_permits(1);
                } else {
                    return Err::<(), BoxError>(format!("not a response: {header:?}").into());
                }
            }
            Ok(())
        })
    };
    let mut seq = 0u64;
    while Instant::now() < stop {
        window.acquire().await?.forget();
        seq += 1;
        write.write_all(&request(seq, payload)).await?;
    }
    // The last requests in flight.
    let _ = tokio::time::timeout(Duration::from_secs(5), window.acquire_many(WINDOW as u32)).await;
    let elapsed = started.elapsed();
    drop(write);
    reader.abort();
    Ok(Throughput {
        messages: answered.load(Ordering::Relaxed),
        elapsed,
    })
}

/// The child process that opens and holds `count` idle connections to `addr` until its
/// stdin closes (`zlink-bench __idle-clients ADDR COUNT`).
pub async fn hold_idle_clients(addr: &str, count: usize) -> Result<(), BoxError> {
    let mut held = Vec::with_capacity(count);
    for opened in 0..count {
        held.push(TcpStream::connect(addr).await?);
        // Paced a little, so the measured node's accept queue never overflows (a dropped
        // handshake costs its client a one-second retry, which measures nothing).
        if opened % 256 == 255 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    println!("ready");
    let mut stdin = tokio::io::stdin();
    let mut sink = [0u8; 64];
    while stdin.read(&mut sink).await? > 0 {}
    Ok(())
}

/// RSS growth per connection while `IDLE` idle clients are held on `addr`, once
/// `open()` reports them all.
async fn idle_rss(addr: &str, open: impl Fn() -> usize) -> Result<f64, BoxError> {
    let before = rss_kib();
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .arg("__idle-clients")
        .arg(addr)
        .arg(IDLE.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while open() < IDLE {
        if Instant::now() > deadline {
            return Err(format!("only {} of {IDLE} idle connections opened", open()).into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Let the accepted connections settle into their idle state.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let grown = rss_kib().saturating_sub(before);
    drop(child.stdin.take());
    let _ = child.wait().await;
    Ok(grown as f64 / IDLE as f64)
}

/// A raw tokio server holding each connection on a task that reads it.
async fn raw_idle_server() -> Result<(String, Arc<AtomicU64>), BoxError> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?.to_string();
    let open = Arc::new(AtomicU64::new(0));
    let counted = open.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let open = counted.clone();
            open.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                let mut prefix = [0u8; 6];
                let _ = stream.read_exact(&mut prefix).await;
                open.fetch_sub(1, Ordering::Relaxed);
            });
        }
    });
    Ok((addr, open))
}

/// The child process that measures one idle server in a fresh heap
/// (`zlink-bench __idle-server raw|zlink`): prints the KiB per connection.
pub async fn idle_server(kind: &str) -> Result<(), BoxError> {
    let kib = if kind == "zlink" {
        // Idle sessions hold no heartbeat traffic here: the idle client never answers.
        let mut idle = StreamLimits::default();
        idle.heartbeat_interval = Duration::ZERO;
        idle.heartbeat_timeout = Duration::ZERO;
        let (node, addr) = echo_node(idle).await?;
        let kib = idle_rss(&addr, || {
            node.status()
                .stream_listeners
                .first()
                .map_or(0, |s| s.open_sessions)
        })
        .await?;
        node.shutdown().await;
        kib
    } else {
        let (addr, open) = raw_idle_server().await?;
        idle_rss(&addr, || open.load(Ordering::Relaxed) as usize).await?
    };
    println!("{kib}");
    Ok(())
}

/// Runs `__idle-server kind` in a child and reads its figure.
async fn measure_idle(kind: &str) -> Result<f64, BoxError> {
    let output = tokio::process::Command::new(std::env::current_exe()?)
        .arg("__idle-server")
        .arg(kind)
        .output()
        .await?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| {
            format!(
                "the {kind} idle server reported nothing: {}",
                String::from_utf8_lossy(&output.stderr)
            )
            .into()
        })
}

/// Runs the benchmark; returns its JSON summary.
pub async fn run(duration: Duration) -> Result<serde_json::Value, BoxError> {
    let payload: Vec<u8> = (0..64u32).map(|i| (i % 251) as u8).collect();
    println!(
        "stream benchmark: 127.0.0.1, 64-byte payloads, {WINDOW} requests in flight on one connection"
    );
    let (raw_addr, raw_task) = raw_echo_server().await?;
    let raw = pipelined(&raw_addr, &payload, duration, false).await?;
    let raw_latency = Latency::of(sequential(&raw_addr, &payload, false, 500, 5_000).await?)
        .ok_or("no samples")?;
    raw_task.abort();
    println!(
        "raw tokio echo (same framing):  {:.0} msgs/s",
        raw.per_second()
    );
    let (node, addr) = echo_node(StreamLimits::default()).await?;
    let session = pipelined(&addr, &payload, duration, false).await?;
    println!(
        "zlink session handler echo:     {:.0} msgs/s",
        session.per_second()
    );
    let echo_ratio = session.per_second() / raw.per_second().max(1.0);
    println!("  session / raw: {echo_ratio:.3} (target >= 0.8)");
    let (gateway, actors, bound_addr) = bound_pair().await?;
    let bound = pipelined(&bound_addr, &payload, duration, true).await?;
    let bound_latency = Latency::of(sequential(&bound_addr, &payload, true, 500, 5_000).await?)
        .ok_or("no samples")?;
    let pushes = pushed_back(&bound_addr, &payload, duration).await?;
    // Where the push's own copy and codec pass would show: a 16 KiB payload.
    let large: Vec<u8> = (0..16 * 1024u32).map(|i| (i % 251) as u8).collect();
    let large_pushes = pushed_back(&bound_addr, &large, duration).await?;
    gateway.shutdown().await;
    actors.shutdown().await;
    let bound_ratio = bound.per_second() / raw.per_second().max(1.0);
    println!(
        "zlink bound-Actor echo (relay to another node, reply back): {:.0} msgs/s",
        bound.per_second()
    );
    println!("  bound / raw: {bound_ratio:.3} (target >= 0.35)");
    let push_ratio = pushes.per_second() / raw.per_second().max(1.0);
    println!(
        "zlink bound-Actor push echo (one-way relayed, pushed back): {:.0} msgs/s",
        pushes.per_second()
    );
    println!("  push echo / raw: {push_ratio:.3}");
    println!(
        "  with 16 KiB payloads: {:.0} pushes/s ({:.1} MiB/s)",
        large_pushes.per_second(),
        large_pushes.per_second() * 16.0 / 1024.0
    );
    println!(
        "  one at a time: raw p50 {:.1} us p99 {:.1} us; bound p50 {:.1} us p99 {:.1} us",
        raw_latency.p50_us, raw_latency.p99_us, bound_latency.p50_us, bound_latency.p99_us
    );

    node.shutdown().await;
    // Each idle server runs in a process of its own: a heap that served another run
    // first would hand its freed pages over and hide what the connections cost.
    let raw_kib = measure_idle("raw").await?;
    let zlink_kib = measure_idle("zlink").await?;
    println!("{IDLE} idle connections, RSS growth per connection:");
    println!("  raw tokio (one reading task each): {raw_kib:.2} KiB");
    println!("  zlink sessions:                   {zlink_kib:.2} KiB (target <= 8 KiB)");
    let moves = crate::stream_moves::run().await?;
    let mut summary = serde_json::json!({
        "benchmark": "stream",
        "raw_echo_per_s": raw.per_second().round(),
        "session_echo_per_s": session.per_second().round(),
        "session_echo_vs_raw": crate::round3(echo_ratio),
        "bound_echo_per_s": bound.per_second().round(),
        "bound_echo_vs_raw": crate::round3(bound_ratio),
        "push_echo_per_s": pushes.per_second().round(),
        "push_echo_vs_raw": crate::round3(push_ratio),
        "push_echo_16k_per_s": large_pushes.per_second().round(),
        "raw_p50_us": crate::round3(raw_latency.p50_us),
        "raw_p99_us": crate::round3(raw_latency.p99_us),
        "bound_p50_us": crate::round3(bound_latency.p50_us),
        "bound_p99_us": crate::round3(bound_latency.p99_us),
        "idle_sessions": IDLE,
        "idle_session_rss_kib": crate::round3(zlink_kib),
        "idle_raw_rss_kib": crate::round3(raw_kib),
    });
    if let (Some(summary), serde_json::Value::Object(moves)) = (summary.as_object_mut(), moves) {
        summary.extend(moves);
    }
    Ok(summary)
}
