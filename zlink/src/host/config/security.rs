//! The security a node's declaration asks for: its CURVE key pair, whom it trusts, and
//! where plaintext is refused. Every problem is a violation, reported with the rest.

use std::sync::Arc;

use super::validate::Validator;
use crate::channel::client_server::ClientServerRole;
use crate::channel::fanout::FanoutDeclaration;
use crate::link::{CurveKeypair, CurvePublicKey, Trust, TrustSet};
use crate::mesh::{PeerSpec, SecuritySettings};

/// What of the builder's declaration security reads.
pub(super) struct Declared<'a> {
    /// Whether a Location Store is configured.
    pub(super) store: bool,
    pub(super) curve: Option<&'a CurveKeypair>,
    pub(super) trust: Option<&'a Trust>,
    pub(super) trust_keys: &'a [CurvePublicKey],
    pub(super) allow_plaintext: bool,
    pub(super) peers: &'a [PeerSpec],
    pub(super) client_server: &'a [ClientServerRole],
    pub(super) fanout: &'a [FanoutDeclaration],
}

/// CURVE keys and trust; plaintext on a non-loopback bind only when allowed.
pub(super) fn settings(
    d: &Declared<'_>,
    v: &mut Validator,
    listen: Option<&str>,
) -> SecuritySettings {
    // Only RouteMesh members publish keys: without a mesh and a store there is
    // nothing to learn them from.
    let mesh_discovery = d.store && listen.is_some();
    let trust_members = match (d.trust, d.curve.is_some()) {
        (Some(Trust::MeshMembers), true) => {
            if !mesh_discovery {
                v.violation(
                    "trust",
                    "MeshMembers needs a RouteMesh node (mesh_name, listen) with a Location Store",
                );
            }
            true
        }
        (None, true) => mesh_discovery,
        (Some(_), false) => {
            v.violation(
                "trust",
                "needs CURVE (curve): NULL links authenticate nobody",
            );
            false
        }
        _ => false,
    };
    let mut keys = d.trust_keys.to_vec();
    if let Some(Trust::Keys(explicit)) = d.trust {
        keys.extend(explicit.iter().copied());
    }
    let listens = listen.is_some()
        || d.client_server
            .iter()
            .any(|r| matches!(r, ClientServerRole::Server { .. }))
        || d.fanout
            .iter()
            .any(|r| matches!(r, FanoutDeclaration::Publisher(_)));
    if d.curve.is_some() && listens && !trust_members && keys.is_empty() {
        v.violation(
            "trust",
            "CURVE listeners would admit no client: give trust keys or Trust::MeshMembers",
        );
    }
    check_server_keys(d, v);
    if d.curve.is_none() && !d.allow_plaintext {
        refuse_remote_plaintext(d, v, listen);
    }
    // A node always admits itself: its ClientServer clients call its own servers.
    keys.extend(d.curve.map(CurveKeypair::public));
    SecuritySettings {
        keypair: d.curve.cloned(),
        trust: Arc::new(TrustSet::new(keys)),
        trust_members,
    }
}

/// Every dialed server (mesh peers, ClientServer servers, fanout publishers) has a CURVE
/// public key exactly when this node speaks CURVE.
fn check_server_keys(d: &Declared<'_>, v: &mut Validator) {
    let client_server_peers = d.client_server.iter().flat_map(|role| match role {
        ClientServerRole::Client {
            channel, connect, ..
        } => connect
            .iter()
            .map(|p| {
                (
                    format!("ClientServer {channel:?} connect {}", p.endpoint),
                    p.server_key.is_some(),
                )
            })
            .collect(),
        ClientServerRole::Server { .. } => Vec::new(),
    });
    let subscriber_peers = d.fanout.iter().flat_map(|role| match role {
        FanoutDeclaration::Subscriber(spec) => spec
            .connect
            .iter()
            .map(|(endpoint, key)| {
                (
                    format!("fanout {:?} connect {endpoint}", spec.channel),
                    key.is_some(),
                )
            })
            .collect(),
        FanoutDeclaration::Publisher(_) => Vec::new(),
    });
    let mesh_peers = d
        .peers
        .iter()
        .enumerate()
        .map(|(i, p)| (format!("peer[{i}] server key"), p.server_key.is_some()));
    for (setting, has_key) in mesh_peers
        .chain(client_server_peers)
        .chain(subscriber_peers)
    {
        match (d.curve.is_some(), has_key) {
            (false, true) => v.violation(setting, "a server key needs CURVE (curve)"),
            (true, false) => v.violation(setting, "needs the server's CURVE public key with CURVE"),
            _ => {}
        }
    }
}

/// Without CURVE, every TCP listener must bind loopback unless plaintext is allowed.
fn refuse_remote_plaintext(d: &Declared<'_>, v: &mut Validator, listen: Option<&str>) {
    let listens = listen
        .into_iter()
        .map(|l| ("listen".to_string(), l.to_string()));
    let others = d.client_server.iter().filter_map(|role| match role {
        ClientServerRole::Server {
            channel, listen, ..
        } => Some((format!("ClientServer {channel:?} listen"), listen.clone())),
        ClientServerRole::Client { .. } => None,
    });
    let publishers = d.fanout.iter().filter_map(|role| match role {
        FanoutDeclaration::Publisher(spec) => Some((
            format!("fanout {:?} listen", spec.channel),
            spec.listen.clone(),
        )),
        FanoutDeclaration::Subscriber(_) => None,
    });
    for (setting, endpoint) in listens.chain(others).chain(publishers) {
        // Only TCP crosses a network; an in-process transport (mem://) does not.
        if endpoint.starts_with("tcp://") && !crate::link::is_loopback(&endpoint) {
            v.violation(setting, format!("{endpoint} is not a loopback address: plaintext (NULL) links there need allow_plaintext(), or use curve()"));
        }
    }
}
