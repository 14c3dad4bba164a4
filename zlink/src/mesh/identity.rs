//! Node identity: RIDs and lifecycle generations, and the admission record a node shows
//! its peers.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use super::ChannelRegistry;
use crate::sync::LockUnpoisoned;
use crate::wire::{Admission, PROTOCOL_MAJOR};

const RUNNING: u8 = 0;
const SHUTTING_DOWN: u8 = 1;
const STOPPED: u8 = 2;

/// Who a node is and what it advertises: MeshName, RID, lifecycle generation, descriptor
/// revision, endpoint, server channels and message cap, and whether it still serves.
pub(crate) struct NodeIdentity {
    mesh_name: String,
    rid: String,
    generation: u64,
    revision: AtomicU64,
    endpoint: Mutex<String>,
    registry: Arc<ChannelRegistry>,
    max_message: usize,
    state: AtomicU8,
    /// Published in the descriptor: the node takes no new objects (a drain, a shutdown).
    draining: AtomicBool,
}

impl NodeIdentity {
    pub(crate) fn new(
        mesh_name: String,
        rid: String,
        generation: u64,
        registry: Arc<ChannelRegistry>,
        max_message: usize,
    ) -> Self {
        NodeIdentity {
            mesh_name,
            rid,
            generation,
            revision: AtomicU64::new(1),
            endpoint: Mutex::new(String::new()),
            registry,
            max_message,
            state: AtomicU8::new(RUNNING),
            draining: AtomicBool::new(false),
        }
    }

    pub(crate) fn mesh_name(&self) -> &str {
        &self.mesh_name
    }

    pub(crate) fn rid(&self) -> &str {
        &self.rid
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    pub(crate) fn registry(&self) -> &Arc<ChannelRegistry> {
        &self.registry
    }

    /// The largest complete message this node accepts.
    pub(crate) fn max_message(&self) -> usize {
        self.max_message
    }

    pub(crate) fn endpoint(&self) -> String {
        self.endpoint.lock_unpoisoned().clone()
    }

    pub(crate) fn set_endpoint(&self, endpoint: String) {
        *self.endpoint.lock_unpoisoned() = endpoint;
    }

    /// A new descriptor revision (after a weight change).
    pub(crate) fn bump_revision(&self) {
        self.revision.fetch_add(1, Ordering::AcqRel);
    }

    /// Marks the node draining or serving again, with a new descriptor revision; false
    /// when it was so already.
    pub(crate) fn set_draining(&self, draining: bool) -> bool {
        let changed = self.draining.swap(draining, Ordering::AcqRel) != draining;
        if changed {
            self.bump_revision();
        }
        changed
    }

    /// Whether the node says it takes no new objects.
    pub(crate) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    pub(crate) fn is_running(&self) -> bool {
        self.state.load(Ordering::Acquire) == RUNNING
    }

    /// Starts shutting down; false when shutdown had already begun.
    pub(crate) fn begin_shutdown(&self) -> bool {
        self.state
            .compare_exchange(RUNNING, SHUTTING_DOWN, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    pub(crate) fn mark_stopped(&self) {
        self.state.store(STOPPED, Ordering::Release);
    }

    /// This node's admission record as of now.
    pub(crate) fn admission(&self) -> Admission {
        Admission {
            mesh_name: self.mesh_name.clone(),
            rid: self.rid.clone(),
            generation: self.generation,
            revision: self.revision.load(Ordering::Acquire),
            protocol: PROTOCOL_MAJOR,
            endpoint: self.endpoint(),
            channels: self.registry.server_weights(),
            max_message: Some(self.max_message as u64),
        }
    }
}

/// A fresh RID of the form `<prefix>-<uuid-v4>` (36 lowercase hex-and-dash characters).
pub fn generate_rid(prefix: &str) -> String {
    let b: [u8; 16] = rand::random();
    let mut u = u128::from_be_bytes(b);
    // Version 4 and RFC 4122 variant bits.
    u = (u & !(0xF << 76)) | (0x4 << 76);
    u = (u & !(0x3 << 62)) | (0x2 << 62);
    let h = format!("{u:032x}");
    format!(
        "{prefix}-{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A random non-zero lifecycle generation; compared only for equality.
pub(crate) fn generate_generation() -> u64 {
    loop {
        let g: u64 = rand::random::<u64>() >> 1;
        if g != 0 {
            return g;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn generated_rid_has_prefix_and_uuid_v4_form() {
        let rid = super::generate_rid("node");
        let uuid = rid
            .strip_prefix("node-")
            .expect("the generated RID has its prefix");
        assert_eq!(uuid.len(), 36);
        assert_eq!(uuid.as_bytes()[14], b'4');
        assert!(matches!(uuid.as_bytes()[19], b'8' | b'9' | b'a' | b'b'));
        assert_ne!(super::generate_rid("node"), rid);
    }
}
