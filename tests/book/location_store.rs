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

    zlink_book_snippets::statements!("location-store.md", "setup");

    zlink_book_snippets::statements!("location-store.md", "wait");
    assert_eq!(price.0, 250);

    zlink_book_snippets::statements!("location-store.md", "status");
    assert_eq!(view.members.len(), 1);

    zlink_book_snippets::statements!("location-store.md", "duplicate");

    zlink_book_snippets::statements!("location-store.md", "tuning");
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
    zlink_book_snippets::statements!("location-store.md", "embedded");
    checkout
        .nodes()
        .wait_for(Duration::from_secs(5), |peers| peers.len() == 1)
        .await?;
    let price = PricingClient::on_default_channel(&checkout)
        .price(&GetPrice("tea".into()))
        .await?;
    assert_eq!(price.0, 250);

    zlink_book_snippets::statements!("location-store.md", "metrics");
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

    zlink_book_snippets::statements!("location-store.md", "cluster");

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

    zlink_book_snippets::statements!("location-store.md", "durability");
    drop(durable_store);

    checkout.shutdown().await;
    pricing.shutdown().await;
    Ok(())
}
