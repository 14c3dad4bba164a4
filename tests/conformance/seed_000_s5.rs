//! Seed 000 §5: global ID lookup, movement and Message Follow, session bind and relay,
//! reply.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;
use zlink::object::{CreateDecision, Spot, SpotContext};
use zlink::{ErrorKind, Runtime};
use zlink_testkit::{wait_until, FaultyLocationStore, RedisServer};
use zlink_tests::*;

const WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Pong)]
pub struct Ping;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Pong;

/// A Spot whose creation waits at `gate` before it accepts.
pub struct Gated {
    gate: Arc<Semaphore>,
}

#[zlink::spot(type = "gated", relocation = disable)]
impl Gated {
    #[handler]
    async fn ping(&mut self, _ping: Ping, _ctx: &SpotContext) -> zlink::Result<Pong> {
        Ok(Pong)
    }
}

#[zlink::async_trait]
impl Spot for Gated {
    async fn on_create(&mut self, _ctx: &SpotContext, _request: Bytes) -> CreateDecision {
        let _pass = self.gate.acquire().await;
        CreateDecision::Accept(Bytes::new())
    }
}

fn record_reads(rt: &Runtime) -> u64 {
    rt.status()
        .store_operations
        .map_or(0, |s| s.reads.record.calls)
}

/// The record reads `calls` pings of Spot `id` from `caller` made, and their results.
async fn reads_of(caller: &Runtime, id: &str, calls: usize) -> (u64, Vec<zlink::Result<Pong>>) {
    let before = record_reads(caller);
    let mut results = Vec::new();
    for _ in 0..calls {
        results.push(GatedClient::new(caller, id).ping(&Ping).await);
    }
    (record_reads(caller) - before, results)
}

/// Seed 000 §5, global ID lookup, item 3.
#[tokio::test]
async fn missing_creating_and_store_failure_are_never_cached_as_negative_results() {
    // "Missing, Creating and Store failure are not kept in the cache as negative results."
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let gate = Arc::new(Semaphore::new(0));
    let server = {
        let gate = gate.clone();
        start(
            discovered_node("server", &store, quick_lease())
                .spot_type(Gated::spot_type(move |_| Gated { gate: gate.clone() }).unwrap()),
        )
        .await
    };
    let faulty = Arc::new(FaultyLocationStore::new(store.clone()));
    let caller_store: Arc<dyn zlink::store::LocationStore> = faulty.clone();
    let caller = start(discovered_node("caller", &caller_store, quick_lease())).await;
    wait_until(WAIT, "the caller sees the server", || async {
        peer_rids(&caller) == ["server"]
    })
    .await;
    // Missing: every call reads again.
    let (reads, results) = reads_of(&caller, "s1", 2).await;
    assert_eq!(reads, 2, "Missing is not cached");
    assert!(results
        .iter()
        .all(|r| r.as_ref().is_err_and(|e| e.is(ErrorKind::NotFound))));
    // Creating: every call reads again.
    let creating = tokio::spawn({
        let server = server.clone();
        async move {
            server
                .spots()
                .get_or_create("s1", "gated", Bytes::new())
                .await
        }
    });
    wait_until(WAIT, "s1 is being created", || async {
        matches!(
            GatedClient::new(&caller, "s1").ping(&Ping).await,
            Err(e) if e.is(ErrorKind::Unavailable)
        )
    })
    .await;
    let (reads, results) = reads_of(&caller, "s1", 2).await;
    assert_eq!(reads, 2, "Creating is not cached");
    assert!(
        results
            .iter()
            .all(|r| r.as_ref().is_err_and(|e| e.is(ErrorKind::Unavailable))),
        "{results:?}"
    );
    gate.add_permits(1);
    creating.await.unwrap().unwrap();
    // A store failure: the call fails, and the next one reads again and succeeds.
    faulty.set_down(true);
    let failed = GatedClient::new(&caller, "s1").ping(&Ping).await;
    faulty.set_down(false);
    assert!(failed.is_err(), "the store failed: {failed:?}");
    let (reads, results) = reads_of(&caller, "s1", 3).await;
    assert_eq!(
        reads, 1,
        "after a store failure one read, then the Ready route is cached"
    );
    assert!(results.iter().all(Result::is_ok));
    stop([caller, server]).await;
}
