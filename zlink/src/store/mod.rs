//! The Location Store: where nodes publish their addresses under an owner lease and find
//! each other, and where object records change by compare-and-set.
//!
//! [`LocationStore`] is the provider contract; [`RelocationStore`] holds the immutable
//! payloads relocations leave behind them. [`RedisLocationStore`] is the production
//! provider (one Redis or a Redis Cluster); [`MemoryLocationStore`]
//! (`<dyn LocationStore>::in_memory()`) is the embedded single-process store.
//! `zlink-testkit` wraps any store to inject faults, and holds the conformance suite every
//! provider must pass.

mod descriptor;
mod error;
mod lease;
mod location;
mod memory;
mod metrics;
#[cfg(feature = "redis")]
mod redis;
mod relocation;
mod relocation_memory;
pub mod resolve;
mod scope_read;
mod types;

#[cfg(feature = "redis")]
pub use self::redis::{
    RedisLocationStore, RedisOptions, RedisRelocationStore, RedisTarget, ReplicaWait,
};
pub use descriptor::MeshDescriptor;
pub use error::{StoreError, StoreResult};
pub(crate) use lease::OwnerLease;
pub use lease::{OwnerLeaseSettings, OwnerLeaseStatus};
pub use location::LocationStore;
pub use memory::MemoryLocationStore;
pub(crate) use metrics::MeteredStore;
pub use metrics::{OperationCount, StoreMetrics, StoreReads, StoreWrites};
pub use relocation::{
    check_payload, check_payload_retention, PayloadRead, PayloadRef, PutOutcome, RelocationStore,
    RenewOutcome, DEFAULT_PAYLOAD_RETENTION, MAX_PAYLOAD_BYTES, MAX_PAYLOAD_REF_BYTES,
};
pub use relocation_memory::MemoryRelocationStore;
pub(crate) use scope_read::read_scope;
pub use types::{
    check_lease_ttl, check_page_limit, check_retention, check_value, ApplyOutcome, Batch,
    ClaimOutcome, Condition, DescriptorEntry, DescriptorKey, DescriptorKind, DescriptorPage,
    DescriptorScope, LeaseGrant, LeaseOutcome, LeaseToken, Mutation, OwnerId, PublishOutcome,
    ReadOutcome, RecordKey, RecordKeyPage, StoreVersion, MAX_BATCH_BYTES, MAX_BATCH_KEYS,
    MAX_GENERATION, MAX_KEY_BYTES, MAX_RETENTION, MAX_SCAN_PAGE, MAX_VALUE_BYTES,
};
