//! The values that cross the [`LocationStore`](super::LocationStore) boundary.

use std::time::Duration;

use bytes::Bytes;

use super::{StoreError, StoreResult};

/// The longest key name or scope, in UTF-8 bytes.
pub const MAX_KEY_BYTES: usize = 1024;
/// The largest value or descriptor body.
pub const MAX_VALUE_BYTES: usize = 1024 * 1024;
/// The most keys one batch may touch.
pub const MAX_BATCH_KEYS: usize = 2048;
/// The most entries one scan page may return.
pub const MAX_SCAN_PAGE: usize = 1000;
/// The most value bytes one batch may write in total.
pub const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;
/// The longest retention a record may be written with (365 days).
pub const MAX_RETENTION: Duration = Duration::from_secs(365 * 24 * 60 * 60);
/// The highest generation any counter issues.
pub const MAX_GENERATION: u64 = i64::MAX as u64;

/// Identifies one host process lifecycle; never reused.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OwnerId(pub String);

impl OwnerId {
    /// A fresh owner id: 128 random bits, hex.
    pub fn generate() -> Self {
        OwnerId(format!("{:032x}", rand::random::<u128>()))
    }
}

impl std::fmt::Display for OwnerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Proof of one claim of an owner lease: the owner and the lease generation the store issued.
/// Renew and release with an older token are `Stale` and change nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LeaseToken {
    /// Whose lease.
    pub owner: OwnerId,
    /// Which claim (1..=2^63-1, issued by the store's lease counter).
    pub generation: u64,
}

/// A lease as the store sees it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseGrant {
    /// The token of the current claim.
    pub token: LeaseToken,
    /// Time left before the store expires the lease (expiry minus the store's now).
    pub remaining: Duration,
}

/// The outcome of claiming a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// Claimed with a new lease generation.
    Claimed(LeaseGrant),
    /// The owner already holds a live lease.
    Conflict,
}

/// The outcome of renewing or releasing a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseOutcome {
    /// Renewed (with the new time left) or released.
    Done(Duration),
    /// The token is not the owner's current live lease; nothing changed.
    Stale,
}

/// Which kind of published address a descriptor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DescriptorKind {
    /// A MeshNode of one RouteMesh (scope: the MeshName).
    MeshNode,
    /// A ClientServer server (scope: the ChannelName).
    ClientServer,
    /// A fanout publisher (scope: the ChannelName).
    Fanout,
}

impl DescriptorKind {
    /// A short, stable tag for key layouts.
    pub fn tag(self) -> &'static str {
        match self {
            DescriptorKind::MeshNode => "mesh",
            DescriptorKind::ClientServer => "cs",
            DescriptorKind::Fanout => "fanout",
        }
    }
}

/// A set of descriptors read together: one kind within one scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DescriptorScope {
    /// The kind.
    pub kind: DescriptorKind,
    /// The MeshName or ChannelName.
    pub scope: String,
}

/// One descriptor's address: a scope and the publisher's id (its RID).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DescriptorKey {
    /// The scope it belongs to.
    pub scope: DescriptorScope,
    /// The publisher's RID.
    pub id: String,
}

impl DescriptorKey {
    /// A MeshNode descriptor key.
    pub fn mesh_node(mesh_name: &str, rid: &str) -> Self {
        DescriptorKey {
            scope: DescriptorScope {
                kind: DescriptorKind::MeshNode,
                scope: mesh_name.to_string(),
            },
            id: rid.to_string(),
        }
    }

    /// Checks the bounds of scope and id.
    pub fn validate(&self) -> StoreResult<()> {
        self.scope.validate()?;
        check_name("descriptor id", &self.id)
    }
}

impl DescriptorScope {
    /// Checks the bounds of the scope name.
    pub fn validate(&self) -> StoreResult<()> {
        check_name("descriptor scope", &self.scope)
    }
}

/// One descriptor as read from the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescriptorEntry {
    /// Its publisher's id.
    pub id: String,
    /// The opaque body the publisher wrote.
    pub body: Bytes,
    /// The lease it was published under.
    pub owner: LeaseToken,
    /// Whether that lease was live when this entry was read.
    pub owner_alive: bool,
}

/// The outcome of publishing a descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishOutcome {
    /// Written (or rewritten) under the given lease.
    Published,
    /// The lease token is not live: nothing was written.
    Stale,
    /// Another owner with a live lease holds this key (the RID is in use).
    Taken(OwnerId),
}

/// One page of a record-key scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordKeyPage {
    /// Keys of records with the scanned name, in no promised order.
    pub keys: Vec<RecordKey>,
    /// Where the next page starts, or `None` after the last page.
    pub next: Option<String>,
}

/// One page of a descriptor scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescriptorPage {
    /// Entries in ascending byte order of id.
    pub entries: Vec<DescriptorEntry>,
    /// Where the next page starts, or `None` after the last page.
    pub next: Option<String>,
    /// The scope's change stamp when this page was read. A full read is consistent when
    /// the first and last pages show the same stamp.
    pub stamp: u64,
}

/// A record's key. Records of one `group` share a slot, so one batch may change several
/// of them atomically; a batch never spans groups.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordKey {
    /// The group (for example one object's id).
    pub group: String,
    /// The record's name within the group.
    pub name: String,
}

impl RecordKey {
    /// A key in `group` named `name`.
    pub fn new(group: impl Into<String>, name: impl Into<String>) -> Self {
        RecordKey {
            group: group.into(),
            name: name.into(),
        }
    }

    /// Checks the bounds of group and name.
    pub fn validate(&self) -> StoreResult<()> {
        check_name("record group", &self.group)?;
        check_name("record name", &self.name)
    }
}

/// A version issued by the store for every write: "unchanged since my read". zlink's
/// stores issue increasing decimal sequence numbers, so of two versions of one record the
/// larger is the later write; any other text is compared only for equality.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StoreVersion(pub String);

impl StoreVersion {
    /// Whether this version is a later write than `other`: `None` when either is not a
    /// sequence number (then only equality says anything).
    pub fn is_later_than(&self, other: &StoreVersion) -> Option<bool> {
        let sequence = |v: &StoreVersion| v.0.parse::<u64>().ok();
        Some(sequence(self)? > sequence(other)?)
    }
}

/// The outcome of reading a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadOutcome {
    /// Absent or expired.
    Missing,
    /// Present.
    Found {
        /// Its value.
        value: Bytes,
        /// Its current version.
        version: StoreVersion,
        /// Time left before it expires, when written with a retention.
        remaining: Option<Duration>,
    },
}

/// A condition every key of a batch must meet for the batch to apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// The record is absent (or expired).
    Missing(RecordKey),
    /// The record is present with exactly this version.
    Version(RecordKey, StoreVersion),
}

/// A change a batch makes when all its conditions hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    /// Writes a value (with a new version), optionally expiring after a retention.
    Put {
        /// Which record.
        key: RecordKey,
        /// The new value.
        value: Bytes,
        /// Expire after this long; `None` keeps it until deleted.
        retention: Option<Duration>,
    },
    /// Removes the record.
    Delete(RecordKey),
}

impl Mutation {
    /// The record this mutation changes.
    pub fn key(&self) -> &RecordKey {
        match self {
            Mutation::Put { key, .. } | Mutation::Delete(key) => key,
        }
    }
}

impl Condition {
    /// The record this condition reads.
    pub fn key(&self) -> &RecordKey {
        match self {
            Condition::Missing(key) | Condition::Version(key, _) => key,
        }
    }
}

/// Conditions and mutations applied as one atomic step: all or nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    /// What must hold.
    pub conditions: Vec<Condition>,
    /// What changes when it does.
    pub mutations: Vec<Mutation>,
}

impl Batch {
    /// Checks bounds, uniqueness and that every key is in one group; returns the group.
    pub fn validate(&self) -> StoreResult<&str> {
        let keys = self
            .conditions
            .iter()
            .map(Condition::key)
            .chain(self.mutations.iter().map(Mutation::key));
        let mut group: Option<&str> = None;
        let mut count = 0;
        for key in keys {
            key.validate()?;
            count += 1;
            match group {
                None => group = Some(&key.group),
                Some(g) if g != key.group => {
                    return Err(StoreError::InvalidArgument(format!(
                        "a batch spans groups {g:?} and {:?}",
                        key.group
                    )))
                }
                Some(_) => {}
            }
        }
        let group = group.ok_or_else(|| StoreError::InvalidArgument("empty batch".into()))?;
        if count > MAX_BATCH_KEYS {
            return Err(StoreError::InvalidArgument(format!(
                "a batch touches {count} keys; at most {MAX_BATCH_KEYS}"
            )));
        }
        unique(self.conditions.iter().map(Condition::key), "conditions")?;
        unique(self.mutations.iter().map(Mutation::key), "mutations")?;
        let mut bytes = 0usize;
        for m in &self.mutations {
            if let Mutation::Put {
                value, retention, ..
            } = m
            {
                check_value(value)?;
                bytes += value.len();
                if let Some(retention) = retention {
                    check_retention(*retention)?;
                }
            }
        }
        if bytes > MAX_BATCH_BYTES {
            return Err(StoreError::InvalidArgument(format!(
                "a batch writes {bytes} value bytes; at most {MAX_BATCH_BYTES}"
            )));
        }
        Ok(group)
    }
}

/// Checks a value's size.
pub fn check_value(value: &[u8]) -> StoreResult<()> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(StoreError::InvalidArgument(format!(
            "a value of {} bytes exceeds {MAX_VALUE_BYTES}",
            value.len()
        )));
    }
    Ok(())
}

/// Checks a record retention: above zero and at most [`MAX_RETENTION`]. Providers check
/// it before their first write, so a refused batch changes nothing.
pub fn check_retention(retention: Duration) -> StoreResult<()> {
    if retention.is_zero() || retention > MAX_RETENTION {
        return Err(StoreError::InvalidArgument(format!(
            "a retention must be above zero and at most {MAX_RETENTION:?}, got {retention:?}"
        )));
    }
    Ok(())
}

/// Checks a lease TTL: above zero and at most [`MAX_RETENTION`].
pub fn check_lease_ttl(ttl: Duration) -> StoreResult<()> {
    if ttl.is_zero() || ttl > MAX_RETENTION {
        return Err(StoreError::InvalidArgument(format!(
            "a lease TTL must be above zero and at most {MAX_RETENTION:?}, got {ttl:?}"
        )));
    }
    Ok(())
}

/// Checks a scan page limit.
pub fn check_page_limit(limit: usize) -> StoreResult<()> {
    if limit == 0 || limit > MAX_SCAN_PAGE {
        return Err(StoreError::InvalidArgument(format!(
            "a scan page holds 1..={MAX_SCAN_PAGE} entries, asked for {limit}"
        )));
    }
    Ok(())
}

fn check_name(what: &str, name: &str) -> StoreResult<()> {
    if name.is_empty() || name.len() > MAX_KEY_BYTES {
        return Err(StoreError::InvalidArgument(format!(
            "{what} must be 1..={MAX_KEY_BYTES} bytes, got {}",
            name.len()
        )));
    }
    Ok(())
}

fn unique<'a>(keys: impl Iterator<Item = &'a RecordKey>, what: &str) -> StoreResult<()> {
    let mut seen = std::collections::HashSet::new();
    for key in keys {
        if !seen.insert(key) {
            return Err(StoreError::InvalidArgument(format!(
                "record {:?} appears twice among the {what}",
                key.name
            )));
        }
    }
    Ok(())
}

/// The outcome of applying a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyOutcome {
    /// Every condition held and every mutation committed; the new version of each Put, in
    /// the batch's order.
    Applied(Vec<StoreVersion>),
    /// Some condition failed (which one is not revealed); nothing changed.
    Conflict,
}
