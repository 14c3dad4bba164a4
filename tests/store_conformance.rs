//! The Location Store conformance suite, run against both providers: the in-memory store
//! and the Redis store on a private `redis-server` per test.

use std::sync::Arc;

use zlink_testkit::conformance::StoreUnderTest;
use zlink_testkit::{MemoryLocationStore, RedisServer};

mod memory {
    use super::*;

    async fn fresh() -> StoreUnderTest {
        StoreUnderTest {
            store: Arc::new(MemoryLocationStore::new()),
            guard: None,
        }
    }

    zlink_testkit::location_store_conformance!(fresh());
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
}
