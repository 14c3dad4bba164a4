//! The code shown in the book's "Location Store" chapter, run against a private
//! `redis-server`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::{HandlerContext, Runtime};
use zlink_testkit::RedisServer;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Price)]
pub struct GetPrice(pub String);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Price(pub u64);

#[derive(Clone)]
pub struct Pricing;

#[zlink::channel(server, name = "pricing")]
impl Pricing {
    #[handler]
    async fn price(&self, _q: GetPrice, _ctx: &HandlerContext) -> zlink::Result<Price> {
        Ok(Price(250))
    }
}

#[tokio::test]
async fn location_store_chapter() -> zlink::Result<()> {
    let redis = RedisServer::start().expect("redis-server");
    let redis_url = redis.url();

    // ANCHOR: setup
    use std::sync::Arc;
    use zlink::store::{LocationStore, RedisLocationStore, RedisOptions};

    // One store per process; every node of the process may share it.
    let store: Arc<dyn LocationStore> = Arc::new(RedisLocationStore::new(RedisOptions::new(
        &redis_url, "shop",
    ))?);

    let pricing = Runtime::builder()
        .mesh_name("shop")
        .rid("pricing-1")
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .serve(Pricing)
        .build()?
        .start()
        .await?;
    let checkout = Runtime::builder()
        .mesh_name("shop")
        .rid("checkout-1")
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .channel_client("pricing")
        .build()?
        .start()
        .await?;
    // ANCHOR_END: setup

    // ANCHOR: wait
    checkout
        .nodes()
        .wait_for(Duration::from_secs(5), |peers| {
            peers.iter().any(|p| p.rid == "pricing-1")
        })
        .await?;
    let price = PricingClient::on_default_channel(&checkout)
        .price(&GetPrice("tea".into()))
        .await?;
    // ANCHOR_END: wait
    assert_eq!(price.0, 250);

    // ANCHOR: status
    let lease = pricing
        .discovery()
        .owner_lease()
        .expect("a Location Store is registered");
    assert!(lease.admits_new_work());
    let view = checkout
        .discovery()
        .status()
        .expect("a Location Store is registered");
    for member in &view.members {
        println!(
            "{} (generation {}, revision {}) at {}",
            member.rid, member.generation, member.revision, member.endpoint
        );
    }
    // ANCHOR_END: status
    assert_eq!(view.members.len(), 1);

    // ANCHOR: duplicate
    let twin = Runtime::builder()
        .mesh_name("shop")
        .rid("pricing-1") // already published by a live node
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .serve(Pricing)
        .build()?
        .start()
        .await;
    assert!(matches!(twin, Err(e) if e.is(zlink::ErrorKind::AlreadyExists)));
    // ANCHOR_END: duplicate

    // ANCHOR: tuning
    use zlink::store::OwnerLeaseSettings;

    let tuned = Runtime::builder()
        .mesh_name("shop")
        .rid("pricing-2")
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .owner_lease(OwnerLeaseSettings {
            renew_interval: Duration::from_secs(2),
            ttl: Duration::from_secs(9),
            renew_timeout: Duration::from_secs(1),
            fencing_margin: Duration::from_secs(3), // 2 + 1 < 9 - 3
        })
        .discovery_interval(Duration::from_millis(500))
        .store_failure_grace(Duration::from_secs(60))
        .serve(Pricing)
        .build()?
        .start()
        .await?;
    // ANCHOR_END: tuning
    checkout
        .nodes()
        .wait_for(Duration::from_secs(5), |peers| peers.len() == 2)
        .await?;

    tuned.shutdown().await;
    checkout.shutdown().await;
    pricing.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn embedded_store_chapter() -> zlink::Result<()> {
    // ANCHOR: embedded
    use zlink::store::LocationStore;

    // One in-memory store for the whole process, shared by every runtime in it.
    let store = <dyn LocationStore>::in_memory();

    let pricing = Runtime::builder()
        .mesh_name("shop")
        .rid("pricing-1")
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .serve(Pricing)
        .build()?
        .start()
        .await?;
    let checkout = Runtime::builder()
        .mesh_name("shop")
        .rid("checkout-1")
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .channel_client("pricing")
        .build()?
        .start()
        .await?;
    // ANCHOR_END: embedded
    checkout
        .nodes()
        .wait_for(Duration::from_secs(5), |peers| peers.len() == 1)
        .await?;
    let price = PricingClient::on_default_channel(&checkout)
        .price(&GetPrice("tea".into()))
        .await?;
    assert_eq!(price.0, 250);

    // ANCHOR: metrics
    let calls = checkout
        .status()
        .store_operations
        .expect("a Location Store is registered");
    println!(
        "{} member pages read, {} lease renewals ({} failed)",
        calls.reads.descriptor_page.calls,
        calls.writes.renew_lease.calls,
        calls.writes.renew_lease.failures
    );
    // ANCHOR_END: metrics
    assert!(calls.reads.descriptor_page.calls >= 1);
    assert_eq!(calls.writes.claim_lease.calls, 1);

    checkout.shutdown().await;
    pricing.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn cluster_chapter() -> zlink::Result<()> {
    let cluster = zlink_testkit::RedisCluster::start(3, 0).expect("redis cluster");
    let seeds = cluster.seed_urls();

    // ANCHOR: cluster
    use std::sync::Arc;
    use zlink::store::{LocationStore, RedisLocationStore, RedisOptions};

    // Any reachable nodes of the cluster; the rest is learnt from them.
    let options = RedisOptions::cluster(seeds.iter().cloned(), "shop");
    let store: Arc<dyn LocationStore> = Arc::new(RedisLocationStore::new(options)?);
    // ANCHOR_END: cluster

    let pricing = Runtime::builder()
        .mesh_name("shop")
        .rid("pricing-1")
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .serve(Pricing)
        .build()?
        .start()
        .await?;
    let checkout = Runtime::builder()
        .mesh_name("shop")
        .rid("checkout-1")
        .listen("tcp://127.0.0.1:0")
        .location_store(store)
        .channel_client("pricing")
        .build()?
        .start()
        .await?;
    checkout
        .nodes()
        .wait_for(Duration::from_secs(5), |peers| peers.len() == 1)
        .await?;

    // ANCHOR: durability
    // Authority writes count as applied only once one replica has them too.
    let durable = RedisOptions::cluster(seeds.iter().cloned(), "shop")
        .wait_for_replicas(1, Duration::from_millis(500));
    let durable_store = RedisLocationStore::new(durable)?;
    // ANCHOR_END: durability
    drop(durable_store);

    checkout.shutdown().await;
    pricing.shutdown().await;
    Ok(())
}
