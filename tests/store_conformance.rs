//! The Location Store conformance suite, run against every provider: the in-memory store,
//! the Redis store on a private `redis-server`, and the Redis store on a private 3-master
//! Redis Cluster, one per test.

use std::sync::Arc;

use zlink_testkit::conformance::StoreUnderTest;
use zlink_testkit::{MemoryLocationStore, RedisCluster, RedisServer};

mod memory {
    use super::*;

    // ANCHOR: memory
    async fn fresh() -> StoreUnderTest {
        StoreUnderTest {
            store: Arc::new(MemoryLocationStore::new()),
            guard: None, // a RedisServer, say, kept alive for the test
        }
    }

    zlink_testkit::location_store_conformance!(fresh());
    // ANCHOR_END: memory

    #[tokio::test]
    async fn counters_stop_at_the_maximum_without_wrapping() {
        use zlink::store::{LocationStore, RecordKey, StoreError, MAX_GENERATION};
        let store = MemoryLocationStore::new();
        let counter = RecordKey::new("g", "c");
        store.set_counter(&counter, MAX_GENERATION - 1);
        assert_eq!(store.next_generation(&counter).await, Ok(MAX_GENERATION));
        for _ in 0..2 {
            assert_eq!(
                store.next_generation(&counter).await,
                Err(StoreError::GenerationExhausted)
            );
        }
    }
}

mod redis {
    use super::*;
    use zlink::store::{RedisLocationStore, RedisOptions};

    async fn fresh() -> StoreUnderTest {
        let server = RedisServer::start().expect("redis-server");
        let store = RedisLocationStore::new(RedisOptions::new(server.url(), "conformance"))
            .expect("store options");
        StoreUnderTest {
            store: Arc::new(store),
            guard: Some(Box::new(server)),
        }
    }

    zlink_testkit::location_store_conformance!(fresh());

    #[tokio::test]
    async fn counters_stop_at_the_maximum_without_wrapping() {
        use zlink::store::{LocationStore, RecordKey, StoreError, MAX_GENERATION};
        let server = RedisServer::start().expect("redis-server");
        let store =
            RedisLocationStore::new(RedisOptions::new(server.url(), "conformance")).unwrap();
        let counter = RecordKey::new("g", "c");
        let near = (MAX_GENERATION - 1).to_string();
        assert_eq!(
            server
                .command(&["SET", "{conformance:g:1:g}:ctr:c", &near])
                .unwrap(),
            "+OK"
        );
        assert_eq!(store.next_generation(&counter).await, Ok(MAX_GENERATION));
        for _ in 0..2 {
            assert_eq!(
                store.next_generation(&counter).await,
                Err(StoreError::GenerationExhausted)
            );
        }
        let stored = server
            .command(&["GET", "{conformance:g:1:g}:ctr:c"])
            .unwrap();
        assert_eq!(stored, "$19", "the counter is still a 19-digit number");
    }
}

mod redis_cluster {
    use super::*;
    use zlink::store::{RedisLocationStore, RedisOptions};

    async fn fresh() -> StoreUnderTest {
        let cluster = RedisCluster::start(3, 0).expect("redis cluster");
        let store =
            RedisLocationStore::new(RedisOptions::cluster(cluster.seed_urls(), "conformance"))
                .expect("store options");
        StoreUnderTest {
            store: Arc::new(store),
            guard: Some(Box::new(cluster)),
        }
    }

    zlink_testkit::location_store_conformance!(fresh());
}
