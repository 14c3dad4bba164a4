//! RouteMesh discovery on a real Redis Cluster started by the testkit: nodes find each
//! other, a master is killed and its replica takes over, and a cluster that loses a
//! master with no replica is a store outage the mesh rides out.

use std::sync::Arc;
use std::time::Duration;

use zlink::store::{LocationStore, OwnerLeaseSettings, RedisLocationStore, RedisOptions};
use zlink_testkit::{wait_until, RedisCluster};
use zlink_tests::*;

/// Long enough that no lease runs out while a replica takes over (about 2-3 s).
fn failover_lease() -> OwnerLeaseSettings {
    OwnerLeaseSettings {
        renew_interval: Duration::from_millis(500),
        ttl: Duration::from_secs(8),
        renew_timeout: Duration::from_millis(500),
        fencing_margin: Duration::from_secs(2),
    }
}

fn cluster_store(cluster: &RedisCluster) -> Arc<dyn LocationStore> {
    let options = RedisOptions::cluster(cluster.seed_urls(), "zlink-test")
        .operation_timeout(Duration::from_millis(800));
    Arc::new(RedisLocationStore::new(options).expect("cluster options"))
}

/// The index in `master_ports()` of the master serving the test mesh's descriptor scope:
/// a node that does not serve a key answers `-MOVED <slot> <host>:<port>`.
fn master_of_the_mesh_scope(cluster: &RedisCluster) -> usize {
    let key = format!("{{zlink-test:d:mesh:{}:{MESH}}}:stamp", MESH.len());
    let masters = cluster.master_ports().expect("masters");
    let asked = cluster.node_on_port(masters[0]).expect("a master");
    let reply = asked.command(&["GET", &key]).expect("GET");
    let owner = match reply.strip_prefix("-MOVED ") {
        Some(moved) => moved
            .rsplit(':')
            .next()
            .and_then(|p| p.parse::<u16>().ok())
            .expect("a MOVED port"),
        None => masters[0],
    };
    masters
        .iter()
        .position(|p| *p == owner)
        .expect("the owner is a master")
}

async fn echo_server(rid: &str, store: &Arc<dyn LocationStore>) -> zlink::Runtime {
    start(
        discovered_node(rid, store, failover_lease())
            .channel_server(CHANNEL, echo_handlers(rid, Default::default())),
    )
    .await
}

async fn echo_client(rid: &str, store: &Arc<dyn LocationStore>) -> zlink::Runtime {
    start(discovered_node(rid, store, failover_lease()).channel_client(CHANNEL)).await
}

#[tokio::test]
async fn discovery_works_on_a_redis_cluster_and_survives_a_master_kill() {
    let cluster = RedisCluster::start(3, 1).expect("redis cluster");
    let store = cluster_store(&cluster);
    let a = echo_server("a", &store).await;
    let b = echo_server("b", &store).await;
    let c = echo_client("c", &store).await;
    wait_until(WAIT, "c sees a and b", || async {
        peer_rids(&c) == ["a", "b"]
    })
    .await;
    assert_eq!(
        c.discovery().status().unwrap().members.len(),
        2,
        "the member list came from the cluster"
    );

    cluster
        .kill_master(master_of_the_mesh_scope(&cluster))
        .expect("kill the scope's master");
    // Existing traffic does not depend on the store.
    for _ in 0..4 {
        echo_by(&c).await;
    }
    cluster
        .wait_until_healthy(Duration::from_secs(20))
        .expect("a replica took over");
    // After the failover the store answers again, and a node started now is found.
    let d = echo_server("d", &store).await;
    wait_until(WAIT, "c sees d after the failover", || async {
        peer_rids(&c) == ["a", "b", "d"]
    })
    .await;
    wait_until(WAIT, "c's store is reachable again", || async {
        c.discovery().status().unwrap().store_reachable
    })
    .await;
    let mut answered = std::collections::HashSet::new();
    for _ in 0..6 {
        answered.insert(echo_by(&c).await);
    }
    assert_eq!(answered.len(), 3, "{answered:?}");
    for rt in [&a, &b, &d] {
        assert!(rt.discovery().owner_lease().unwrap().admits_new_work());
    }
    stop([d, c, b, a]).await;
}

#[tokio::test]
async fn a_cluster_that_loses_a_master_is_an_outage_the_mesh_rides_out() {
    // No replicas: the killed master's slots stay unserved, and the whole cluster
    // refuses (cluster_state:fail), as one dead Redis would.
    let cluster = RedisCluster::start(3, 0).expect("redis cluster");
    let store = cluster_store(&cluster);
    let a = echo_server("a", &store).await;
    let c = echo_client("c", &store).await;
    wait_until(WAIT, "c sees a", || async { peer_rids(&c) == ["a"] }).await;

    cluster
        .kill_master(master_of_the_mesh_scope(&cluster))
        .expect("kill the scope's master");
    wait_until(WAIT, "c notices the store is out", || async {
        !c.discovery().status().unwrap().store_reachable
    })
    .await;
    // Within StoreFailureGrace the known peer stays, and traffic flows.
    for _ in 0..5 {
        assert_eq!(echo_by(&c).await, "a");
    }
    // A node started during the outage is not seen: nothing new is connected.
    let late = echo_server("late", &store).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(peer_rids(&c), ["a"]);
    assert!(
        c.status()
            .store_operations
            .unwrap()
            .reads
            .descriptor_page
            .failures
            > 0
    );
    stop([late, c, a]).await;
}
