//! What the recovery operations read and did, as values an operator's tool prints (serde,
//! so `zlink-admin --json` prints them as they are).

use serde::Serialize;

/// Where an object is in its life, as its authority record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RecordState {
    /// Being created: not yet addressable.
    Creating,
    /// Created: messages go to its owner.
    Ready,
    /// Its owner is closing it.
    Closing,
}

/// Whether the owner lease an authority record names is alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "lease")]
#[non_exhaustive]
pub enum LeaseHealth {
    /// The lease the record was written under is live, for this long yet.
    Live {
        /// Milliseconds before the store expires it (unless its owner renews it).
        remaining_ms: u64,
    },
    /// That lease expired or was released: its owner can never admit work under it again.
    Expired,
}

/// One object's authority record, as read now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectRecord {
    /// Its ID.
    pub id: String,
    /// Whether it is a Spot (else an Actor).
    pub is_spot: bool,
    /// Its stable type.
    pub stable_type: String,
    /// Creating, Ready or Closing.
    pub state: RecordState,
    /// Its ObjectGeneration (the incarnation).
    pub generation: u64,
    /// Its owner change within the incarnation (AOG).
    pub owner_generation: u64,
    /// The RID of the node that owns it.
    pub rid: String,
    /// That node's lifecycle generation: a restarted node is another lifecycle.
    pub node_generation: u64,
    /// An Actor's Spot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub membership: Option<String>,
    /// Whether its owner's lease lives.
    pub owner_lease: LeaseHealth,
    /// Whether a caller that finds its owner dead reclaims it by itself (the type's
    /// `on_owner_lost = reclaim`).
    pub reclaims_on_owner_lost: bool,
}

/// Why a reclaim left an ID alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
#[non_exhaustive]
pub enum ReclaimRefusal {
    /// There is no authority record: nothing to reclaim (the next create makes it).
    AlreadyMissing,
    /// The owner lease the record names is live: its owner may be running. Stop it, or
    /// wait for the lease to expire (the owner lease TTL after its last renewal).
    LeaseLive {
        /// Milliseconds before the store expires it (unless its owner renews it).
        remaining_ms: u64,
    },
    /// The record changed while it was being reclaimed (another reclaim, or its owner):
    /// nothing was released; read it again.
    Changed,
    /// The Location Store failed on this ID (the reclaim of the others went on); try it
    /// again.
    Failed {
        /// What the store said.
        detail: String,
    },
}

/// One ID a reclaim left alone, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refused {
    /// Its ID.
    pub id: String,
    /// Whether it is a Spot (else an Actor).
    pub is_spot: bool,
    /// Why.
    #[serde(flatten)]
    pub reason: ReclaimRefusal,
}

/// What a reclaim released and what it refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReclaimReport {
    /// The records released, as they were: each ID reads Missing now, and its next create
    /// (or Instance intent call) makes a new incarnation.
    pub released: Vec<ObjectRecord>,
    /// The IDs left alone, each with its reason.
    pub refused: Vec<Refused>,
}

/// One node as its descriptor in the Location Store shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeRecord {
    /// Its RID.
    pub rid: String,
    /// Its lifecycle generation (a restart changes it).
    pub generation: u64,
    /// Where peers connect.
    pub endpoint: String,
    /// Whether its owner lease lives.
    pub lease_live: bool,
    /// Whether it is draining (takes no new objects).
    pub draining: bool,
    /// The Spot types it serves.
    pub spot_types: Vec<String>,
    /// The Actor types it serves.
    pub actor_types: Vec<String>,
}

/// One page of the objects a node owns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OwnedPage {
    /// The records on this page whose owner is the node.
    pub objects: Vec<ObjectRecord>,
    /// Where the next page starts (pass it back), or `None` after the last page.
    pub next: Option<String>,
}
