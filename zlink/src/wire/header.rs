//! The CBOR header of control records.

use serde::{Deserialize, Serialize};

/// The CBOR header of a control record (hello, admit, reject, update, liveness probe and
/// ack). Which fields a command needs is checked by
/// [`Envelope::decode`](super::Envelope::decode); absent fields are omitted on the wire.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlHeader {
    /// Liveness probe id (probe and ack).
    #[serde(rename = "pr", default, skip_serializing_if = "is_zero")]
    pub probe: u64,
    /// Admission record (hello, admit, update).
    #[serde(rename = "ad", default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,
    /// Reject reason.
    #[serde(rename = "rj", default, skip_serializing_if = "Option::is_none")]
    pub reject: Option<RejectReason>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// A node's admission record, exchanged in hello/admit and re-sent in update.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Admission {
    /// The MeshName; a mismatch is rejected.
    #[serde(rename = "mesh")]
    pub mesh_name: String,
    /// Routing id of the sender.
    #[serde(rename = "rid")]
    pub rid: String,
    /// Lifecycle generation: a random non-zero token, new for every start.
    #[serde(rename = "gen")]
    pub generation: u64,
    /// Descriptor revision; rises with each weight change within one generation.
    #[serde(rename = "rev")]
    pub revision: u64,
    /// Protocol major version.
    #[serde(rename = "ver")]
    pub protocol: u8,
    /// The endpoint the sender listens on.
    #[serde(rename = "ep")]
    pub endpoint: String,
    /// Server ChannelNames with their weights, sorted by name.
    #[serde(rename = "chs")]
    pub channels: Vec<(String, u32)>,
    /// The largest complete message (all frames) the sender accepts. zlink always sends
    /// it; a peer that omits it has no cap of its own.
    #[serde(rename = "mx", default, skip_serializing_if = "Option::is_none")]
    pub max_message: Option<u64>,
}

/// Why an admission was refused (numbers follow the reference).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "u32", try_from = "u32")]
pub enum RejectReason {
    /// Protocol major version not supported.
    ProtocolVersionUnsupported = 1,
    /// A different MeshName.
    TopologyMismatch = 2,
    /// The RID is not the one expected.
    IdentityMismatch = 3,
    /// The peer's lifecycle generation is not the one this node knows from the Location
    /// Store (an old run of a restarted node, or a node whose lease is gone).
    LifecycleGenerationStale = 6,
    /// The RID is already admitted on a live connection.
    DuplicateConnection = 10,
    /// The admission record or the first frame could not be processed.
    InvalidDescriptor = 11,
    /// The node is shutting down.
    RuntimeNotServing = 9,
}

impl RejectReason {
    /// Its name in snake case (a metric label, a log field).
    pub fn label(self) -> &'static str {
        match self {
            RejectReason::ProtocolVersionUnsupported => "protocol_version_unsupported",
            RejectReason::TopologyMismatch => "topology_mismatch",
            RejectReason::IdentityMismatch => "identity_mismatch",
            RejectReason::LifecycleGenerationStale => "lifecycle_generation_stale",
            RejectReason::DuplicateConnection => "duplicate_connection",
            RejectReason::InvalidDescriptor => "invalid_descriptor",
            RejectReason::RuntimeNotServing => "runtime_not_serving",
        }
    }
}

impl From<RejectReason> for u32 {
    fn from(r: RejectReason) -> u32 {
        r as u32
    }
}

impl TryFrom<u32> for RejectReason {
    type Error = String;
    fn try_from(v: u32) -> Result<Self, String> {
        Ok(match v {
            1 => RejectReason::ProtocolVersionUnsupported,
            2 => RejectReason::TopologyMismatch,
            3 => RejectReason::IdentityMismatch,
            6 => RejectReason::LifecycleGenerationStale,
            9 => RejectReason::RuntimeNotServing,
            10 => RejectReason::DuplicateConnection,
            11 => RejectReason::InvalidDescriptor,
            other => return Err(format!("unknown reject reason {other}")),
        })
    }
}
