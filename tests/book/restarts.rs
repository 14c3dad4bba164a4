//! The code shown in the book's "Restarts and failures" chapter: stopping on a signal, a
//! rolling restart, undrain, the explicit reclaim of a crashed node's objects, and the
//! per-type `on_owner_lost = reclaim` policy, over real TCP on 127.0.0.1 and a private
//! `redis-server`.

use zlink::object::Actor;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::ActorCreation;
use zlink::store::LocationStore;
use zlink::Runtime;
use zlink_testkit::{wait_until, RedisServer};
use zlink_tests::{quick_lease, WAIT};

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Seen)]
pub struct Visit;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Seen {
    pub visits: u64,
    pub node: String,
}

zlink_book_snippets::snippet!("restarts.md", "policy");

pub struct Visitor {
    visits: u64,
    node: String,
}

impl Actor for Visitor {}

impl zlink::object::RelocationState for Visitor {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        Ok(self.visits.to_be_bytes().to_vec())
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        let bytes: [u8; 8] = state
            .try_into()
            .map_err(|_| zlink::Error::InvalidArgument("8 bytes".into()))?;
        self.visits = u64::from_be_bytes(bytes);
        Ok(())
    }
}

async fn visitor_node(rid: &str, redis: &RedisServer) -> zlink::Result<Runtime> {
    use zlink::store::{RedisOptions, RedisRelocationStore};
    let node = rid.to_string();
    Runtime::builder()
        .mesh_name("site")
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
        .location_store(location_store(redis)?)
        .relocation_store(Arc::new(RedisRelocationStore::new(RedisOptions::new(
            redis.url(),
            "site-relocation",
        ))?))
        .owner_lease(quick_lease())
        .actor_type(Visitor::actor_type(move |_ctx| Visitor {
            visits: 0,
            node: node.clone(),
        })?)
        .build()?
        .start()
        .await
}

fn location_store(redis: &RedisServer) -> zlink::Result<Arc<dyn LocationStore>> {
    use zlink::store::{RedisLocationStore, RedisOptions};
    Ok(Arc::new(RedisLocationStore::new(RedisOptions::new(
        redis.url(),
        "site",
    ))?))
}

/// Ends `rt` as a killed process ends, and waits until its owner lease expired.
async fn crash_until_lease_expired(rt: &Runtime, redis: &RedisServer) -> zlink::Result<()> {
    let lease = rt.discovery().owner_lease().and_then(|l| l.token).unwrap();
    rt.crash().await;
    let store = location_store(redis)?;
    wait_until(WAIT, "the lease expired", || async {
        store
            .read_lease(&lease.owner)
            .await
            .is_ok_and(|grant| grant.is_none_or(|g| g.token.generation != lease.generation))
    })
    .await;
    Ok(())
}

zlink_book_snippets::snippet!("restarts.md", "main");

async fn visits(rt: &zlink::Handle, id: &str) -> zlink::Result<Seen> {
    VisitorClient::new(rt, id).visit(Visit).await
}

#[tokio::test]
async fn restarts_chapter() -> zlink::Result<()> {
    // `serve` is what a `main` runs; here it stands ready, and the test stops the nodes.
    let _ = serve;
    let redis = RedisServer::start().expect("redis-server");
    let a = visitor_node("a", &redis).await?;
    let b = visitor_node("b", &redis).await?;
    a.actors().ready("visitor", 2).await?;
    for i in 0..4 {
        a.actors().create(&format!("v{i}"), "visitor").await?;
        visits(&a, &format!("v{i}")).await?;
    }

    zlink_book_snippets::statements!("restarts.md", "rolling");
    for i in 0..4 {
        let seen = visits(&b, &format!("v{i}")).await?;
        assert_eq!((seen.visits, seen.node.as_str()), (2, "b"));
    }
    let a = visitor_node("a", &redis).await?;
    b.actors().ready("visitor", 2).await?;

    zlink_book_snippets::statements!("restarts.md", "undrain");
    assert_eq!(visits(&a, "v0").await?.node, "a");

    // b takes new visitors again; then a crashes, holding v0..v3.
    wait_until(WAIT, "a sees b serving", || async {
        a.discovery()
            .status()
            .is_some_and(|s| s.members.iter().any(|m| m.rid == "b" && !m.draining))
    })
    .await;
    crash_until_lease_expired(&a, &redis).await?;

    zlink_book_snippets::statements!("restarts.md", "reclaim");
    assert!(report.refused.is_empty(), "{report:?}");

    // `visitor` declares on_owner_lost = reclaim: had nobody reclaimed v2, the next
    // get_or_create would have done it by itself.
    let fresh = visits(&b, "v1").await?;
    assert_eq!((fresh.visits, fresh.node.as_str()), (1, "b"));
    b.shutdown().await;
    Ok(())
}

/// The per-type policy on its own: a caller meets a crashed owner's visitor and makes a
/// new one, without an operator.
#[tokio::test]
async fn on_owner_lost_reclaim_makes_a_new_incarnation_without_an_operator() -> zlink::Result<()> {
    let redis = RedisServer::start().expect("redis-server");
    let a = visitor_node("a", &redis).await?;
    a.actors().create("solo", "visitor").await?;
    let b = visitor_node("b", &redis).await?;
    b.actors().ready("visitor", 2).await?;
    crash_until_lease_expired(&a, &redis).await?;
    let again = b.actors().get_or_create("solo", "visitor").await?;
    let ActorCreation::Created(actor) = again else {
        panic!("created anew, got {again:?}")
    };
    assert_eq!(actor.rid, "b");
    tokio::time::timeout(Duration::from_secs(5), b.shutdown())
        .await
        .expect("b stops");
    Ok(())
}
