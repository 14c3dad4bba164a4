//! The builder's checks of what a node declares next to its RouteMesh core: ClientServer
//! and fanout roles (against each other and the RouteMesh channels), the Spot and Actor
//! types it serves, and the object facts its descriptor publishes.

use std::collections::BTreeMap;

use super::validate::Validator;
use crate::channel::client_server::ClientServerRole;
use crate::channel::fanout::FanoutDeclaration;
use crate::mesh::{ChannelRole, ServedObjects};
use crate::object::{Relocation, StableType};

/// What the node's descriptor publishes of its object types.
pub(super) fn served_objects(
    spot_types: &[crate::object::SpotType],
    actor_types: &[crate::object::ActorType],
    entry_spot: Option<&crate::object::SpotId>,
) -> ServedObjects {
    let sorted = |names: Vec<String>| {
        let mut names = names;
        names.sort();
        names
    };
    ServedObjects {
        spot_types: sorted(
            spot_types
                .iter()
                .map(|t| t.stable_type().as_str().to_string())
                .collect(),
        ),
        instance_spot_types: sorted(
            spot_types
                .iter()
                .filter(|t| t.def.instance)
                .map(|t| t.stable_type().as_str().to_string())
                .collect(),
        ),
        actor_types: sorted(
            actor_types
                .iter()
                .map(|t| t.stable_type().as_str().to_string())
                .collect(),
        ),
        entry_spot: entry_spot.map(|id| id.as_str().to_string()),
    }
}

pub(super) fn validate_client_server(
    roles: &[ClientServerRole],
    has_store: bool,
    v: &mut Validator,
    mesh: &BTreeMap<String, ChannelRole>,
) {
    let mut seen = std::collections::HashSet::new();
    for role in roles {
        let channel = role.channel();
        let owner = format!("client_server {channel:?}");
        v.text(&format!("{owner} name"), Some(channel), true);
        if mesh.contains_key(channel) {
            v.violation(
                owner.clone(),
                "is also a RouteMesh channel: one ChannelName must have exactly one send path",
            );
        }
        match role {
            ClientServerRole::Server {
                handlers,
                weight,
                listen,
                advertise_host,
                ..
            } => {
                if !seen.insert((channel.to_string(), "server")) {
                    v.violation(owner.clone(), "Server role registered twice");
                }
                v.weight(channel, *weight);
                v.endpoint(&format!("{owner} listen"), Some(listen));
                v.advertising(
                    &format!("{owner} listen"),
                    Some(listen),
                    advertise_host.as_deref(),
                );
                v.handler_packets(&owner, handlers.as_ref());
            }
            ClientServerRole::Client {
                connect, automatic, ..
            } => {
                if !seen.insert((channel.to_string(), "client")) {
                    v.violation(owner.clone(), "Client role registered twice");
                }
                for peer in connect {
                    v.endpoint(&format!("{owner} connect"), Some(&peer.endpoint));
                }
                if *automatic && !has_store {
                    v.violation(
                        owner.clone(),
                        "discover() needs a Location Store (location_store)",
                    );
                }
                if connect.is_empty() && !*automatic {
                    v.violation(owner, "has no server: add connect(endpoint) or discover()");
                }
            }
        }
    }
}

pub(super) fn validate_fanout(
    roles: &[FanoutDeclaration],
    has_store: bool,
    v: &mut Validator,
    mesh: &BTreeMap<String, ChannelRole>,
    client_server: &[ClientServerRole],
) {
    let mut seen = std::collections::HashSet::new();
    for role in roles {
        let channel = role.channel();
        let owner = format!("fanout {channel:?}");
        v.text(&format!("{owner} name"), Some(channel), true);
        if mesh.contains_key(channel) || client_server.iter().any(|c| c.channel() == channel) {
            v.violation(
                owner.clone(),
                "is also a RouteMesh or ClientServer channel: one ChannelName, one pattern",
            );
        }
        match role {
            FanoutDeclaration::Publisher(p) => {
                if !seen.insert((channel.to_string(), "publisher")) {
                    v.violation(owner.clone(), "publisher registered twice");
                }
                v.endpoint(&format!("{owner} listen"), Some(&p.listen));
                v.advertising(
                    &format!("{owner} listen"),
                    Some(&p.listen),
                    p.advertise_host.as_deref(),
                );
                if p.high_water_mark == 0 {
                    v.violation(
                        format!("{owner} send_high_water_mark"),
                        "must be at least 1",
                    );
                }
            }
            FanoutDeclaration::Subscriber(s) => {
                if !seen.insert((channel.to_string(), "subscriber")) {
                    v.violation(owner.clone(), "subscriber registered twice");
                }
                for (endpoint, _) in &s.connect {
                    v.endpoint(&format!("{owner} connect"), Some(endpoint));
                }
                match (s.connect.is_empty(), s.automatic) {
                    (false, true) => v.violation(
                        owner.clone(),
                        "combines connect(endpoint) and discover(): choose one",
                    ),
                    (true, false) => v.violation(
                        owner.clone(),
                        "has no publisher: add connect(endpoint) or discover()",
                    ),
                    _ => {}
                }
                if s.automatic && !has_store {
                    v.violation(
                        owner.clone(),
                        "discover() needs a Location Store (location_store)",
                    );
                }
                let handled = s.handlers.packets();
                if handled.is_empty() {
                    v.violation(owner, "its handler group handles no packet");
                }
            }
        }
    }
}

/// The Spot or Actor types a node serves: each once, with a Location Store (objects keep
/// their authority there), and a type that moves with a Relocation Store (where a move
/// keeps the results of the requests it relays).
pub(super) fn validate_object_types<'a>(
    v: &mut Validator,
    noun: &str,
    types: impl Iterator<Item = (&'a StableType, Relocation, bool)>,
    has_store: bool,
    keeps_results: bool,
) {
    let mut seen = std::collections::HashSet::new();
    for (stable_type, relocation, instance) in types {
        let owner = format!("{noun} type {:?}", stable_type.as_str());
        if !seen.insert(stable_type.clone()) {
            v.violation(owner.clone(), "registered twice on this node");
        }
        if !has_store {
            v.violation(
                owner.clone(),
                format!(
                    "needs a Location Store (location_store): {noun}s keep their authority there"
                ),
            );
        }
        let moves = match relocation {
            Relocation::Disable => None,
            Relocation::Recreate => Some("recreate"),
            Relocation::Preserve => Some("preserve"),
        };
        if instance && !keeps_results {
            v.violation(
                owner.clone(),
                "is an Instance Spot type: it needs a Relocation Store (relocation_store), where the message that activates a Spot is kept until its handler ran",
            );
        }
        if let (Some(policy), false) = (moves, keeps_results) {
            v.violation(
                owner,
                format!("is declared relocation = {policy}: it needs a Relocation Store (relocation_store), where a move keeps the results of the requests it relays"),
            );
        }
    }
}
