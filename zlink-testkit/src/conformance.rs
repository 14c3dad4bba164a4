//! The Location Store conformance suite: the contract every provider must meet, written
//! once and run against each provider (in-memory and Redis) with
//! [`location_store_conformance!`](crate::location_store_conformance).
//!
//! Each rule is a function taking a fresh, empty store.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use zlink::store::resolve::{apply_resolving, claim_resolving, publish_resolving};
use zlink::store::{
    ApplyOutcome, Batch, ClaimOutcome, Condition, DescriptorKey, DescriptorKind, DescriptorScope,
    LeaseOutcome, LeaseToken, LocationStore, Mutation, OwnerId, PublishOutcome, ReadOutcome,
    RecordKey, StoreError, StoreVersion, MAX_BATCH_BYTES, MAX_BATCH_KEYS, MAX_RETENTION,
    MAX_SCAN_PAGE, MAX_VALUE_BYTES,
};

use crate::{wait_until, FaultyLocationStore};

/// The store under test, plus whatever must live as long as it (a Redis server, say).
pub struct StoreUnderTest {
    /// The store.
    pub store: Arc<dyn LocationStore>,
    /// Kept alive for the test's duration.
    pub guard: Option<Box<dyn std::any::Any + Send + Sync>>,
}

const LONG: Duration = Duration::from_secs(30);
const SHORT: Duration = Duration::from_millis(300);
const PATIENCE: Duration = Duration::from_secs(10);

fn key(name: &str) -> RecordKey {
    RecordKey::new("g", name)
}

fn put(name: &str, value: &'static [u8]) -> Mutation {
    Mutation::Put {
        key: key(name),
        value: Bytes::from_static(value),
        retention: None,
    }
}

async fn version_of(store: &dyn LocationStore, name: &str) -> StoreVersion {
    match store.read(&key(name)).await.expect("read") {
        ReadOutcome::Found { version, .. } => version,
        ReadOutcome::Missing => panic!("{name} is missing"),
    }
}

async fn claimed(store: &dyn LocationStore, owner: &str, ttl: Duration) -> LeaseToken {
    match store
        .claim_lease(&OwnerId(owner.into()), ttl)
        .await
        .expect("claim")
    {
        ClaimOutcome::Claimed(grant) => grant.token,
        ClaimOutcome::Conflict => panic!("lease of {owner} already live"),
    }
}

fn scope() -> DescriptorScope {
    DescriptorScope {
        kind: DescriptorKind::MeshNode,
        scope: "mesh".into(),
    }
}

fn descriptor(id: &str) -> DescriptorKey {
    DescriptorKey {
        scope: scope(),
        id: id.into(),
    }
}

/// Reading an absent record is `Missing` and creates nothing.
pub async fn read_of_a_missing_record_is_missing(s: StoreUnderTest) {
    let store = s.store.as_ref();
    assert_eq!(
        store.read(&key("absent")).await.unwrap(),
        ReadOutcome::Missing
    );
    assert_eq!(
        store.read(&key("absent")).await.unwrap(),
        ReadOutcome::Missing
    );
}

/// A put is read back with a version; every write issues a new version.
pub async fn every_write_issues_a_new_version(s: StoreUnderTest) {
    let store = s.store.as_ref();
    let first = Batch {
        conditions: vec![Condition::Missing(key("a"))],
        mutations: vec![put("a", b"one")],
    };
    let ApplyOutcome::Applied(v1) = store.apply(&first).await.unwrap() else {
        panic!("first write conflicted")
    };
    match store.read(&key("a")).await.unwrap() {
        ReadOutcome::Found {
            value,
            version,
            remaining,
        } => {
            assert_eq!(&value[..], b"one");
            assert_eq!(version, v1[0]);
            assert_eq!(remaining, None);
        }
        ReadOutcome::Missing => panic!("written record missing"),
    }
    let second = Batch {
        conditions: vec![Condition::Version(key("a"), v1[0].clone())],
        mutations: vec![put("a", b"two")],
    };
    let ApplyOutcome::Applied(v2) = store.apply(&second).await.unwrap() else {
        panic!("second write conflicted")
    };
    assert_ne!(v1[0], v2[0]);
    assert_eq!(version_of(store, "a").await, v2[0]);
}

/// One failing condition makes the whole batch a `Conflict` with no side effects.
pub async fn a_failed_condition_changes_nothing(s: StoreUnderTest) {
    let store = s.store.as_ref();
    store
        .apply(&Batch {
            conditions: vec![],
            mutations: vec![put("present", b"x")],
        })
        .await
        .unwrap();
    let before = version_of(store, "present").await;
    let batch = Batch {
        conditions: vec![
            Condition::Missing(key("fresh")),
            Condition::Missing(key("present")),
        ],
        mutations: vec![put("fresh", b"new"), Mutation::Delete(key("present"))],
    };
    assert_eq!(store.apply(&batch).await.unwrap(), ApplyOutcome::Conflict);
    assert_eq!(
        store.read(&key("fresh")).await.unwrap(),
        ReadOutcome::Missing
    );
    assert_eq!(version_of(store, "present").await, before);
    let stale = Batch {
        conditions: vec![Condition::Version(
            key("present"),
            StoreVersion("no-such".into()),
        )],
        mutations: vec![put("present", b"y")],
    };
    assert_eq!(store.apply(&stale).await.unwrap(), ApplyOutcome::Conflict);
    assert_eq!(version_of(store, "present").await, before);
}

/// A batch changes several records of one group at once; deletes remove records.
pub async fn a_batch_applies_all_its_mutations_at_once(s: StoreUnderTest) {
    let store = s.store.as_ref();
    let batch = Batch {
        conditions: vec![Condition::Missing(key("a")), Condition::Missing(key("b"))],
        mutations: vec![put("a", b"1"), put("b", b"2")],
    };
    let ApplyOutcome::Applied(versions) = store.apply(&batch).await.unwrap() else {
        panic!("conflict")
    };
    assert_eq!(versions.len(), 2);
    let delete = Batch {
        conditions: vec![Condition::Version(key("a"), versions[0].clone())],
        mutations: vec![Mutation::Delete(key("a")), Mutation::Delete(key("b"))],
    };
    assert_eq!(
        store.apply(&delete).await.unwrap(),
        ApplyOutcome::Applied(vec![])
    );
    assert_eq!(store.read(&key("a")).await.unwrap(), ReadOutcome::Missing);
    assert_eq!(store.read(&key("b")).await.unwrap(), ReadOutcome::Missing);
}

/// A record written with a retention reads `Missing` once it expires.
pub async fn a_retention_expires_the_record(s: StoreUnderTest) {
    let store = s.store.as_ref();
    let batch = Batch {
        conditions: vec![],
        mutations: vec![Mutation::Put {
            key: key("brief"),
            value: Bytes::from_static(b"x"),
            retention: Some(SHORT),
        }],
    };
    store.apply(&batch).await.unwrap();
    match store.read(&key("brief")).await.unwrap() {
        ReadOutcome::Found { remaining, .. } => {
            assert!(remaining.is_some_and(|r| r <= SHORT), "{remaining:?}")
        }
        ReadOutcome::Missing => {}
    }
    wait_until(PATIENCE, "record expired", || async {
        store.read(&key("brief")).await.unwrap() == ReadOutcome::Missing
    })
    .await;
}

/// Malformed calls are argument errors and change nothing.
pub async fn malformed_calls_are_argument_errors(s: StoreUnderTest) {
    let store = s.store.as_ref();
    let invalid = |r: Result<ApplyOutcome, StoreError>| {
        assert!(matches!(r, Err(StoreError::InvalidArgument(_))), "{r:?}")
    };
    invalid(store.apply(&Batch::default()).await);
    invalid(
        store
            .apply(&Batch {
                conditions: vec![Condition::Missing(key("a")), Condition::Missing(key("a"))],
                mutations: vec![put("b", b"x")],
            })
            .await,
    );
    invalid(
        store
            .apply(&Batch {
                conditions: vec![],
                mutations: vec![
                    put("a", b"x"),
                    Mutation::Delete(RecordKey::new("other", "b")),
                ],
            })
            .await,
    );
    invalid(
        store
            .apply(&Batch {
                conditions: vec![],
                mutations: vec![Mutation::Put {
                    key: key("big"),
                    value: Bytes::from(vec![0u8; MAX_VALUE_BYTES + 1]),
                    retention: None,
                }],
            })
            .await,
    );
    invalid(
        store
            .apply(&Batch {
                conditions: vec![],
                mutations: vec![put("", b"x")],
            })
            .await,
    );
    for ttl in [Duration::ZERO, Duration::MAX] {
        let r = store.claim_lease(&OwnerId("ttl".into()), ttl).await;
        assert!(matches!(r, Err(StoreError::InvalidArgument(_))), "{r:?}");
    }
    assert_eq!(
        store.read_lease(&OwnerId("ttl".into())).await.unwrap(),
        None
    );
    for limit in [0, MAX_SCAN_PAGE + 1] {
        let r = store.scan_descriptors(&scope(), None, limit).await;
        assert!(matches!(r, Err(StoreError::InvalidArgument(_))), "{r:?}");
    }
    assert_eq!(store.read(&key("b")).await.unwrap(), ReadOutcome::Missing);
    assert_eq!(store.read(&key("a")).await.unwrap(), ReadOutcome::Missing);
}

/// Counters count from 1, independently of each other.
pub async fn counters_count_from_one(s: StoreUnderTest) {
    let store = s.store.as_ref();
    let a = RecordKey::new("g", "a");
    let b = RecordKey::new("g", "b");
    assert_eq!(store.next_generation(&a).await.unwrap(), 1);
    assert_eq!(store.next_generation(&a).await.unwrap(), 2);
    assert_eq!(store.next_generation(&b).await.unwrap(), 1);
}

/// Claim, renew and release; an old token is `Stale` and changes nothing; every claim has a
/// new, higher lease generation.
pub async fn lease_claim_renew_release(s: StoreUnderTest) {
    let store = s.store.as_ref();
    let owner = OwnerId("owner-a".into());
    let token = claimed(store, "owner-a", LONG).await;
    assert!(token.generation >= 1);
    assert_eq!(
        store.claim_lease(&owner, LONG).await.unwrap(),
        ClaimOutcome::Conflict
    );
    match store.renew_lease(&token, LONG).await.unwrap() {
        LeaseOutcome::Done(remaining) => assert!(remaining <= LONG && remaining > LONG / 2),
        LeaseOutcome::Stale => panic!("live lease reported stale"),
    }
    let read = store.read_lease(&owner).await.unwrap().expect("live lease");
    assert_eq!(read.token, token);
    assert!(matches!(
        store.release_lease(&token).await.unwrap(),
        LeaseOutcome::Done(_)
    ));
    assert_eq!(store.read_lease(&owner).await.unwrap(), None);
    assert_eq!(
        store.renew_lease(&token, LONG).await.unwrap(),
        LeaseOutcome::Stale
    );
    assert_eq!(
        store.release_lease(&token).await.unwrap(),
        LeaseOutcome::Stale
    );
    let again = claimed(store, "owner-a", LONG).await;
    assert!(again.generation > token.generation);
    assert_eq!(
        store.renew_lease(&token, LONG).await.unwrap(),
        LeaseOutcome::Stale
    );
    assert_eq!(
        store.read_lease(&owner).await.unwrap().map(|g| g.token),
        Some(again)
    );
}

/// A lease that is not renewed expires after its TTL.
pub async fn an_unrenewed_lease_expires(s: StoreUnderTest) {
    let store = s.store.as_ref();
    let owner = OwnerId("brief".into());
    let token = claimed(store, "brief", SHORT).await;
    wait_until(PATIENCE, "lease expired", || async {
        store.read_lease(&owner).await.unwrap().is_none()
    })
    .await;
    assert_eq!(
        store.renew_lease(&token, LONG).await.unwrap(),
        LeaseOutcome::Stale
    );
}

/// Publishing needs a live lease; a stale token writes nothing.
pub async fn publishing_needs_a_live_lease(s: StoreUnderTest) {
    let store = s.store.as_ref();
    let token = claimed(store, "a", LONG).await;
    store.release_lease(&token).await.unwrap();
    assert_eq!(
        store
            .publish_descriptor(&token, &descriptor("n1"), b"d")
            .await
            .unwrap(),
        PublishOutcome::Stale
    );
    assert_eq!(
        store.read_descriptor(&descriptor("n1")).await.unwrap(),
        None
    );
    let page = store.scan_descriptors(&scope(), None, 10).await.unwrap();
    assert!(page.entries.is_empty());
}

/// A descriptor key stays with its owner while that owner's lease lives; afterwards another
/// owner may take it.
pub async fn a_descriptor_stays_with_its_live_owner(s: StoreUnderTest) {
    let store = s.store.as_ref();
    let a = claimed(store, "a", LONG).await;
    let b = claimed(store, "b", LONG).await;
    let key = descriptor("rid-1");
    assert_eq!(
        store.publish_descriptor(&a, &key, b"from a").await.unwrap(),
        PublishOutcome::Published
    );
    assert_eq!(
        store.publish_descriptor(&b, &key, b"from b").await.unwrap(),
        PublishOutcome::Taken(a.owner.clone())
    );
    let entry = store
        .read_descriptor(&key)
        .await
        .unwrap()
        .expect("published");
    assert_eq!(
        (&entry.body[..], &entry.owner, entry.owner_alive),
        (&b"from a"[..], &a, true)
    );
    assert!(
        !store.withdraw_descriptor(&b, &key).await.unwrap(),
        "only the owner withdraws"
    );
    store.release_lease(&a).await.unwrap();
    let entry = store
        .read_descriptor(&key)
        .await
        .unwrap()
        .expect("still stored");
    assert!(!entry.owner_alive);
    assert_eq!(
        store.publish_descriptor(&b, &key, b"from b").await.unwrap(),
        PublishOutcome::Published
    );
    assert!(store.withdraw_descriptor(&b, &key).await.unwrap());
    assert_eq!(store.read_descriptor(&key).await.unwrap(), None);
}

/// Scans return pages in id order with each owner's liveness, and a change stamp that
/// moves with every publish and withdraw.
pub async fn scans_page_in_id_order_with_liveness_and_a_change_stamp(s: StoreUnderTest) {
    let store = s.store.as_ref();
    let a = claimed(store, "a", LONG).await;
    let b = claimed(store, "b", LONG).await;
    let empty = store.scan_descriptors(&scope(), None, 10).await.unwrap();
    for (id, token) in [("n3", &a), ("n1", &b), ("n5", &a), ("n2", &b), ("n4", &a)] {
        store
            .publish_descriptor(token, &descriptor(id), id.as_bytes())
            .await
            .unwrap();
    }
    store.release_lease(&b).await.unwrap();
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    let mut stamps = Vec::new();
    loop {
        let page = store
            .scan_descriptors(&scope(), after.as_deref(), 2)
            .await
            .unwrap();
        assert!(page.entries.len() <= 2);
        stamps.push(page.stamp);
        for e in &page.entries {
            assert_eq!(&e.body[..], e.id.as_bytes());
            seen.push((e.id.clone(), e.owner_alive));
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(
        seen,
        vec![
            ("n1".into(), false),
            ("n2".into(), false),
            ("n3".into(), true),
            ("n4".into(), true),
            ("n5".into(), true)
        ]
    );
    assert!(stamps.windows(2).all(|w| w[0] == w[1]), "{stamps:?}");
    assert_ne!(stamps[0], empty.stamp);
    store
        .withdraw_descriptor(&a, &descriptor("n3"))
        .await
        .unwrap();
    let after_withdraw = store.scan_descriptors(&scope(), None, 10).await.unwrap();
    assert_ne!(after_withdraw.stamp, stamps[0]);
    let left: Vec<&str> = after_withdraw
        .entries
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    assert_eq!(
        left,
        ["n4", "n5"],
        "n1 and n2 were dead and their reader removed them"
    );
    let other_scope = DescriptorScope {
        kind: DescriptorKind::Fanout,
        scope: "mesh".into(),
    };
    assert!(store
        .scan_descriptors(&other_scope, None, 10)
        .await
        .unwrap()
        .entries
        .is_empty());
}

/// A record-key scan lists every record with the name, in any group (150 groups, which a
/// cluster spreads over its masters), in pages, and no record of another name; a
/// malformed limit is an argument error.
pub async fn a_record_key_scan_lists_every_record_of_a_name_across_groups(s: StoreUnderTest) {
    let store = s.store.as_ref();
    for i in 0..150 {
        let group = format!("object-{i}");
        let batch = Batch {
            conditions: vec![],
            mutations: vec![
                Mutation::Put {
                    key: RecordKey::new(group.clone(), "authority"),
                    value: Bytes::from_static(b"a"),
                    retention: None,
                },
                Mutation::Put {
                    key: RecordKey::new(group, "generations"),
                    value: Bytes::from_static(b"g"),
                    retention: None,
                },
            ],
        };
        store.apply(&batch).await.unwrap();
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = store
            .scan_record_keys("authority", cursor.as_deref(), 40)
            .await
            .unwrap();
        pages += 1;
        assert!(pages < 1000, "the scan ends");
        for key in page.keys {
            assert_eq!(key.name, "authority");
            seen.insert(key.group);
        }
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen.len(), 150, "every record listed");
    assert!(pages >= 2, "paged");
    assert!(matches!(
        store.scan_record_keys("authority", None, 0).await,
        Err(StoreError::InvalidArgument(_))
    ));
    let none = store.scan_record_keys("absent", None, 10).await.unwrap();
    assert!(none.keys.is_empty());
}

/// A batch refused by validation (a retention past the limit, too many bytes, too many
/// keys) changes nothing, not even the records it would have changed first.
pub async fn a_rejected_batch_changes_nothing(s: StoreUnderTest) {
    let store = s.store.as_ref();
    store
        .apply(&Batch {
            conditions: vec![],
            mutations: vec![put("kept", b"before")],
        })
        .await
        .unwrap();
    let before = version_of(store, "kept").await;
    let invalid = |r: Result<ApplyOutcome, StoreError>| {
        assert!(matches!(r, Err(StoreError::InvalidArgument(_))), "{r:?}")
    };
    let huge_retention = Batch {
        conditions: vec![Condition::Version(key("kept"), before.clone())],
        mutations: vec![
            Mutation::Delete(key("kept")),
            put("fresh", b"x"),
            Mutation::Put {
                key: key("late"),
                value: Bytes::from_static(b"x"),
                retention: Some(MAX_RETENTION + Duration::from_millis(1)),
            },
        ],
    };
    invalid(store.apply(&huge_retention).await);
    let mut too_many_bytes = Batch::default();
    too_many_bytes.mutations.push(Mutation::Delete(key("kept")));
    for i in 0..=(MAX_BATCH_BYTES / MAX_VALUE_BYTES) {
        too_many_bytes.mutations.push(Mutation::Put {
            key: key(&format!("big-{i}")),
            value: Bytes::from(vec![7u8; MAX_VALUE_BYTES]),
            retention: None,
        });
    }
    invalid(store.apply(&too_many_bytes).await);
    let mut too_many_keys = Batch::default();
    too_many_keys.mutations.push(Mutation::Delete(key("kept")));
    for i in 0..MAX_BATCH_KEYS {
        too_many_keys.mutations.push(put(&format!("k-{i}"), b"x"));
    }
    invalid(store.apply(&too_many_keys).await);
    assert_eq!(version_of(store, "kept").await, before);
    for name in ["fresh", "late", "big-0", "k-0"] {
        assert_eq!(store.read(&key(name)).await.unwrap(), ReadOutcome::Missing);
    }
}

/// Self-cleaning membership: a descriptor whose owner's lease is gone is removed by the
/// next reader, without moving the change stamp (the live set did not change); a live
/// neighbour stays, and the owner may publish again under a new lease.
pub async fn a_dead_descriptor_is_removed_by_the_next_reader(s: StoreUnderTest) {
    let store = s.store.as_ref();
    let brief = claimed(store, "brief", SHORT).await;
    let steady = claimed(store, "steady", LONG).await;
    for (id, token) in [("n1", &brief), ("n2", &steady)] {
        store
            .publish_descriptor(token, &descriptor(id), id.as_bytes())
            .await
            .unwrap();
    }
    wait_until(PATIENCE, "the brief lease expired", || async {
        store
            .read_lease(&OwnerId("brief".into()))
            .await
            .unwrap()
            .is_none()
    })
    .await;
    let first = store.scan_descriptors(&scope(), None, 10).await.unwrap();
    let seen: Vec<(&str, bool)> = first
        .entries
        .iter()
        .map(|e| (e.id.as_str(), e.owner_alive))
        .collect();
    assert!(
        seen == [("n1", false), ("n2", true)] || seen == [("n2", true)],
        "{seen:?}"
    );
    wait_until(PATIENCE, "the dead descriptor was removed", || async {
        let page = store.scan_descriptors(&scope(), None, 10).await.unwrap();
        let ids: Vec<&str> = page.entries.iter().map(|e| e.id.as_str()).collect();
        ids == ["n2"] && page.stamp == first.stamp
    })
    .await;
    assert_eq!(
        store.read_descriptor(&descriptor("n1")).await.unwrap(),
        None
    );
    let again = claimed(store, "brief", LONG).await;
    assert_eq!(
        store
            .publish_descriptor(&again, &descriptor("n1"), b"back")
            .await
            .unwrap(),
        PublishOutcome::Published
    );
}

/// A change whose result was lost is resolved by re-reading, never guessed: applied,
/// not applied (sent again), or changed by someone else (conflict).
pub async fn a_lost_result_is_resolved_by_rereading(s: StoreUnderTest) {
    let faulty = FaultyLocationStore::new(s.store.clone());
    let write = Batch {
        conditions: vec![Condition::Missing(key("a"))],
        mutations: vec![put("a", b"mine")],
    };
    faulty.lose_result_of_next(1);
    assert!(faulty.apply(&write).await.unwrap_err().outcome_unknown());
    // The same write again, resolved: it did apply the first time (a plain resend would
    // now conflict).
    faulty.lose_result_of_next(1);
    let fresh = Batch {
        conditions: vec![Condition::Missing(key("b"))],
        mutations: vec![put("b", b"mine")],
    };
    let ApplyOutcome::Applied(versions) = apply_resolving(&faulty, &fresh).await.unwrap() else {
        panic!("lost-but-applied write reported as conflict")
    };
    assert_eq!(versions, vec![version_of(s.store.as_ref(), "b").await]);
    // Dropped before it applied: resolved as not applied, sent again, applied once.
    faulty.drop_next(1);
    let dropped = Batch {
        conditions: vec![Condition::Missing(key("c"))],
        mutations: vec![put("c", b"mine")],
    };
    assert!(matches!(
        apply_resolving(&faulty, &dropped).await.unwrap(),
        ApplyOutcome::Applied(_)
    ));
    // Someone else changed the record meanwhile: a conflict, not a guess.
    let theirs = version_of(s.store.as_ref(), "c").await;
    s.store
        .apply(&Batch {
            conditions: vec![],
            mutations: vec![put("c", b"theirs")],
        })
        .await
        .unwrap();
    faulty.drop_next(1);
    let late = Batch {
        conditions: vec![Condition::Version(key("c"), theirs)],
        mutations: vec![put("c", b"mine again")],
    };
    assert_eq!(
        apply_resolving(&faulty, &late).await.unwrap(),
        ApplyOutcome::Conflict
    );
    // Lease claims and descriptor publishes resolve the same way.
    faulty.lose_result_of_next(1);
    let owner = OwnerId("lost-claim".into());
    let ClaimOutcome::Claimed(grant) = claim_resolving(&faulty, &owner, LONG).await.unwrap() else {
        panic!("lost claim not recognised as ours")
    };
    faulty.lose_result_of_next(1);
    let body = Bytes::from_static(b"descriptor");
    assert_eq!(
        publish_resolving(&faulty, &grant.token, &descriptor("lost"), &body)
            .await
            .unwrap(),
        PublishOutcome::Published
    );
    let entry = s
        .store
        .read_descriptor(&descriptor("lost"))
        .await
        .unwrap()
        .expect("published");
    assert_eq!(entry.body, body);
}

/// Generates one `#[tokio::test]` per conformance rule for a provider. `$make` is an async
/// expression giving a fresh [`StoreUnderTest`].
///
/// ```
/// use std::sync::Arc;
/// use zlink_testkit::conformance::StoreUnderTest;
///
/// async fn fresh() -> StoreUnderTest {
///     StoreUnderTest {
///         store: Arc::new(zlink_testkit::MemoryLocationStore::new()),
///         guard: None,
///     }
/// }
///
/// zlink_testkit::location_store_conformance!(fresh());
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! location_store_conformance {
    ($make:expr) => {
        $crate::location_store_conformance!(@rules $make;
            read_of_a_missing_record_is_missing,
            every_write_issues_a_new_version,
            a_failed_condition_changes_nothing,
            a_batch_applies_all_its_mutations_at_once,
            a_retention_expires_the_record,
            malformed_calls_are_argument_errors,
            counters_count_from_one,
            lease_claim_renew_release,
            an_unrenewed_lease_expires,
            publishing_needs_a_live_lease,
            a_descriptor_stays_with_its_live_owner,
            scans_page_in_id_order_with_liveness_and_a_change_stamp,
            a_lost_result_is_resolved_by_rereading,
            a_rejected_batch_changes_nothing,
            a_dead_descriptor_is_removed_by_the_next_reader,
            a_record_key_scan_lists_every_record_of_a_name_across_groups,
        );
    };
    (@rules $make:expr; $($rule:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $rule() {
                $crate::conformance::$rule($make.await).await;
            }
        )*
    };
}
