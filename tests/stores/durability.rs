//! The durability knob: authority writes that wait for replicas (`WAIT`), on a primary
//! and one replica started by the testkit.

use std::time::{Duration, Instant};

use bytes::Bytes;
use zlink::store::{
    ApplyOutcome, Batch, Condition, LocationStore, Mutation, ReadOutcome, RecordKey,
    RedisLocationStore, RedisOptions, StoreError,
};
use zlink_testkit::RedisServer;

const PREFIX: &str = "durable";

/// The raw Redis key of a record of group `obj-1` (the provider's layout).
fn raw_key(name: &str) -> String {
    format!("{{{PREFIX}:g:5:obj-1}}:rec:{name}")
}

fn create(name: &str) -> Batch {
    Batch {
        conditions: vec![Condition::Missing(RecordKey::new("obj-1", name))],
        mutations: vec![Mutation::Put {
            key: RecordKey::new("obj-1", name),
            value: Bytes::from_static(b"node-a"),
            retention: None,
        }],
    }
}

#[tokio::test]
async fn authority_writes_wait_for_a_replica_when_asked() {
    let primary = RedisServer::start().expect("redis-server");
    let replica = RedisServer::start_replica_of(&primary).expect("replica");
    let options = RedisOptions::new(primary.url(), PREFIX)
        .operation_timeout(Duration::from_secs(2))
        .wait_for_replicas(1, Duration::from_millis(300));
    let durable = RedisLocationStore::new(options).unwrap();
    let plain = RedisLocationStore::new(RedisOptions::new(primary.url(), PREFIX)).unwrap();

    // Applied means the replica has it: read it there at once, without polling.
    let applied = durable.apply(&create("owner")).await.unwrap();
    assert!(matches!(applied, ApplyOutcome::Applied(_)));
    assert_eq!(
        replica.command(&["EXISTS", &raw_key("owner")]).unwrap(),
        ":1"
    );
    assert_eq!(
        durable
            .next_generation(&RecordKey::new("obj-1", "gen"))
            .await,
        Ok(1)
    );

    // With the replica frozen, a durable write is applied on the primary but not
    // acknowledged: it does not count as applied, and says so.
    replica.pause().unwrap();
    let started = Instant::now();
    let lonely = durable.apply(&create("second")).await;
    assert!(
        matches!(&lonely, Err(StoreError::NotReplicated(detail)) if detail.contains("0 of 1 replicas")),
        "{lonely:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "bounded by the wait"
    );
    assert!(matches!(
        durable.read(&RecordKey::new("obj-1", "second")).await,
        Ok(ReadOutcome::Found { .. })
    ));
    assert!(matches!(
        durable
            .next_generation(&RecordKey::new("obj-1", "gen"))
            .await,
        Err(StoreError::NotReplicated(_))
    ));
    // The resolver does not turn it into "applied" by reading the primary back.
    assert!(matches!(
        zlink::store::resolve::apply_resolving(&durable, &create("fourth")).await,
        Err(StoreError::NotReplicated(_))
    ));
    // A conflict changed nothing, so there is nothing to wait for.
    assert_eq!(
        durable.apply(&create("owner")).await,
        Ok(ApplyOutcome::Conflict)
    );
    // Off by default: the same write without the knob does not wait.
    let started = Instant::now();
    assert!(matches!(
        plain.apply(&create("third")).await,
        Ok(ApplyOutcome::Applied(_))
    ));
    assert!(started.elapsed() < Duration::from_millis(250));
    // Lease and descriptor writes never wait, even with the knob on.
    let owner = zlink::store::OwnerId("o".into());
    assert!(durable
        .claim_lease(&owner, Duration::from_secs(5))
        .await
        .is_ok());
    replica.resume().unwrap();
}

#[test]
fn the_replica_wait_must_fit_inside_the_operation_timeout() {
    let invalid = |options: RedisOptions| match RedisLocationStore::new(options) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted"),
    };
    let base = || RedisOptions::new("redis://127.0.0.1:1/", PREFIX);
    assert!(
        invalid(base().wait_for_replicas(0, Duration::from_millis(100))).contains("0 replicas")
    );
    assert!(invalid(base().wait_for_replicas(1, Duration::from_secs(5)))
        .contains("below the operation timeout"));
    let cluster = RedisOptions::cluster(Vec::<String>::new(), PREFIX);
    assert!(invalid(cluster).contains("at least one seed"));
}
