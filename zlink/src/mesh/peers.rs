//! Admitted peers, keyed by RID.

use std::collections::HashMap;
use std::sync::Arc;

use crate::link::{ConnId, Connection};

/// An admitted peer: the connection that proved its identity and what it advertised.
#[derive(Clone)]
pub(crate) struct Peer {
    pub(crate) conn: Arc<dyn Connection>,
    pub(crate) generation: u64,
    pub(crate) revision: u64,
    pub(crate) endpoint: String,
    pub(crate) channels: HashMap<String, u32>,
    /// The largest complete message the peer accepts, if it said.
    pub(crate) max_message: Option<u64>,
}

impl Peer {
    pub(crate) fn conn_id(&self) -> ConnId {
        self.conn.id()
    }
}

/// A snapshot of one ready peer, for monitoring and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerStatus {
    /// The peer's RID.
    pub rid: String,
    /// Its lifecycle generation (a restart changes it).
    pub generation: u64,
    /// Its descriptor revision as last applied here.
    pub revision: u64,
    /// The endpoint it advertised.
    pub endpoint: String,
    /// Its server channels and weights as known here, sorted by name.
    pub channels: Vec<(String, u32)>,
}

impl PeerStatus {
    pub(crate) fn of(rid: &str, p: &Peer) -> Self {
        let mut channels: Vec<_> = p.channels.iter().map(|(k, v)| (k.clone(), *v)).collect();
        channels.sort();
        PeerStatus {
            rid: rid.to_string(),
            generation: p.generation,
            revision: p.revision,
            endpoint: p.endpoint.clone(),
            channels,
        }
    }

    /// The weight this node currently uses for the peer on `channel`.
    pub fn weight(&self, channel: &str) -> Option<u32> {
        self.channels
            .iter()
            .find(|(name, _)| name == channel)
            .map(|(_, w)| *w)
    }
}
