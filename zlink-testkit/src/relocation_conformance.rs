//! The Relocation Store conformance suite: the contract every provider must meet, written
//! once and run against each provider (in-memory, Redis, Redis Cluster) with
//! [`relocation_store_conformance!`](crate::relocation_store_conformance).
//!
//! Each rule is a function taking a fresh, empty store.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use zlink::store::{
    PayloadRead, PayloadRef, PutOutcome, RelocationStore, RenewOutcome, StoreError,
    MAX_PAYLOAD_BYTES, MAX_PAYLOAD_REF_BYTES,
};

use crate::wait_until;

/// The store under test, plus whatever must live as long as it (a Redis server, say).
pub struct RelocationStoreUnderTest {
    /// The store.
    pub store: Arc<dyn RelocationStore>,
    /// Kept alive for the test's duration.
    pub guard: Option<Box<dyn std::any::Any + Send + Sync>>,
}

const LONG: Duration = Duration::from_secs(60);
const SHORT: Duration = Duration::from_millis(300);
const PATIENCE: Duration = Duration::from_secs(10);

fn reference(name: &str) -> PayloadRef {
    PayloadRef::new(name).expect("a valid reference")
}

async fn read(store: &dyn RelocationStore, name: &str) -> PayloadRead {
    store.read(&reference(name)).await.expect("read")
}

/// A put stores the exact bytes, which a read returns with a retention no longer than
/// the one put.
pub async fn a_put_payload_reads_back_exactly(s: RelocationStoreUnderTest) {
    let store = s.store.as_ref();
    let bytes = Bytes::from((0..=255u8).cycle().take(70_000).collect::<Vec<_>>());
    let put = store.put(&reference("root:1"), &bytes, LONG).await;
    assert!(matches!(put, Ok(PutOutcome::Stored { .. })), "{put:?}");
    match read(store, "root:1").await {
        PayloadRead::Found {
            bytes: found,
            expires_in,
        } => {
            assert_eq!(found, bytes);
            assert!(expires_in <= LONG && expires_in > LONG - Duration::from_secs(10));
        }
        PayloadRead::Missing => panic!("the payload is missing"),
    }
    assert_eq!(read(store, "root:2").await, PayloadRead::Missing);
    let empty = store.put(&reference("empty"), &Bytes::new(), LONG).await;
    assert!(matches!(empty, Ok(PutOutcome::Stored { .. })), "{empty:?}");
    assert!(
        matches!(read(store, "empty").await, PayloadRead::Found { bytes, .. } if bytes.is_empty())
    );
}

/// Putting the same bytes again (a retry after a lost answer) is `AlreadyStored`;
/// different bytes under the same reference are a `Conflict` that keeps the first.
pub async fn a_reference_never_holds_different_bytes(s: RelocationStoreUnderTest) {
    let store = s.store.as_ref();
    let r = reference("terminal:a");
    let first = Bytes::from_static(b"first");
    assert!(matches!(
        store.put(&r, &first, LONG).await,
        Ok(PutOutcome::Stored { .. })
    ));
    assert!(matches!(
        store.put(&r, &first, LONG).await,
        Ok(PutOutcome::AlreadyStored { .. })
    ));
    assert_eq!(
        store.put(&r, &Bytes::from_static(b"other"), LONG).await,
        Ok(PutOutcome::Conflict)
    );
    assert!(
        matches!(read(store, "terminal:a").await, PayloadRead::Found { bytes, .. } if bytes == first)
    );
}

/// A payload expires at the end of its retention (by the store's clock); after that the
/// reference may take new bytes.
pub async fn a_retention_expires_the_payload(s: RelocationStoreUnderTest) {
    let store = s.store.clone();
    let r = reference("short");
    store
        .put(&r, &Bytes::from_static(b"x"), SHORT)
        .await
        .expect("put");
    wait_until(PATIENCE, "the payload expires", || {
        let store = store.clone();
        async move { read(store.as_ref(), "short").await == PayloadRead::Missing }
    })
    .await;
    let again = store.put(&r, &Bytes::from_static(b"y"), LONG).await;
    assert!(matches!(again, Ok(PutOutcome::Stored { .. })), "{again:?}");
}

/// A renew restarts a live payload's retention; renewing what is not there is `Missing`.
pub async fn a_renew_extends_only_a_live_payload(s: RelocationStoreUnderTest) {
    let store = s.store.as_ref();
    let r = reference("renewed");
    store
        .put(&r, &Bytes::from_static(b"x"), SHORT)
        .await
        .expect("put");
    assert!(matches!(
        store.renew(&r, LONG).await,
        Ok(RenewOutcome::Renewed { .. })
    ));
    tokio::time::sleep(SHORT * 2).await;
    assert!(
        matches!(read(store, "renewed").await, PayloadRead::Found { expires_in, .. } if expires_in > SHORT),
        "the renewed payload outlives its first retention"
    );
    assert_eq!(
        store.renew(&reference("absent"), LONG).await,
        Ok(RenewOutcome::Missing)
    );
}

/// A delete removes the payload; deleting nothing also succeeds.
pub async fn a_delete_is_idempotent(s: RelocationStoreUnderTest) {
    let store = s.store.as_ref();
    let r = reference("deleted");
    store
        .put(&r, &Bytes::from_static(b"x"), LONG)
        .await
        .expect("put");
    store.delete(&r).await.expect("delete");
    assert_eq!(read(store, "deleted").await, PayloadRead::Missing);
    store.delete(&r).await.expect("a second delete");
    store
        .delete(&reference("never-put"))
        .await
        .expect("deleting nothing");
}

/// Bounds are checked before any provider work: references of 0 or over 4096 bytes, a
/// payload over 64 MiB + 23 bytes, and a zero retention are argument errors that store
/// nothing.
pub async fn malformed_calls_are_argument_errors(s: RelocationStoreUnderTest) {
    let store = s.store.as_ref();
    assert!(matches!(
        PayloadRef::new(""),
        Err(StoreError::InvalidArgument(_))
    ));
    assert!(matches!(
        PayloadRef::new("r".repeat(MAX_PAYLOAD_REF_BYTES + 1)),
        Err(StoreError::InvalidArgument(_))
    ));
    let longest = PayloadRef::new("r".repeat(MAX_PAYLOAD_REF_BYTES)).expect("4096 bytes");
    assert!(matches!(
        store.put(&longest, &Bytes::from_static(b"x"), LONG).await,
        Ok(PutOutcome::Stored { .. })
    ));
    let r = reference("bounds");
    let oversized = Bytes::from(vec![0u8; MAX_PAYLOAD_BYTES + 1]);
    assert!(matches!(
        store.put(&r, &oversized, LONG).await,
        Err(StoreError::InvalidArgument(_))
    ));
    assert!(matches!(
        store
            .put(&r, &Bytes::from_static(b"x"), Duration::ZERO)
            .await,
        Err(StoreError::InvalidArgument(_))
    ));
    assert!(matches!(
        store.renew(&r, Duration::ZERO).await,
        Err(StoreError::InvalidArgument(_))
    ));
    assert_eq!(read(store, "bounds").await, PayloadRead::Missing);
}

/// The largest payload a reference takes (64 MiB + 23 bytes) round-trips whole.
pub async fn the_largest_payload_round_trips(s: RelocationStoreUnderTest) {
    let store = s.store.as_ref();
    let mut largest = vec![0u8; MAX_PAYLOAD_BYTES];
    for (i, byte) in largest.iter_mut().enumerate().step_by(4093) {
        *byte = (i % 251) as u8;
    }
    let largest = Bytes::from(largest);
    let r = reference("largest");
    assert!(matches!(
        store.put(&r, &largest, LONG).await,
        Ok(PutOutcome::Stored { .. })
    ));
    match read(store, "largest").await {
        PayloadRead::Found { bytes, .. } => assert!(bytes == largest, "the bytes differ"),
        PayloadRead::Missing => panic!("the largest payload is missing"),
    }
}

/// Runs every Relocation Store conformance rule as its own `#[tokio::test]`. `$make` is an
/// expression (usually a call to an `async fn`) that yields a fresh
/// [`RelocationStoreUnderTest`].
#[macro_export]
macro_rules! relocation_store_conformance {
    ($make:expr) => {
        $crate::relocation_store_conformance!(@rules $make;
            a_put_payload_reads_back_exactly,
            a_reference_never_holds_different_bytes,
            a_retention_expires_the_payload,
            a_renew_extends_only_a_live_payload,
            a_delete_is_idempotent,
            malformed_calls_are_argument_errors,
            the_largest_payload_round_trips,
        );
    };
    (@rules $make:expr; $($rule:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $rule() {
                $crate::relocation_conformance::$rule($make.await).await;
            }
        )*
    };
}
