//! Link security: which ZMTP mechanism a connection runs, and whom a listener admits.
//!
//! NULL is for development on loopback. CURVE (ZMTP RFC 26) authenticates both ends with
//! long-term X25519 keys and encrypts every frame; a listener admits only client keys in
//! its [`TrustSet`].

use std::collections::HashSet;
use std::sync::{Arc, RwLock};

pub use super::zmtp::curve::{CurveKeypair, CurvePublicKey, KeyError};
use crate::sync::RwLockUnpoisoned;

/// Whom a CURVE listener admits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// Exactly these client keys.
    Keys(Vec<CurvePublicKey>),
    /// The keys that live members of this mesh publish in their Location Store descriptors
    /// (plus any keys given with [`RuntimeBuilder::trust_key`](crate::RuntimeBuilder::trust_key)).
    MeshMembers,
}

/// The client keys a CURVE listener admits, shared by every listener of a node. With
/// [`Trust::MeshMembers`] discovery keeps the published part current.
#[derive(Debug, Default)]
pub struct TrustSet {
    explicit: HashSet<CurvePublicKey>,
    published: RwLock<HashSet<CurvePublicKey>>,
}

impl TrustSet {
    /// A trust set of exactly these keys (until discovery publishes more).
    pub fn new(explicit: impl IntoIterator<Item = CurvePublicKey>) -> Self {
        TrustSet {
            explicit: explicit.into_iter().collect(),
            published: RwLock::default(),
        }
    }

    /// Whether `key` may connect.
    pub fn allows(&self, key: &CurvePublicKey) -> bool {
        self.explicit.contains(key) || self.published.read_unpoisoned().contains(key)
    }

    /// Replaces the keys learned from the Location Store.
    pub(crate) fn set_published(&self, keys: impl IntoIterator<Item = CurvePublicKey>) {
        *self.published.write_unpoisoned() = keys.into_iter().collect();
    }
}

/// What a listener requires of the clients it accepts.
#[derive(Debug, Clone)]
pub enum ServerSecurity {
    /// No authentication or encryption (ZMTP NULL).
    Null,
    /// ZMTP CURVE with this node's keypair; only trusted client keys are admitted.
    Curve {
        /// The listener's long-term keypair.
        keypair: CurveKeypair,
        /// The client keys admitted.
        trust: Arc<TrustSet>,
    },
}

/// How an outbound connection authenticates.
#[derive(Debug, Clone)]
pub enum ClientSecurity {
    /// No authentication or encryption (ZMTP NULL).
    Null,
    /// ZMTP CURVE: our keypair, and the key the server must prove it holds.
    Curve {
        /// This node's long-term keypair.
        keypair: CurveKeypair,
        /// The server's long-term public key.
        server: CurvePublicKey,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trust_set_admits_explicit_and_published_keys_only() {
        let a = CurveKeypair::generate().public();
        let b = CurveKeypair::generate().public();
        let c = CurveKeypair::generate().public();
        let trust = TrustSet::new([a]);
        assert!(trust.allows(&a));
        assert!(!trust.allows(&b));
        trust.set_published([b]);
        assert!(trust.allows(&b) && !trust.allows(&c));
        trust.set_published([]);
        assert!(!trust.allows(&b));
    }
}
