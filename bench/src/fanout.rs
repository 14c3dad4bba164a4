//! Fanout: one publisher, four subscribers, 64-byte events. Raw zeromq PUB/SUB against a
//! zlink fanout publisher and zlink subscribers (typed handlers), in the same run.
//!
//! The publisher sends for the given time (yielding every 64 events so subscribers share
//! the cores); then the run waits until deliveries stop. The figure is events delivered
//! per subscriber per second, from the first publish to the last delivery. Both sides are
//! lossy PUB/SUB; the zlink publisher's SendHighWaterMark is raised to the raw PUB's
//! internal queue size (100,000) so neither drops by configuration.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use zeromq::prelude::*;
use zlink::{Fanout, HandlerContext, Runtime};

use crate::BoxError;

const SUBSCRIBERS: usize = 4;
const CHANNEL: &str = "ticks";
const TOPIC: &str = "Tick";
/// Deliveries stopped when nothing arrived for this long.
const QUIET: Duration = Duration::from_millis(300);

/// The event: opaque bytes.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
pub struct Tick(#[serde(with = "serde_bytes")] pub Vec<u8>);

/// What one subscriber received, and when the last one arrived.
#[derive(Default)]
pub struct Tally {
    count: AtomicU64,
    last: Mutex<Option<Instant>>,
}

impl Tally {
    fn record(&self) {
        self.count.fetch_add(1, Ordering::Relaxed);
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    }

    fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    fn reset(&self) {
        self.count.store(0, Ordering::Relaxed);
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn last(&self) -> Option<Instant> {
        *self.last.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A zlink subscriber's handler group: counts ticks.
#[derive(Clone)]
pub struct Counter(Arc<Tally>);

#[zlink::channel(server)]
impl Counter {
    #[handler]
    async fn tick(&self, _tick: Tick, _ctx: &HandlerContext) -> zlink::Result<()> {
        self.0.record();
        Ok(())
    }
}

/// One side's result.
struct Outcome {
    published: u64,
    delivered: u64,
    elapsed: Duration,
}

impl Outcome {
    fn per_subscriber_per_second(&self) -> f64 {
        self.delivered as f64 / SUBSCRIBERS as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Publishes with `publish` until every tally has one, then resets them.
async fn warm_up<F, Fut>(tallies: &[Arc<Tally>], mut publish: F) -> Result<(), BoxError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), BoxError>>,
{
    let give_up = Instant::now() + Duration::from_secs(10);
    while tallies.iter().any(|t| t.count() == 0) {
        if Instant::now() > give_up {
            return Err("subscribers never received the warm-up events".into());
        }
        publish().await?;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(QUIET).await;
    tallies.iter().for_each(|t| t.reset());
    Ok(())
}

/// Publishes for `duration`, then waits for deliveries to stop.
async fn measure<F, Fut>(
    tallies: &[Arc<Tally>],
    duration: Duration,
    mut publish: F,
) -> Result<Outcome, BoxError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), BoxError>>,
{
    let started = Instant::now();
    let mut published = 0u64;
    while started.elapsed() < duration {
        publish().await?;
        published += 1;
        if published.is_multiple_of(64) {
            tokio::task::yield_now().await;
        }
    }
    let mut previous = u64::MAX;
    loop {
        tokio::time::sleep(QUIET).await;
        let total: u64 = tallies.iter().map(|t| t.count()).sum();
        if total == previous {
            break;
        }
        previous = total;
    }
    let last = tallies
        .iter()
        .filter_map(|t| t.last())
        .max()
        .ok_or("nothing was delivered")?;
    Ok(Outcome {
        published,
        delivered: tallies.iter().map(|t| t.count()).sum(),
        elapsed: last.duration_since(started),
    })
}

async fn raw(payload: &[u8], duration: Duration) -> Result<Outcome, BoxError> {
    let mut publisher = zeromq::PubSocket::new();
    let endpoint = publisher.bind("tcp://127.0.0.1:0").await?.to_string();
    let mut tallies = Vec::new();
    let mut tasks = Vec::new();
    for _ in 0..SUBSCRIBERS {
        let mut sub = zeromq::SubSocket::new();
        sub.connect(&endpoint).await?;
        sub.subscribe(TOPIC).await?;
        let tally = Arc::new(Tally::default());
        tallies.push(tally.clone());
        tasks.push(tokio::spawn(async move {
            while sub.recv().await.is_ok() {
                tally.record();
            }
        }));
    }
    let message = || {
        let mut m = zeromq::ZmqMessage::from(TOPIC);
        m.push_back(payload.to_vec().into());
        m
    };
    let publisher = Arc::new(tokio::sync::Mutex::new(publisher));
    let send = || {
        let publisher = publisher.clone();
        let m = message();
        async move {
            publisher.lock().await.send(m).await?;
            Ok::<(), BoxError>(())
        }
    };
    warm_up(&tallies, send).await?;
    let outcome = measure(&tallies, duration, send).await;
    tasks.iter().for_each(|t| t.abort());
    outcome
}

async fn zlink(payload: &[u8], duration: Duration) -> Result<Outcome, BoxError> {
    let node = |rid: String| {
        Runtime::builder()
            .mesh_name("bench-fanout")
            .rid(rid)
            .listen("tcp://127.0.0.1:0")
    };
    let publisher = node("publisher".into())
        .fanout(Fanout::publisher(CHANNEL).send_high_water_mark(100_000))
        .build()?
        .start()
        .await?;
    let endpoint = publisher
        .fanout()
        .endpoint(CHANNEL)
        .ok_or("the publisher has no endpoint")?;
    let mut tallies = Vec::new();
    let mut subscribers = Vec::new();
    for i in 0..SUBSCRIBERS {
        let tally = Arc::new(Tally::default());
        tallies.push(tally.clone());
        let subscriber = node(format!("subscriber-{i}"))
            .fanout(Fanout::subscriber(CHANNEL, Counter(tally)).connect(&endpoint))
            .build()?
            .start()
            .await?;
        subscribers.push(subscriber);
    }
    let tick = Tick(payload.to_vec());
    let send = || {
        let publisher = publisher.clone();
        let tick = tick.clone();
        async move {
            publisher.fanout().publish(CHANNEL, &tick).await?;
            Ok::<(), BoxError>(())
        }
    };
    warm_up(&tallies, send).await?;
    let outcome = measure(&tallies, duration, send).await;
    for subscriber in subscribers {
        subscriber.shutdown().await;
    }
    publisher.shutdown().await;
    outcome
}

fn report(name: &str, o: &Outcome) {
    println!(
        "{name}: published {} in the run, delivered {} ({:.1}% of {} copies) in {:.2} s = {:.0} events/s per subscriber",
        o.published,
        o.delivered,
        100.0 * o.delivered as f64 / (o.published as f64 * SUBSCRIBERS as f64).max(1.0),
        o.published * SUBSCRIBERS as u64,
        o.elapsed.as_secs_f64(),
        o.per_subscriber_per_second()
    );
}

/// Runs both sides and prints the figures, then the JSON line.
pub async fn run(payload_bytes: usize, duration: Duration) -> Result<(), BoxError> {
    let payload: Vec<u8> = (0..payload_bytes).map(|i| (i % 251) as u8).collect();
    println!(
        "fanout benchmark: 127.0.0.1, 1 publisher -> {SUBSCRIBERS} subscribers, {payload_bytes}-byte events, {} tokio worker threads",
        tokio::runtime::Handle::current().metrics().num_workers()
    );
    let raw = raw(&payload, duration).await?;
    report("raw zeromq PUB/SUB", &raw);
    let zlink = zlink(&payload, duration).await?;
    report("zlink fanout (typed subscriber handlers)", &zlink);
    let ratio = zlink.per_subscriber_per_second() / raw.per_subscriber_per_second();
    println!("zlink / raw: throughput {ratio:.2}");
    let summary = serde_json::json!({
        "benchmark": "fanout",
        "subscribers": SUBSCRIBERS,
        "payload_bytes": payload_bytes,
        "seconds": duration.as_secs_f64(),
        "raw_msgs_per_s": raw.per_subscriber_per_second().round(),
        "zlink_msgs_per_s": zlink.per_subscriber_per_second().round(),
        "throughput_ratio": (ratio * 1000.0).round() / 1000.0,
        "raw_published": raw.published,
        "raw_delivered": raw.delivered,
        "zlink_published": zlink.published,
        "zlink_delivered": zlink.delivered,
    });
    println!("{summary}");
    Ok(())
}
