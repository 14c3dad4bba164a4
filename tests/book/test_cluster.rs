//! The testkit's `TestCluster`, as an application's integration test uses it: three nodes
//! in one test, a Spot on one of them, store reads counted per node, a partition and a kill.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{Spot, SpotContext, SpotCreation};
use zlink::{CallOptions, ErrorKind};
use zlink_testkit::{wait_until, TestCluster};

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Count)]
pub struct Bump;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Count(pub u64);

/// A counter Spot.
#[derive(Default)]
pub struct Counter(u64);

#[zlink::spot(type = "counter", relocation = disable)]
impl Counter {
    #[handler]
    async fn bump(&mut self, _bump: Bump, _ctx: &SpotContext) -> zlink::Result<Count> {
        self.0 += 1;
        Ok(Count(self.0))
    }
}

impl Spot for Counter {}

zlink_book_snippets::snippet!("spots.md", "cluster");

#[tokio::test]
async fn a_partitioned_owner_is_unavailable_until_the_partition_heals() {
    let cluster = cluster().await;
    let caller = cluster.node(1);
    caller
        .spots()
        .get_or_create("c", Counter::STABLE_TYPE, "")
        .await
        .unwrap();
    let counter = CounterClient::new(caller, "c");
    assert_eq!(counter.bump(&Bump).await.unwrap().0, 1);

    cluster.partition(0, 1);
    // The link looks open but carries nothing: liveness closes it.
    wait_until(Duration::from_secs(10), "n1 lost n0", || async {
        caller.nodes().peers().iter().all(|p| p.rid != "n0")
    })
    .await;
    let quick = CallOptions::new().timeout(Duration::from_millis(500));
    let cut = counter.bump(&Bump).options(quick).await.unwrap_err();
    assert!(cut.is(ErrorKind::Unavailable), "{cut}");
    // Nothing was re-created elsewhere: n2 still reaches the one counter on n0.
    let other = CounterClient::new(cluster.node(2), "c");
    assert_eq!(other.bump(&Bump).await.unwrap().0, 2);

    cluster.heal(0, 1);
    wait_until(
        Duration::from_secs(10),
        "n1 reaches the counter again",
        || async { counter.bump(&Bump).await.is_ok() },
    )
    .await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_killed_owner_leaves_its_spots_unavailable() {
    let mut cluster = cluster().await;
    cluster
        .node(1)
        .spots()
        .get_or_create("c", Counter::STABLE_TYPE, "")
        .await
        .unwrap();
    cluster.kill(0).await;
    let counter = CounterClient::new(cluster.node(1), "c");
    wait_until(
        Duration::from_secs(10),
        "the dead owner is noticed",
        || async {
            matches!(counter.bump(&Bump).await, Err(ref e) if e.is(ErrorKind::Unavailable))
        },
    )
    .await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn test_cluster_runs_on_real_tcp_with_redis() {
    let mut cluster = TestCluster::on_tcp_with_redis(3, |i, node| {
        if i == 0 {
            node.spot_type(Counter::spot_type(|_| Counter::default()).expect("a Spot type"))
        } else {
            node
        }
    })
    .await;
    assert!(cluster.redis().is_some(), "a real redis-server");
    for i in 0..cluster.len() {
        let endpoint = cluster.node(i).endpoint();
        assert!(endpoint.starts_with("tcp://127.0.0.1:"), "{endpoint}");
    }
    // Created from n2, placed on n0 (the only node serving counters), called from n1.
    let created = cluster
        .node(2)
        .spots()
        .get_or_create("c", Counter::STABLE_TYPE, "")
        .await
        .unwrap();
    assert!(
        matches!(created, SpotCreation::Created(ref c, _) if c.rid == "n0"),
        "{created:?}"
    );
    let counter = CounterClient::new(cluster.node(1), "c");
    let cold = cluster.store_reads(1);
    assert_eq!(counter.bump(&Bump).await.unwrap().0, 1);
    assert_eq!(
        cluster.store_reads(1),
        cold + 1,
        "a miss reads the store once"
    );
    for n in 2..=11 {
        assert_eq!(counter.bump(&Bump).await.unwrap().0, n);
    }
    assert_eq!(
        cluster.store_reads(1),
        cold + 1,
        "ten warm calls, zero store reads"
    );

    cluster.kill(0).await;
    let quick = || CallOptions::new().timeout(Duration::from_millis(500));
    wait_until(
        Duration::from_secs(10),
        "n1 finds the killed owner unavailable",
        || async {
            matches!(counter.bump(&Bump).options(quick()).await, Err(ref e) if e.is(ErrorKind::Unavailable))
        },
    )
    .await;
    // From a node with no cached route too: the authority stays with the dead owner, so it
    // is Unavailable, not Missing, and nothing is created elsewhere.
    let other = CounterClient::new(cluster.node(2), "c");
    let dead = other.bump(&Bump).options(quick()).await.unwrap_err();
    assert_eq!(dead.kind(), Some(ErrorKind::Unavailable), "{dead}");
    let found = cluster.node(2).spots().find("c").await.unwrap();
    assert!(matches!(found, Some(ref c) if c.rid == "n0"), "{found:?}");
    cluster.shutdown().await;
}
