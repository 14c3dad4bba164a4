//! The validated link security of one node: its CURVE keypair (if any) and the trust
//! set every listener of the node checks.

use std::sync::Arc;

use crate::link::{ClientSecurity, CurveKeypair, CurvePublicKey, ServerSecurity, TrustSet};

/// What every listener and dialer of one runtime uses.
#[derive(Debug, Clone, Default)]
pub(crate) struct SecuritySettings {
    /// `None`: ZMTP NULL everywhere.
    pub(crate) keypair: Option<CurveKeypair>,
    /// The client keys admitted (explicit keys plus, with `Trust::MeshMembers`, the keys
    /// live members publish).
    pub(crate) trust: Arc<TrustSet>,
    /// Whether discovery feeds the trust set from the members' descriptors.
    pub(crate) trust_members: bool,
}

impl SecuritySettings {
    /// The security a listener of this node runs.
    pub(crate) fn server(&self) -> ServerSecurity {
        match &self.keypair {
            None => ServerSecurity::Null,
            Some(keypair) => ServerSecurity::Curve {
                keypair: keypair.clone(),
                trust: self.trust.clone(),
            },
        }
    }

    /// The security of a dial to a server with `server_key`; `None` when CURVE is on and the
    /// server's key is not known (such a dial cannot authenticate the server).
    pub(crate) fn client(&self, server_key: Option<CurvePublicKey>) -> Option<ClientSecurity> {
        match (&self.keypair, server_key) {
            (None, _) => Some(ClientSecurity::Null),
            (Some(keypair), Some(server)) => Some(ClientSecurity::Curve {
                keypair: keypair.clone(),
                server,
            }),
            (Some(_), None) => None,
        }
    }

    /// This node's public key, published in its descriptors.
    pub(crate) fn public_key(&self) -> Option<CurvePublicKey> {
        self.keypair.as_ref().map(CurveKeypair::public)
    }
}
