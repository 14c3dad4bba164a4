//! The Location Store: where nodes publish their addresses under an owner lease and find
//! each other, and where object records change by compare-and-set.
//!
//! [`LocationStore`] is the provider contract. [`RedisLocationStore`] is the production
//! provider; `zlink-testkit` has an in-memory one and a fault-injecting wrapper, and a
//! conformance suite every provider must pass.

mod descriptor;
mod error;
mod lease;
mod location;
#[cfg(feature = "redis")]
mod redis;
pub mod resolve;
mod types;

#[cfg(feature = "redis")]
pub use self::redis::{RedisLocationStore, RedisOptions};
pub use descriptor::MeshDescriptor;
pub use error::{StoreError, StoreResult};
pub(crate) use lease::OwnerLease;
pub use lease::{OwnerLeaseSettings, OwnerLeaseStatus};
pub use location::LocationStore;
pub use types::{
    check_page_limit, check_value, ApplyOutcome, Batch, ClaimOutcome, Condition, DescriptorEntry,
    DescriptorKey, DescriptorKind, DescriptorPage, DescriptorScope, LeaseGrant, LeaseOutcome,
    LeaseToken, Mutation, OwnerId, PublishOutcome, ReadOutcome, RecordKey, StoreVersion,
    MAX_BATCH_KEYS, MAX_GENERATION, MAX_KEY_BYTES, MAX_SCAN_PAGE, MAX_VALUE_BYTES,
};
