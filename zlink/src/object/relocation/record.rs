//! The records of the relocation commands between two nodes (31 restore, 32 cutover, 50
//! the follow notice). CBOR, bounded like every other wire record; a record that does
//! not decode, or decodes to a zero generation, is a protocol error.

use serde::{Deserialize, Serialize};

use crate::object::authority::{OwnerFence, OwnerRoute};
use crate::object::follow::{check_fence, protocol};
use crate::object::timer::TimerRecord;
use crate::Result;

/// The most timers one relocating object carries.
pub(crate) const MAX_TIMERS: usize = 1024;

/// Source to target: everything the target needs to run the object, but its queue (the
/// saved queue follows on the same connection, as relayed messages).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RestoreRecord {
    /// `'a'` for an Actor, `'s'` for a Spot: the namespace of the command's target ID.
    pub(crate) kind: char,
    /// Names this move in both nodes' logs and tells a repeated restore from another one.
    pub(crate) relocation_id: String,
    /// The object itself.
    pub(crate) object: MovedObject,
    /// A cross-node Join: the target Spot on the target node the Actor joins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) join: Option<JoinIntent>,
    /// A member of a PerActor Spot that moved to the target first: the Actor stays its
    /// member there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) with_spot: Option<String>,
    /// A SpotWide Spot's member Actors, moving with it as one unit, sorted by ID.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) members: Vec<MemberRestore>,
}

/// What the target builds one moving object from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MovedObject {
    /// Its stable type: the target must serve it with the same policy.
    pub(crate) stable_type: String,
    /// The authority the source moves it under: the target's commit is fenced on its
    /// exact version, and keeps its ObjectGeneration.
    pub(crate) source_fence: OwnerFence,
    pub(crate) source_version: String,
    /// The application's captured state (`preserve`); `None` for `recreate`.
    #[serde(default)]
    pub(crate) state: Option<MovedState>,
    /// Its running timers.
    pub(crate) timers: Vec<TimerRecord>,
    /// What the routes bound to an Actor outside it carry to the target (opaque).
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "serde_bytes")]
    pub(crate) bound: Vec<u8>,
}

/// The most member Actors a SpotWide Spot moves with.
pub(crate) const MAX_AGGREGATE_MEMBERS: usize = 4096;

/// One member Actor of a moving SpotWide Spot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MemberRestore {
    pub(crate) id: String,
    pub(crate) object: MovedObject,
}

/// Where a moved object's captured state is: in the restore itself when it is small, in
/// the Relocation Store when it is not (a connection's messages are bounded well below
/// the 64 MiB a state may take).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum MovedState {
    Inline(#[serde(with = "serde_bytes")] Vec<u8>),
    Stored { reference: String, len: u64 },
}

impl MovedState {
    /// The state's size in bytes.
    pub(crate) fn len(&self) -> usize {
        match self {
            MovedState::Inline(bytes) => bytes.len(),
            MovedState::Stored { len, .. } => usize::try_from(*len).unwrap_or(usize::MAX),
        }
    }
}

/// The Join a move carries out: the Spot to join on the target, and the request its
/// `on_actor_join` decides on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JoinIntent {
    pub(crate) spot: String,
    #[serde(with = "serde_bytes")]
    pub(crate) request: Vec<u8>,
}

/// Target to source, answering a restore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum RestoreReply {
    /// FollowRelay-ready.
    Ready(RelayReady),
    /// The Join's target Spot declined the Actor (`on_actor_join` rejected it): nothing
    /// was built; the Actor stays.
    Declined {
        #[serde(with = "serde_bytes")]
        reply: Vec<u8>,
    },
}

impl RestoreReply {
    pub(crate) fn encode(&self) -> Result<bytes::Bytes> {
        crate::wire::cbor_encode(self)
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        let reply: RestoreReply =
            crate::wire::cbor_decode(bytes).map_err(|e| protocol("a restore reply", e))?;
        if let RestoreReply::Ready(ready) = &reply {
            check_fence("a relay-ready record", &ready.target_fence)?;
            for fence in &ready.members {
                check_fence("a relay-ready record", fence)?;
            }
        }
        Ok(reply)
    }
}

/// Target to source: the temporary queue is registered and the instance is built; relay
/// to this fence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RelayReady {
    /// The fence the object will run under on the target (AOG + 1, the target's lease).
    pub(crate) target_fence: OwnerFence,
    pub(crate) target_route: OwnerRoute,
    /// A SpotWide Spot's members: the fence each will run under, in the restore's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) members: Vec<OwnerFence>,
}

/// The relocation a cutover (or a barrier) is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CutoverRecord {
    /// `'a'` for an Actor, `'s'` for a Spot.
    pub(crate) kind: char,
    pub(crate) relocation_id: String,
}

impl RestoreRecord {
    pub(crate) fn encode(&self) -> Result<bytes::Bytes> {
        crate::wire::cbor_encode(self)
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        let record: RestoreRecord =
            crate::wire::cbor_decode(bytes).map_err(|e| protocol("a restore record", e))?;
        check_object(&record.object)?;
        if !matches!(record.kind, 'a' | 's') {
            return Err(protocol("a restore record", "an unknown object kind"));
        }
        if !record.members.is_empty() {
            check_members(&record)?;
        }
        if record.relocation_id.is_empty() || record.relocation_id.len() > 64 {
            return Err(protocol(
                "a restore record",
                "a relocation id of 1..=64 bytes",
            ));
        }
        Ok(record)
    }
}

fn check_object(object: &MovedObject) -> Result<()> {
    check_fence("a restore record", &object.source_fence)?;
    if object.bound.len() > super::MAX_BOUND_ROUTES_BYTES {
        return Err(protocol(
            "a restore record",
            "bound routes over their bound",
        ));
    }
    let count = object.timers.len();
    if count > MAX_TIMERS {
        return Err(protocol(
            "a restore record",
            format!("{count} timers (at most {MAX_TIMERS})"),
        ));
    }
    Ok(())
}

/// Members move only with a Spot of their own (not with a Join or another Spot), at most
/// [`MAX_AGGREGATE_MEMBERS`], each once, with valid IDs, fences and timers.
fn check_members(record: &RestoreRecord) -> Result<()> {
    let what = "a restore record";
    if record.kind != 's' || record.join.is_some() || record.with_spot.is_some() {
        return Err(protocol(what, "members move only with their own Spot"));
    }
    if record.members.len() > MAX_AGGREGATE_MEMBERS {
        return Err(protocol(
            what,
            format!(
                "{} members (at most {MAX_AGGREGATE_MEMBERS})",
                record.members.len()
            ),
        ));
    }
    let mut seen = std::collections::HashSet::with_capacity(record.members.len());
    for member in &record.members {
        crate::object::ActorId::new(&member.id).map_err(|e| protocol(what, e))?;
        if !seen.insert(member.id.as_str()) {
            return Err(protocol(what, format!("member {} twice", member.id)));
        }
        check_object(&member.object)?;
    }
    Ok(())
}

impl CutoverRecord {
    pub(crate) fn encode(&self) -> Result<bytes::Bytes> {
        crate::wire::cbor_encode(self)
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        crate::wire::cbor_decode(bytes).map_err(|e| protocol("a cutover record", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::follow::FollowNotice;
    use crate::ErrorKind;

    fn fence(owner_generation: u64) -> OwnerFence {
        OwnerFence {
            object_generation: 4,
            owner_generation,
            owner: "o".into(),
            lease_generation: 2,
        }
    }

    fn route() -> OwnerRoute {
        OwnerRoute {
            mesh_name: "m".into(),
            rid: "n".into(),
            node_generation: 1,
        }
    }

    #[test]
    fn records_round_trip_and_garbage_is_a_protocol_error() {
        let restore = RestoreRecord {
            kind: 'a',
            relocation_id: "r1".into(),
            object: MovedObject {
                stable_type: "player".into(),
                source_fence: fence(1),
                source_version: "7".into(),
                state: Some(MovedState::Inline(vec![1, 2, 3])),
                timers: Vec::new(),
                bound: Vec::new(),
            },
            join: None,
            with_spot: None,
            members: Vec::new(),
        };
        assert_eq!(
            RestoreRecord::decode(&restore.encode().unwrap()).unwrap(),
            restore
        );
        for garbage in [&b""[..], b"\xff\xff", b"\x00"] {
            assert!(RestoreRecord::decode(garbage)
                .unwrap_err()
                .is(ErrorKind::ProtocolError));
            assert!(FollowNotice::decode(garbage)
                .unwrap_err()
                .is(ErrorKind::ProtocolError));
            assert!(RestoreReply::decode(garbage)
                .unwrap_err()
                .is(ErrorKind::ProtocolError));
        }
        let mut zero = restore.clone();
        zero.object.source_fence.lease_generation = 0;
        assert!(RestoreRecord::decode(&zero.encode().unwrap()).is_err());
        let mut bound = restore.clone();
        bound.object.bound = vec![7; super::super::MAX_BOUND_ROUTES_BYTES];
        assert_eq!(
            RestoreRecord::decode(&bound.encode().unwrap()).unwrap(),
            bound
        );
        bound.object.bound.push(7);
        let oversized = RestoreRecord::decode(&bound.encode().unwrap()).unwrap_err();
        assert!(oversized.is(ErrorKind::ProtocolError), "{oversized}");
    }

    proptest::proptest! {
        /// No byte string makes a relocation decoder panic: each is a record or a
        /// protocol error.
        #[test]
        fn relocation_decoders_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            for result in [
                RestoreRecord::decode(&bytes).map(|_| ()),
                RestoreReply::decode(&bytes).map(|_| ()),
                CutoverRecord::decode(&bytes).map(|_| ()),
                FollowNotice::decode(&bytes).map(|_| ()),
            ] {
                if let Err(e) = result {
                    proptest::prop_assert!(e.is(ErrorKind::ProtocolError));
                }
            }
        }

        /// A valid record with any of its bytes changed still decodes to a record or a
        /// protocol error.
        #[test]
        fn a_mutated_restore_record_is_a_record_or_a_protocol_error(at in 0usize..4096, byte in proptest::prelude::any::<u8>()) {
            let record = RestoreRecord {
                kind: 'a',
                relocation_id: "r1".into(),
                object: MovedObject {
                    stable_type: "player".into(),
                    source_fence: fence(1),
                    source_version: "7".into(),
                    state: Some(MovedState::Stored { reference: "zlink:state:r1".into(), len: 40 }),
                    timers: Vec::new(),
                    bound: Vec::new(),
                },
                join: Some(JoinIntent { spot: "room".into(), request: vec![1, 2] }),
                with_spot: None,
                members: Vec::new(),
            };
            let mut bytes = record.encode().unwrap().to_vec();
            let at = at % bytes.len();
            bytes[at] = byte;
            if let Err(e) = RestoreRecord::decode(&bytes) {
                proptest::prop_assert!(e.is(ErrorKind::ProtocolError));
            }
        }
    }

    #[test]
    fn members_travel_only_with_their_own_spot_each_once_and_bounded() {
        let object = |stable_type: &str| MovedObject {
            stable_type: stable_type.into(),
            source_fence: fence(1),
            source_version: "3".into(),
            state: None,
            timers: Vec::new(),
            bound: Vec::new(),
        };
        let member = |id: &str| MemberRestore {
            id: id.into(),
            object: object("guest"),
        };
        let unit = RestoreRecord {
            kind: 's',
            relocation_id: "r1".into(),
            object: object("table"),
            join: None,
            with_spot: None,
            members: vec![member("g1"), member("g2")],
        };
        assert_eq!(
            RestoreRecord::decode(&unit.encode().unwrap()).unwrap(),
            unit
        );
        let mut zero_member = member("g3");
        zero_member.object.source_fence.object_generation = 0;
        for bad in [
            RestoreRecord {
                kind: 'a',
                ..unit.clone()
            },
            RestoreRecord {
                with_spot: Some("other".into()),
                ..unit.clone()
            },
            RestoreRecord {
                members: vec![member("g1"), member("g1")],
                ..unit.clone()
            },
            RestoreRecord {
                members: vec![member("")],
                ..unit.clone()
            },
            RestoreRecord {
                members: vec![zero_member],
                ..unit.clone()
            },
            RestoreRecord {
                members: (0..=MAX_AGGREGATE_MEMBERS)
                    .map(|n| member(&format!("g{n}")))
                    .collect(),
                ..unit.clone()
            },
        ] {
            let refused = RestoreRecord::decode(&bad.encode().unwrap()).unwrap_err();
            assert!(refused.is(ErrorKind::ProtocolError), "{refused}");
        }
    }

    #[test]
    fn a_notice_names_a_later_owner_within_eight_hops_the_relayed_operation_and_its_queue() {
        let notice = FollowNotice {
            kind: 'a',
            id: "p".into(),
            source_fence: fence(1),
            source_route: route(),
            target_fence: fence(2),
            target_route: route(),
            hops: 1,
            queued_messages: 3,
            queued_bytes: 120,
            operation: 41,
            reply_correlation: 7,
        };
        assert_eq!(
            FollowNotice::decode(&notice.encode().unwrap()).unwrap(),
            notice
        );
        for bad in [
            FollowNotice {
                hops: 9,
                ..notice.clone()
            },
            FollowNotice {
                hops: 0,
                ..notice.clone()
            },
            FollowNotice {
                target_fence: fence(1),
                ..notice.clone()
            },
            FollowNotice {
                kind: 'x',
                ..notice.clone()
            },
            FollowNotice {
                operation: 0,
                ..notice.clone()
            },
            FollowNotice {
                queued_messages: 0,
                ..notice.clone()
            },
        ] {
            assert!(FollowNotice::decode(&bad.encode().unwrap()).is_err());
        }
    }
}
