//! The MeshNode descriptor: what a node publishes about itself under its owner lease.
//!
//! A descriptor is an intent ("this node says it is here"); only the handshake on a real
//! connection proves identity and lifecycle generation.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::types::MAX_VALUE_BYTES;
use super::{StoreError, StoreResult};

/// What one MeshNode publishes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeshDescriptor {
    /// The MeshName.
    pub mesh_name: String,
    /// The node's RID.
    pub rid: String,
    /// The node's lifecycle generation (a restart changes it).
    pub generation: u64,
    /// Rises with every change within a generation (weights).
    pub revision: u64,
    /// Where peers connect.
    pub endpoint: String,
    /// The wire protocol's major version.
    pub protocol: u8,
    /// Server channels and weights, sorted by name.
    pub channels: Vec<(String, u32)>,
    /// The node's CURVE public key (Z85), its security identity, when it runs CURVE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve_key: Option<String>,
    /// The Spot types the node creates and runs (its Object Server role), sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spot_types: Vec<String>,
    /// Which of `spot_types` are Instance Spot types (activated by an intent call), sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instance_spot_types: Vec<String>,
    /// The Actor types the node creates and runs, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actor_types: Vec<String>,
    /// The node's Entry Spot (this lifecycle's), when it serves Actor types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_spot: Option<String>,
    /// The node's placement weight for new Spots (0..=10000; 0 takes none).
    #[serde(default = "default_placement_weight")]
    pub placement_weight: u32,
    /// Whether the node is draining (relocating everything away, or shutting down): it
    /// takes no new objects, and placement passes it over.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub draining: bool,
}

fn default_placement_weight() -> u32 {
    100
}

impl MeshDescriptor {
    /// The published CURVE key, when there is one and it parses.
    pub fn curve_public_key(&self) -> Option<crate::link::CurvePublicKey> {
        self.curve_key.as_deref()?.parse().ok()
    }
}

impl MeshDescriptor {
    /// Encodes the descriptor (CBOR); a descriptor over 1 MiB is refused, never truncated.
    pub fn encode(&self) -> StoreResult<Bytes> {
        let bytes = crate::wire::cbor_encode(self)
            .map_err(|e| StoreError::InvalidArgument(format!("descriptor: {e}")))?;
        if bytes.len() > MAX_VALUE_BYTES {
            return Err(StoreError::InvalidArgument(format!(
                "descriptor of {} bytes exceeds {MAX_VALUE_BYTES}",
                bytes.len()
            )));
        }
        Ok(bytes)
    }

    /// Decodes a descriptor read from the store.
    pub fn decode(bytes: &[u8]) -> StoreResult<Self> {
        crate::wire::cbor_decode(bytes)
            .map_err(|e| StoreError::Protocol(format!("descriptor: {e}")))
    }
}
