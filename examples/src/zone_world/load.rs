//! The load mode (`zone-world --load SECONDS`): the one-process world with many bots and
//! a few browsers (WebSocket clients) that move every 100 ms, half of them back and forth
//! across the north-south border; halfway through, zn-a is drained. It measures moves per
//! second, the time from a move to its ack push (all moves, and border crossings alone:
//! the crossing's pause), and during the drain: disconnects, lost, duplicated or
//! reordered acks, and the longest ack wait.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::desk::{DrainNode, Drained, DRAIN_TIMEOUT};
use super::messages::{Ack, Status};
use super::one_process::{OneProcess, Options};
use super::patrol::crowd;
use super::player::PlayerClient;
use crate::chat::client::{connect, Transport, CONTROL, SEND};
use crate::setup::Security;

/// How often each client moves.
pub const CLIENT_EVERY: Duration = Duration::from_millis(100);

/// What the load mode runs.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// How long the clients play.
    pub seconds: u64,
    /// How many bots walk.
    pub bots: usize,
    /// How many WebSocket clients play.
    pub clients: usize,
}

/// One client's record.
#[derive(Debug, Default)]
struct Played {
    sent: u64,
    /// (ack latency, whether the move crossed between nodes, when it was sent).
    acked: Vec<(Duration, bool, Instant)>,
    lost: u64,
    duplicated_or_reordered: u64,
    disconnected: bool,
}

/// What the load mode measured.
#[derive(Debug)]
pub struct LoadReport {
    /// Moves made per second: the bots' and the clients'.
    pub moves_per_second: f64,
    /// The bots' share of it.
    pub bot_moves_per_second: f64,
    /// Ack push after a move, all moves: p50 and p99.
    pub push: (Duration, Duration),
    /// Ack push after a move that crossed between nodes: p50, p99, and how many.
    pub crossing: (Duration, Duration, usize),
    /// The same outside the drain: p50 and p99.
    pub crossing_calm: (Duration, Duration),
    /// During the drain (from its start to a second after its end): ack p99 and the
    /// longest ack wait.
    pub stall: (Duration, Duration),
    /// The drain's report and how long it took.
    pub drain: (Drained, Duration),
    /// Clients whose connection closed.
    pub disconnects: usize,
    /// Moves whose ack never came.
    pub lost: u64,
    /// Acks received twice or out of order.
    pub duplicated_or_reordered: u64,
}

/// Runs the load mode and reports what it measured.
pub async fn run(options: &LoadOptions, security: &Security) -> zlink::Result<LoadReport> {
    let world_options = Options {
        port: 0,
        bots: options.bots,
        token: super::launch::fresh_token(),
    };
    let world = OneProcess::start(&world_options, security).await?;
    let address = world.gateway.stream.trim_start_matches("ws://").to_string();
    let bots: Vec<String> = crowd(options.bots).into_iter().map(|p| p.name).collect();
    let (stop, stopped) = watch::channel(false);
    let mut playing = Vec::new();
    for n in 0..options.clients {
        let address = address.clone();
        playing.push(tokio::spawn(play(address, n, stopped.clone())));
    }
    let ops = world.ops.runtime.handle().clone();
    let walked_before = walked(&ops, &bots).await;
    let started = Instant::now();
    let half = Duration::from_secs(options.seconds) / 2;
    tokio::time::sleep(half).await;
    let drain_started = Instant::now();
    let drained = ops
        .nodes()
        .request("zn-a", &DrainNode)
        .timeout(DRAIN_TIMEOUT)
        .await?;
    let drain_took = drain_started.elapsed();
    tokio::time::sleep(Duration::from_secs(options.seconds).saturating_sub(started.elapsed()))
        .await;
    let _ = stop.send(true);
    let elapsed = started.elapsed();
    let bot_moves = walked(&ops, &bots).await.saturating_sub(walked_before);
    let mut played = Vec::new();
    for client in playing {
        if let Ok(record) = client.await {
            played.push(record);
        }
    }
    world.shutdown().await;
    let drain_window = (
        drain_started,
        drain_started + drain_took + Duration::from_secs(1),
    );
    Ok(report(
        &played,
        bot_moves,
        elapsed,
        drain_window,
        (drained, drain_took),
    ))
}

/// Steps the bots took so far, together.
async fn walked(handle: &zlink::Handle, bots: &[String]) -> u64 {
    let mut total = 0;
    for bot in bots {
        if let Ok(status) = PlayerClient::new(handle, bot.as_str())
            .status(&Status)
            .await
        {
            total += status.walked;
        }
    }
    total
}

/// One client: logs in as `load-N`, moves every [`CLIENT_EVERY`] until told to stop (even
/// ones across the north-south border, odd ones inside nw), then waits for its last ack.
async fn play(address: String, n: usize, mut stop: watch::Receiver<bool>) -> Played {
    let mut played = Played::default();
    let Ok((client, mut incoming)) = connect(&address, Transport::WebSocket).await else {
        played.disconnected = true;
        return played;
    };
    let login = serde_json::json!({ "name": format!("load-{n}") });
    if client.request(1, "login", &login).await.is_err() {
        played.disconnected = true;
        return played;
    }
    let crossing = n.is_multiple_of(2);
    let mut sent: BTreeMap<u64, (Instant, bool)> = BTreeMap::new();
    let (mut seq, mut last_acked) = (0u64, 0u64);
    let mut every = tokio::time::interval(CLIENT_EVERY);
    let mut stopping: Option<Instant> = None;
    loop {
        tokio::select! {
            _ = every.tick(), if stopping.is_none() => {
                if *stop.borrow_and_update() {
                    stopping = Some(Instant::now() + Duration::from_secs(5));
                    continue;
                }
                seq += 1;
                let (dx, dy, crosses) = step(crossing, seq);
                sent.insert(seq, (Instant::now(), crosses));
                let step = serde_json::json!({ "seq": seq, "dx": dx, "dy": dy });
                if client.send("move", &step).await.is_err() {
                    played.disconnected = true;
                    break;
                }
                played.sent += 1;
            }
            packet = incoming.recv() => {
                let Some(packet) = packet else {
                    played.disconnected = true;
                    break;
                };
                if packet.kind == CONTROL {
                    played.disconnected = true;
                    break;
                }
                if packet.kind != SEND || packet.name != "ack" {
                    continue;
                }
                let Ok(ack) = serde_json::from_slice::<Ack>(&packet.payload) else { continue };
                if ack.seq != last_acked + 1 {
                    played.duplicated_or_reordered += 1;
                }
                last_acked = last_acked.max(ack.seq);
                if let Some((at, crosses)) = sent.remove(&ack.seq) {
                    played.acked.push((at.elapsed(), crosses, at));
                }
                if stopping.is_some() && sent.is_empty() {
                    break;
                }
            }
            _ = tokio::time::sleep_until(stopping.unwrap_or_else(Instant::now)), if stopping.is_some() => break,
        }
    }
    played.lost = sent.len() as u64;
    if played.lost > 0 {
        let missing: Vec<u64> = sent.keys().copied().take(10).collect();
        tracing::warn!(
            client = n,
            sent = played.sent,
            lost = played.lost,
            ?missing,
            last_acked,
            "acks never came"
        );
    }
    let _ = client.close().await;
    played
}

/// Move `seq` of a client: (dx, dy, whether it changes node). A crossing client walks to
/// (25,45) first, then steps between (25,45) in nw (zn-a) and (25,50) in sw (zn-b).
fn step(crossing: bool, seq: u64) -> (i32, i32, bool) {
    match (crossing, seq) {
        (true, 1..=4) => (0, 5, false),
        (true, _) if seq % 2 == 1 => (0, 5, true),
        (true, _) => (0, -5, true),
        (false, _) if seq % 2 == 1 => (1, 0, false),
        (false, _) => (-1, 0, false),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn report(
    played: &[Played],
    bot_moves: u64,
    elapsed: Duration,
    (drain_from, drain_to): (Instant, Instant),
    drain: (Drained, Duration),
) -> LoadReport {
    let sorted = |keep: &dyn Fn(&(Duration, bool, Instant)) -> bool| {
        let mut all: Vec<Duration> = played
            .iter()
            .flat_map(|p| p.acked.iter().filter(|a| keep(a)).map(|a| a.0))
            .collect();
        all.sort();
        all
    };
    let all = sorted(&|_| true);
    let crossings = sorted(&|a| a.1);
    let during = sorted(&|a| a.2 >= drain_from && a.2 <= drain_to);
    let calm = sorted(&|a| a.1 && (a.2 < drain_from || a.2 > drain_to));
    let client_moves: u64 = played.iter().map(|p| p.sent).sum();
    let seconds = elapsed.as_secs_f64().max(0.001);
    LoadReport {
        moves_per_second: (bot_moves + client_moves) as f64 / seconds,
        bot_moves_per_second: bot_moves as f64 / seconds,
        push: (percentile(&all, 0.5), percentile(&all, 0.99)),
        crossing: (
            percentile(&crossings, 0.5),
            percentile(&crossings, 0.99),
            crossings.len(),
        ),
        crossing_calm: (percentile(&calm, 0.5), percentile(&calm, 0.99)),
        stall: (
            percentile(&during, 0.99),
            during.last().copied().unwrap_or_default(),
        ),
        drain,
        disconnects: played.iter().filter(|p| p.disconnected).count(),
        lost: played.iter().map(|p| p.lost).sum(),
        duplicated_or_reordered: played.iter().map(|p| p.duplicated_or_reordered).sum(),
    }
}

impl std::fmt::Display for LoadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        writeln!(
            f,
            "moves: {:.0}/s ({:.0}/s by bots)",
            self.moves_per_second, self.bot_moves_per_second
        )?;
        writeln!(
            f,
            "ack push after a move: p50 {:.2} ms, p99 {:.2} ms",
            ms(self.push.0),
            ms(self.push.1)
        )?;
        writeln!(
            f,
            "border crossing to another node ({} crossings): p50 {:.2} ms, p99 {:.2} ms \
             (outside the drain: p50 {:.2} ms, p99 {:.2} ms)",
            self.crossing.2,
            ms(self.crossing.0),
            ms(self.crossing.1),
            ms(self.crossing_calm.0),
            ms(self.crossing_calm.1)
        )?;
        let (drained, took) = &self.drain;
        writeln!(
            f,
            "drain of zn-a: {} zones and {} players moved in {:.0} ms, {} left behind",
            drained.zones.len(),
            drained.players,
            ms(*took),
            drained.left.len()
        )?;
        writeln!(
            f,
            "during the drain: ack p99 {:.2} ms, longest {:.2} ms",
            ms(self.stall.0),
            ms(self.stall.1)
        )?;
        write!(
            f,
            "clients: {} disconnected, {} acks lost, {} duplicated or out of order",
            self.disconnects, self.lost, self.duplicated_or_reordered
        )
    }
}
