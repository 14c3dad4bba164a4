//! `scale`'s directory on a Redis Cluster: 3 masters with a replica each. Spot creations
//! per second, cold lookups per second (`find` reads the Location Store every time), and
//! what one master's death costs the lookups running through it: how many failed, the
//! longest time no lookup succeeded, and how long until every lookup succeeded again.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use zlink::object::{Spot, SpotContext};
use zlink::store::{LocationStore, RedisLocationStore, RedisOptions};
use zlink::Runtime;
use zlink_testkit::RedisCluster;

use crate::BoxError;

/// Spots created (and looked up).
const SPOTS: usize = 5_000;
/// Workers creating or looking up at once.
const WORKERS: usize = 16;
/// How long the steady lookup phase lasts.
const LOOKUP_PHASE: Duration = Duration::from_secs(3);

/// A Spot with eight bytes of state.
pub struct DirectorySpot(u64);

#[zlink::spot(type = "scale-directory", relocation = disable)]
impl DirectorySpot {
    #[handler]
    async fn touch(
        &mut self,
        _t: crate::scale_fill::Bump,
        _ctx: &SpotContext,
    ) -> zlink::Result<()> {
        self.0 += 1;
        Ok(())
    }
}

impl Spot for DirectorySpot {}

fn spot_id(index: usize) -> String {
    format!("dir-{index}")
}

/// What the lookups saw, shared by the workers.
#[derive(Default)]
struct Lookups {
    succeeded: AtomicU64,
    failed: AtomicU64,
    /// When each success happened, after the kill (the gaps between them are stalls).
    successes_after_kill: Mutex<Vec<Instant>>,
    killed_at: Mutex<Option<Instant>>,
    stop: AtomicBool,
}

impl Lookups {
    fn record(&self, ok: bool) {
        if !ok {
            self.failed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.succeeded.fetch_add(1, Ordering::Relaxed);
        let killed = self.killed_at.lock().map(|k| k.is_some()).unwrap_or(false);
        if killed {
            if let Ok(mut at) = self.successes_after_kill.lock() {
                at.push(Instant::now());
            }
        }
    }
}

/// Looks Spots up until told to stop.
fn spawn_lookups(rt: &Runtime, lookups: &Arc<Lookups>) -> Vec<tokio::task::JoinHandle<()>> {
    (0..WORKERS)
        .map(|worker| {
            let (handle, lookups) = (rt.handle().clone(), lookups.clone());
            tokio::spawn(async move {
                let mut k = worker;
                while !lookups.stop.load(Ordering::Relaxed) {
                    k = (k + 7_919) % SPOTS;
                    let found = handle.spots().find(&spot_id(k)).await;
                    lookups.record(matches!(found, Ok(Some(_))));
                    if found.is_err() {
                        // A failing store answers at once: do not spin on it.
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
            })
        })
        .collect()
}

async fn create_all(rt: &Runtime) -> Result<f64, BoxError> {
    let handle = rt.handle().clone();
    let started = Instant::now();
    crate::scale_fill::for_each_index(SPOTS, move |i| {
        let handle = handle.clone();
        async move {
            handle
                .spots()
                .get_or_create(&spot_id(i), DirectorySpot::STABLE_TYPE, zlink::Bytes::new())
                .await?;
            Ok(())
        }
    })
    .await?;
    Ok(SPOTS as f64 / started.elapsed().as_secs_f64())
}

/// Runs the measurement on a fresh 3-master cluster.
pub async fn run() -> Result<serde_json::Value, BoxError> {
    let cluster = RedisCluster::start(3, 1)?;
    let options = RedisOptions::cluster(cluster.seed_urls(), "bench-directory")
        .operation_timeout(Duration::from_millis(800));
    let store: Arc<dyn LocationStore> = Arc::new(RedisLocationStore::new(options)?);
    let rt = Runtime::builder()
        .mesh_name("bench-directory")
        .listen("tcp://127.0.0.1:0")
        .location_store(store)
        .spot_type(DirectorySpot::spot_type(|_| DirectorySpot(0))?)
        .build()?
        .start()
        .await?;
    rt.spots().ready(DirectorySpot::STABLE_TYPE, 1).await?;
    let creations_per_s = create_all(&rt).await?;
    let lookups = Arc::new(Lookups::default());
    let workers = spawn_lookups(&rt, &lookups);
    tokio::time::sleep(LOOKUP_PHASE).await;
    let steady = lookups.succeeded.load(Ordering::Relaxed) as f64 / LOOKUP_PHASE.as_secs_f64();
    let killed_at = Instant::now();
    if let Ok(mut at) = lookups.killed_at.lock() {
        *at = Some(killed_at);
    }
    let failed_before_kill = lookups.failed.load(Ordering::Relaxed);
    cluster.kill_master(0)?;
    let healthy =
        tokio::task::block_in_place(|| cluster.wait_until_healthy(Duration::from_secs(30)));
    let healthy_ms = killed_at.elapsed().as_secs_f64() * 1000.0;
    // Lookups go on a while after the failover, to see them all succeed again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    lookups.stop.store(true, Ordering::Relaxed);
    for worker in workers {
        let _ = worker.await;
    }
    healthy?;
    let successes = lookups
        .successes_after_kill
        .lock()
        .map(|s| s.clone())
        .unwrap_or_default();
    let (longest_stall, _) = successes
        .iter()
        .fold((Duration::ZERO, killed_at), |(longest, previous), at| {
            (longest.max(*at - previous), *at)
        });
    rt.shutdown().await;
    Ok(serde_json::json!({
        "masters": 3,
        "spots": SPOTS,
        "creations_per_s": creations_per_s.round(),
        "cold_lookups_per_s": steady.round(),
        "lookups_failed_after_master_kill": lookups.failed.load(Ordering::Relaxed) - failed_before_kill,
        "longest_lookup_stall_ms": (longest_stall.as_secs_f64() * 1000.0).round(),
        "cluster_healthy_after_ms": healthy_ms.round(),
    }))
}
