//! The authority record: what the Location Store says about one global object — which
//! incarnation it is, which node owns it under which lease, and what state it is in.
//!
//! States (digest §1.4): Missing (no record) → Creating → Ready → Closing → Missing. The
//! record has no TTL: it outlives its owner's lease and goes only through an explicit,
//! fenced delete (seed 002 §4.2: no automatic release, no failover).

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::store::{LeaseToken, OwnerId, StoreError, StoreResult, MAX_VALUE_BYTES};

/// Where an object is in its life, as the store records it (Missing is no record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum AuthorityState {
    /// Reserved by one creation attempt; not yet addressable.
    Creating,
    /// Created and initialised: messages go to its owner.
    Ready,
    /// Its owner is closing it; no new message is admitted.
    Closing,
}

/// What kind of object the record is for; the ID namespace (Spot or Actor) follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum ObjectShape {
    /// The framework's per-node Spot, default home of new Actors.
    EntrySpot,
    /// A Spot the application created.
    UserSpot,
    /// A Spot its first message created: a Spot-direct call carrying Instance intent to
    /// an ID that had none (seed 002 §4.3).
    InstanceSpot,
    /// An Actor.
    Actor,
}

/// The exact owner an operation was admitted against (digest §1.3): ObjectGeneration,
/// AuthorityOwnerGeneration, OwnerId and OwnerLeaseGeneration. Direct messages match all
/// but the ObjectGeneration (seed 000 §2.6); close, destroy, membership and creation
/// recovery match all four.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct OwnerFence {
    /// The incarnation: new only when the object is created again after a delete.
    pub(crate) object_generation: u64,
    /// The owner change within the incarnation (AOG).
    pub(crate) owner_generation: u64,
    /// The owning process run.
    pub(crate) owner: String,
    /// The owner lease claim the authority was written under.
    pub(crate) lease_generation: u64,
}

impl OwnerFence {
    /// Whether the fence names this lease.
    pub(crate) fn held_by(&self, token: &LeaseToken) -> bool {
        self.held_by_claim(&token.owner, token.generation)
    }

    /// Whether the fence names the lease claim `lease_generation` of `owner`.
    pub(crate) fn held_by_claim(&self, owner: &OwnerId, lease_generation: u64) -> bool {
        self.lease_generation == lease_generation && self.owner == owner.0
    }

    /// The owner's lease token.
    pub(crate) fn lease(&self) -> LeaseToken {
        LeaseToken {
            owner: OwnerId(self.owner.clone()),
            generation: self.lease_generation,
        }
    }
}

/// The node that owns the object: where its messages go.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct OwnerRoute {
    /// The owner's MeshName.
    pub(crate) mesh_name: String,
    /// The owner's RID.
    pub(crate) rid: String,
    /// The owner's lifecycle generation: a restarted node is a different owner.
    pub(crate) node_generation: u64,
}

/// One object's authority record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Authority {
    /// Creating, Ready or Closing.
    pub(crate) state: AuthorityState,
    /// Entry Spot, User Spot or Actor.
    pub(crate) shape: ObjectShape,
    /// The stable type its factory is registered under.
    pub(crate) stable_type: String,
    /// Incarnation and owner.
    pub(crate) fence: OwnerFence,
    /// Where the owner is.
    pub(crate) route: OwnerRoute,
    /// An Actor's Spot (its Entry Spot or a User Spot); `None` for Spots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) membership: Option<String>,
    /// While Creating: the request the creating attempt's factory receives, kept so a
    /// recovery can run the factory again with the same input (seed 002 §4.3).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "serde_bytes")]
    pub(crate) creation_request: Option<Vec<u8>>,
    /// An Instance Spot's recovery pointer: the Relocation Store reference of the message
    /// that activated it, from the reservation until that message's handler has run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) activation: Option<String>,
    /// Its type's failover policy (`on_owner_lost = reclaim`): recorded with the object,
    /// so a caller that does not serve the type knows it too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) reclaim_on_owner_lost: bool,
}

impl Authority {
    /// Encodes the record (CBOR); a record over the store's value limit is refused.
    pub(crate) fn encode(&self) -> StoreResult<Bytes> {
        let bytes = crate::wire::cbor_encode(self)
            .map_err(|e| StoreError::InvalidArgument(format!("authority record: {e}")))?;
        if bytes.len() > MAX_VALUE_BYTES {
            return Err(StoreError::InvalidArgument(format!(
                "authority record of {} bytes exceeds {MAX_VALUE_BYTES}",
                bytes.len()
            )));
        }
        Ok(bytes)
    }

    /// Decodes a record read from the store; anything malformed is a protocol error, never
    /// a guess.
    pub(crate) fn decode(bytes: &[u8]) -> StoreResult<Self> {
        let record: Authority = crate::wire::cbor_decode(bytes)
            .map_err(|e| StoreError::Protocol(format!("authority record: {e}")))?;
        if record.fence.object_generation == 0
            || record.fence.owner_generation == 0
            || record.fence.lease_generation == 0
        {
            return Err(StoreError::Protocol(
                "authority record with a zero generation".into(),
            ));
        }
        Ok(record)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample(state: AuthorityState) -> Authority {
        Authority {
            state,
            shape: ObjectShape::UserSpot,
            stable_type: "room".into(),
            fence: OwnerFence {
                object_generation: 3,
                owner_generation: 1,
                owner: "owner-a".into(),
                lease_generation: 9,
            },
            route: OwnerRoute {
                mesh_name: "m".into(),
                rid: "node-a".into(),
                node_generation: 77,
            },
            membership: None,
            creation_request: Some(vec![1, 2, 3]),
            activation: None,
            reclaim_on_owner_lost: false,
        }
    }

    #[test]
    fn an_instance_spots_recovery_pointer_round_trips_and_an_older_record_has_none() {
        let mut record = sample(AuthorityState::Ready);
        record.shape = ObjectShape::InstanceSpot;
        record.activation = Some("zlink:activation:1".into());
        let bytes = record.encode().unwrap();
        assert_eq!(Authority::decode(&bytes).unwrap(), record);
        let plain = sample(AuthorityState::Ready).encode().unwrap();
        assert_eq!(Authority::decode(&plain).unwrap().activation, None);
    }

    #[test]
    fn a_record_round_trips_and_its_request_is_one_byte_string() {
        let record = sample(AuthorityState::Creating);
        let bytes = record.encode().unwrap();
        assert_eq!(Authority::decode(&bytes).unwrap(), record);
        assert!(
            bytes.windows(4).any(|w| w == [0x43, 1, 2, 3]),
            "a 3-byte CBOR byte string"
        );
    }

    #[test]
    fn malformed_records_are_protocol_errors() {
        assert!(matches!(
            Authority::decode(b"\xff\x00garbage"),
            Err(StoreError::Protocol(_))
        ));
        let mut zero = sample(AuthorityState::Ready);
        zero.fence.object_generation = 0;
        let bytes = crate::wire::cbor_encode(&zero).unwrap();
        assert!(matches!(
            Authority::decode(&bytes),
            Err(StoreError::Protocol(_))
        ));
    }

    #[test]
    fn a_fence_is_held_by_exactly_its_lease() {
        let fence = sample(AuthorityState::Ready).fence;
        assert!(fence.held_by(&fence.lease()));
        let mut other = fence.lease();
        other.generation += 1;
        assert!(!fence.held_by(&other));
    }
}
