//! The Relocation Store conformance suite, run against every provider: the in-memory
//! store, the Redis store on a private `redis-server`, and the Redis store on a private
//! 3-master Redis Cluster, one per test.

use std::sync::Arc;

use zlink::store::{RedisOptions, RedisRelocationStore};
use zlink_testkit::relocation_conformance::RelocationStoreUnderTest;
use zlink_testkit::{MemoryRelocationStore, RedisCluster, RedisServer};

mod memory {
    use super::*;

    async fn fresh() -> RelocationStoreUnderTest {
        RelocationStoreUnderTest {
            store: Arc::new(MemoryRelocationStore::new()),
            guard: None,
        }
    }

    zlink_testkit::relocation_store_conformance!(fresh());
}

mod redis {
    use super::*;

    async fn fresh() -> RelocationStoreUnderTest {
        let server = RedisServer::start().expect("redis-server");
        let store = RedisRelocationStore::new(RedisOptions::new(server.url(), "relocation"))
            .expect("store options");
        RelocationStoreUnderTest {
            store: Arc::new(store),
            guard: Some(Box::new(server)),
        }
    }

    zlink_testkit::relocation_store_conformance!(fresh());
}

mod redis_cluster {
    use super::*;

    async fn fresh() -> RelocationStoreUnderTest {
        let cluster = RedisCluster::start(3, 0).expect("redis cluster");
        let store =
            RedisRelocationStore::new(RedisOptions::cluster(cluster.seed_urls(), "relocation"))
                .expect("store options");
        RelocationStoreUnderTest {
            store: Arc::new(store),
            guard: Some(Box::new(cluster)),
        }
    }

    zlink_testkit::relocation_store_conformance!(fresh());
}
