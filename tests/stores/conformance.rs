//! The Location Store conformance suite, run against every provider: the in-memory store,
//! the Redis store on a private `redis-server`, and the Redis store on a private 3-master
//! Redis Cluster, one per test.

use std::sync::Arc;

use zlink_testkit::conformance::StoreUnderTest;
use zlink_testkit::{RedisCluster, RedisServer};

mod memory {

    zlink_book_snippets::statements!("location-store.md", "memory");

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

    /// The lease check and the descriptor write are in different slots, so a publish that
    /// checked an older lease can land after the same owner republished under a newer one:
    /// the script refuses it as stale instead of putting back a holder readers would
    /// remove as dead.
    #[tokio::test]
    async fn an_older_lease_generation_never_overwrites_a_newer_descriptor() {
        use zlink::store::{DescriptorKey, LeaseToken, LocationStore, OwnerId, PublishOutcome};
        let server = RedisServer::start().expect("redis-server");
        let store =
            RedisLocationStore::new(RedisOptions::new(server.url(), "conformance")).unwrap();
        // Owner o's lease generation 3 is live, but its descriptor already carries 5.
        assert_eq!(
            server
                .command(&["SET", "{conformance:o:1:o}:lease", "3", "PX", "30000"])
                .unwrap(),
            "+OK"
        );
        let scope = "{conformance:d:mesh:4:mesh}";
        server
            .command(&["HSET", &format!("{scope}:holders"), "n1", "5:o"])
            .unwrap();
        server
            .command(&["HSET", &format!("{scope}:bodies"), "n1", "newer"])
            .unwrap();
        let old = LeaseToken {
            owner: OwnerId("o".into()),
            generation: 3,
        };
        let key = DescriptorKey::mesh_node("mesh", "n1");
        assert_eq!(
            store.publish_descriptor(&old, &key, b"older").await,
            Ok(PublishOutcome::Stale)
        );
        let entry = store.read_descriptor(&key).await.unwrap().expect("kept");
        assert_eq!(entry.owner.generation, 5);
        assert_eq!(&entry.body[..], b"newer");
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
