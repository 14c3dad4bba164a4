//! `stream`, last part: 100 clients, each bound to its own Actor on one of two Actor
//! nodes, send a one-way every 10 ms and get each back as a push; then every Actor moves
//! to the other node at once. Counted: client disconnects, and pushes lost, duplicated
//! or reordered (each carries its number and the Actor's own count); timed: the longest
//! silence each client saw while the moves ran, against the longest it saw in the
//! second before them (same clients, same load, no moves).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::Instant;
use zlink::object::{ActorContext, ActorCreation, RelocationState};
use zlink::session::{Packet, SessionContext, StreamListener};

use crate::stream::{frame, read_packet};
use crate::BoxError;

/// Clients, one bound Actor each.
const CLIENTS: usize = 100;
/// How often each client sends.
const INTERVAL: Duration = Duration::from_millis(10);

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "tick", codec = zlink::Json)]
pub struct Tick {
    n: u64,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "ticked", codec = zlink::Json)]
pub struct Ticked {
    n: u64,
    seen: u64,
}

/// Counts what it got, moves with its count, and pushes each one back.
#[derive(Default, Serialize, Deserialize)]
pub struct Ticker {
    seen: u64,
}

impl RelocationState for Ticker {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        Ok(self.seen.to_be_bytes().to_vec())
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        let bytes: [u8; 8] = state
            .try_into()
            .map_err(|_| zlink::Error::InvalidArgument("a ticker's state is 8 bytes".into()))?;
        self.seen = u64::from_be_bytes(bytes);
        Ok(())
    }
}

#[zlink::actor(type = "bench-ticker", relocation = preserve)]
impl Ticker {
    #[handler]
    async fn tick(&mut self, tick: Tick, ctx: &ActorContext) -> zlink::Result<()> {
        self.seen += 1;
        ctx.push(&Ticked {
            n: tick.n,
            seen: self.seen,
        })
        .await
    }
}

impl zlink::object::Actor for Ticker {}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "login", codec = zlink::Json, reply = Bound)]
pub struct Login {
    id: String,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "bound", codec = zlink::Json)]
pub struct Bound;

/// Binds the Ticker the client names, then relays to it.
#[derive(Default)]
pub struct TickerSession {
    actor: Option<String>,
}

#[zlink::session]
impl TickerSession {
    #[handler]
    async fn login(&mut self, login: Login, ctx: &SessionContext) -> zlink::Result<Bound> {
        let actor = match ctx
            .handle()
            .actors()
            .get_or_create(&login.id, Ticker::STABLE_TYPE)
            .await?
        {
            ActorCreation::Created(a) | ActorCreation::Existing(a) => a,
        };
        ctx.bind(&actor).await?;
        self.actor = Some(login.id);
        Ok(Bound)
    }

    #[on_packet]
    async fn relay_to_ticker(&mut self, packet: Packet, ctx: &SessionContext) -> zlink::Result<()> {
        let actor = self
            .actor
            .as_deref()
            .ok_or_else(|| zlink::Error::new(zlink::ErrorKind::InvalidOperation, "log in first"))?;
        ctx.relay(actor, packet).await
    }
}

/// What one client saw.
#[derive(Default)]
struct Seen {
    /// When each push arrived, by number (index n - 1).
    arrivals: Vec<Option<Instant>>,
    /// When each one-way was written, by number.
    sent: Vec<Instant>,
    next: u64,
    duplicated_or_reordered: u64,
    miscounted: u64,
    disconnected: bool,
}

impl Seen {
    fn take(&mut self, n: u64, seen: u64, at: Instant) {
        if n < self.next {
            self.duplicated_or_reordered += 1;
            return;
        }
        self.next = n + 1;
        if seen != n {
            self.miscounted += 1;
        }
        let index = (n - 1) as usize;
        if self.arrivals.len() <= index {
            self.arrivals.resize(index + 1, None);
        }
        self.arrivals[index] = Some(at);
    }

    /// The round trips (one-way written to its push read) of what was sent in `from..to`.
    fn round_trips(&self, from: Instant, to: Instant, into: &mut Vec<Duration>) {
        for (sent, arrived) in self.sent.iter().zip(&self.arrivals) {
            if let Some(arrived) = arrived {
                if *sent >= from && *sent < to {
                    into.push(*arrived - *sent);
                }
            }
        }
    }

    /// The longest time between two pushes that arrived within `from..to`.
    fn longest_silence(&self, from: Instant, to: Instant) -> Duration {
        let times: Vec<Instant> = self
            .arrivals
            .iter()
            .flatten()
            .copied()
            .filter(|t| *t >= from && *t <= to)
            .collect();
        times
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(Duration::ZERO)
    }
}

fn tick(n: u64) -> Vec<u8> {
    let mut header = vec![0xF2, 1, 1, 0];
    header.push(4);
    header.extend_from_slice(b"tick");
    frame(&header, format!("{{\"n\":{n}}}").as_bytes())
}

/// One client: logs in as `id`, then ticks until `stop`; what it sent, and what it saw.
async fn client(
    addr: String,
    id: String,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
) -> Result<u64, BoxError> {
    let mut stream = TcpStream::connect(&addr).await?;
    stream.set_nodelay(true)?;
    let mut header = vec![0xF2, 2, 1, 0x01];
    header.extend_from_slice(&1u64.to_be_bytes());
    header.push(5);
    header.extend_from_slice(b"login");
    let body = serde_json::to_vec(&serde_json::json!({ "id": id }))?;
    stream.write_all(&frame(&header, &body)).await?;
    let (answer, _) = read_packet(&mut stream).await?;
    if answer.get(1) != Some(&3) {
        return Err(format!("{id}: login refused").into());
    }
    seen.lock().map_err(|_| "poisoned")?.next = 1;
    let (read, mut write) = stream.into_split();
    let reader = {
        let seen = seen.clone();
        tokio::spawn(async move {
            let mut read = BufReader::new(read);
            loop {
                let Ok((_header, payload)) = read_packet(&mut read).await else {
                    if let Ok(mut seen) = seen.lock() {
                        seen.disconnected = true;
                    }
                    return;
                };
                let at = Instant::now();
                let Ok(push) = serde_json::from_slice::<Ticked>(&payload) else {
                    continue;
                };
                if let Ok(mut seen) = seen.lock() {
                    seen.take(push.n, push.seen, at);
                }
            }
        })
    };
    let mut every = tokio::time::interval(INTERVAL);
    let mut sent = 0;
    while !stop.load(Ordering::Relaxed) {
        every.tick().await;
        sent += 1;
        seen.lock()
            .map_err(|_| "poisoned")?
            .sent
            .push(Instant::now());
        write.write_all(&tick(sent)).await?;
    }
    // Every push back, or the deadline.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if seen.lock().map_err(|_| "poisoned")?.next > sent {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    reader.abort();
    Ok(sent)
}

/// The percentile `p` (0..=1) of `values`, in ms.
fn percentile_ms(values: &mut [Duration], p: f64) -> f64 {
    values.sort();
    let index = ((values.len() as f64 - 1.0) * p).round() as usize;
    values.get(index).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

pub async fn run() -> Result<serde_json::Value, BoxError> {
    let location = <dyn zlink::store::LocationStore>::in_memory();
    let relocation = <dyn zlink::store::RelocationStore>::in_memory();
    let node = |rid: &str| {
        zlink::Runtime::builder()
            .mesh_name("bench-moves")
            .rid(rid)
            .listen("tcp://127.0.0.1:0")
            .location_store(location.clone())
            .relocation_store(relocation.clone())
    };
    let mut actor_nodes = Vec::new();
    for rid in ["movers-a", "movers-b"] {
        let started = node(rid)
            .actor_type(Ticker::actor_type(|_| Ticker::default())?)
            .build()?
            .start()
            .await?;
        actor_nodes.push(started);
    }
    let gateway = node("gateway")
        .stream_listener(
            StreamListener::new("clients")
                .bind("tcp://127.0.0.1:0")
                .session(TickerSession::default),
        )
        .build()?
        .start()
        .await?;
    gateway.actors().ready(Ticker::STABLE_TYPE, 2).await?;
    let addr = gateway
        .stream_endpoint("clients")
        .ok_or("no endpoint")?
        .trim_start_matches("tcp://")
        .to_string();
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    let mut seens = Vec::new();
    for i in 0..CLIENTS {
        let seen = Arc::new(Mutex::new(Seen::default()));
        seens.push(seen.clone());
        clients.push(tokio::spawn(client(
            addr.clone(),
            format!("ticker-{i}"),
            stop.clone(),
            seen,
        )));
    }
    // Every client bound and ticking, then one quiet second as the baseline.
    let bound_by = Instant::now() + Duration::from_secs(10);
    while seens
        .iter()
        .any(|s| s.lock().map(|s| s.arrivals.is_empty()).unwrap_or(true))
    {
        if Instant::now() > bound_by {
            return Err("not every client got its first push in 10 s".into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let moves_from = Instant::now();
    let mut moves = Vec::new();
    for i in 0..CLIENTS {
        let id = format!("ticker-{i}");
        let at = gateway
            .actors()
            .find(&id)
            .await?
            .ok_or("an unbound ticker")?;
        let (from, to) = if at.rid == "movers-a" {
            (actor_nodes[0].clone(), "movers-b")
        } else {
            (actor_nodes[1].clone(), "movers-a")
        };
        moves.push(async move { from.actors().relocate(&id, Some(to)).await });
    }
    let moved = futures::future::join_all(moves).await;
    let moves_took = moves_from.elapsed();
    let failed_moves = moved.iter().filter(|m| m.is_err()).count();
    // The moves' window: from the first move to 100 ms after the last; the quiet one
    // as long, right before the first.
    let window = moves_took + Duration::from_millis(100);
    let (quiet_from, moves_to) = (moves_from - window, moves_from + window);
    tokio::time::sleep(Duration::from_millis(700)).await;
    stop.store(true, Ordering::Relaxed);
    let mut sent = 0;
    for client in clients {
        sent += client.await??;
    }
    let (mut quiet, mut pause) = (Vec::new(), Vec::new());
    let (mut quiet_trips, mut moving_trips) = (Vec::new(), Vec::new());
    let (mut dup, mut miscounted, mut disconnects) = (0, 0, 0);
    for seen in &seens {
        let seen = seen.lock().map_err(|_| "poisoned")?;
        quiet.push(seen.longest_silence(quiet_from, moves_from));
        pause.push(seen.longest_silence(moves_from, moves_to));
        seen.round_trips(quiet_from, moves_from, &mut quiet_trips);
        seen.round_trips(moves_from, moves_to, &mut moving_trips);
        dup += seen.duplicated_or_reordered;
        miscounted += seen.miscounted;
        disconnects += u64::from(seen.disconnected);
    }
    let received: u64 = seens
        .iter()
        .map(|s| {
            s.lock()
                .map(|s| s.arrivals.iter().flatten().count() as u64)
                .unwrap_or(0)
        })
        .sum();
    // Each number counts once however often it came: what never came is lost.
    let lost = sent.saturating_sub(received);
    gateway.shutdown().await;
    for node in actor_nodes {
        node.shutdown().await;
    }
    let (pause_p50, pause_p99) = (
        percentile_ms(&mut pause, 0.5),
        percentile_ms(&mut pause, 0.99),
    );
    let (quiet_p50, quiet_p99) = (
        percentile_ms(&mut quiet, 0.5),
        percentile_ms(&mut quiet, 0.99),
    );
    println!(
        "{CLIENTS} bound Actors moved at once under load ({CLIENTS} clients, one one-way each per {} ms, each pushed back):",
        INTERVAL.as_millis()
    );
    println!(
        "  {} moves in {:.1} ms, {failed_moves} failed; {sent} sent, {received} pushes back",
        CLIENTS,
        moves_took.as_secs_f64() * 1000.0
    );
    println!(
        "  disconnects {disconnects}, lost {lost}, duplicated or reordered {dup}, miscounted {miscounted}"
    );
    let trips = |trips: &mut Vec<Duration>| {
        let max = trips.iter().max().map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        (percentile_ms(trips, 0.5), percentile_ms(trips, 0.99), max)
    };
    let (moving_p50, moving_p99, moving_max) = trips(&mut moving_trips);
    let (quiet_trip_p50, quiet_trip_p99, quiet_max) = trips(&mut quiet_trips);
    println!(
        "  one-way to its push, sent while the Actors moved: p50 {moving_p50:.2} ms p99 {moving_p99:.2} ms max {moving_max:.2} ms; \
         just before, as long a window: p50 {quiet_trip_p50:.2} ms p99 {quiet_trip_p99:.2} ms max {quiet_max:.2} ms"
    );
    println!(
        "  longest silence a client saw (pushes every {} ms): during the moves p50 {pause_p50:.1} ms p99 {pause_p99:.1} ms; \
         just before p50 {quiet_p50:.1} ms p99 {quiet_p99:.1} ms",
        INTERVAL.as_millis()
    );
    Ok(serde_json::json!({
        "moved_actors": CLIENTS,
        "moves_ms": crate::round3(moves_took.as_secs_f64() * 1000.0),
        "failed_moves": failed_moves,
        "move_disconnects": disconnects,
        "move_lost": lost,
        "move_duplicated_or_reordered": dup,
        "move_pause_p50_ms": crate::round3(pause_p50),
        "move_pause_p99_ms": crate::round3(pause_p99),
        "move_trip_p50_ms": crate::round3(moving_p50),
        "move_trip_p99_ms": crate::round3(moving_p99),
        "move_trip_max_ms": crate::round3(moving_max),
        "quiet_trip_p50_ms": crate::round3(quiet_trip_p50),
        "quiet_trip_p99_ms": crate::round3(quiet_trip_p99),
        "quiet_gap_p50_ms": crate::round3(quiet_p50),
        "quiet_gap_p99_ms": crate::round3(quiet_p99),
    }))
}
