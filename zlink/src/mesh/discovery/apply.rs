//! Turning a complete member list into connection intents, and what a store outage does
//! to them.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::time::Instant;

use super::Discovery;
use crate::mesh::links::DialTarget;
use crate::store::{DescriptorEntry, MeshDescriptor, StoreError};

/// Applies a complete, consistent member list: only the changes it calls for.
pub(super) fn apply_members(discovery: &Arc<Discovery>, entries: Vec<DescriptorEntry>) {
    let me = discovery.identity.rid();
    // A ClientServer client dials every server, its own process's included; a RouteMesh
    // member leaves itself out and dials only larger RIDs.
    let client_server = discovery.policy.lists_itself();
    let mut live = BTreeMap::new();
    let mut own_entry = None;
    for entry in entries {
        if entry.id == me {
            own_entry = Some((entry.owner.clone(), entry.owner_alive));
        }
        if !entry.owner_alive {
            continue;
        }
        let descriptor = match MeshDescriptor::decode(&entry.body) {
            Ok(d) if d.rid == entry.id && d.mesh_name == discovery.identity.mesh_name() => d,
            Ok(_) => {
                tracing::warn!(id = %entry.id, "descriptor does not match its key; ignored");
                continue;
            }
            Err(e) => {
                tracing::warn!(id = %entry.id, error = %e, "undecodable descriptor ignored");
                continue;
            }
        };
        if client_server || descriptor.rid != me {
            live.insert(descriptor.rid.clone(), descriptor);
        }
    }
    let mut to_close = Vec::new();
    let mut to_dial = Vec::new();
    let members_changed;
    {
        let mut state = discovery.state();
        state.complete_at = Some(Instant::now());
        state.reachable = true;
        // The store is the truth: if our descriptor is not there under our lease (the
        // store lost its data, say), publish again on the next round.
        let listed = state
            .published
            .as_ref()
            .is_some_and(|(token, _)| own_entry.as_ref() == Some(&(token.clone(), true)));
        if !client_server && state.published.is_some() && !listed {
            tracing::warn!(rid = %me, "own descriptor missing from the store; publishing again");
            state.published = None;
            discovery.wake.notify_one();
        }
        if state.grace_expired {
            tracing::info!(rid = %me, members = live.len(), "member list read again after the store outage");
            state.grace_expired = false;
        }
        let gone: Vec<String> = state
            .members
            .keys()
            .filter(|rid| !live.contains_key(*rid))
            .cloned()
            .collect();
        for rid in gone {
            if discovery.is_manual(&rid) {
                continue;
            }
            tracing::info!(rid = %me, peer = %rid, "member's owner lease is gone; dropping it");
            state.departed.insert(rid.clone(), Instant::now());
            if let Some((_, cancel)) = state.dialers.remove(&rid) {
                cancel.cancel();
            }
            if let Some((conn, _)) = discovery.links.peers().identity(&rid) {
                to_close.push((conn, "member lease gone"));
            }
        }
        for (rid, descriptor) in &live {
            state.departed.remove(rid);
            if discovery.is_manual(rid) {
                continue;
            }
            if let Some((conn, generation)) = discovery.links.peers().identity(rid) {
                if generation != descriptor.generation {
                    tracing::info!(peer = %rid, old = generation, new = descriptor.generation, "member restarted; closing the old lifecycle's connection");
                    to_close.push((conn, "member restarted"));
                }
            }
            if discovery.policy.dials(me, rid) {
                let server_key = descriptor.curve_public_key();
                if discovery.node_settings.security.keypair.is_some() && server_key.is_none() {
                    tracing::warn!(peer = %rid, "member publishes no valid CURVE key; not dialing it");
                    continue;
                }
                let target = DialTarget {
                    endpoint: descriptor.endpoint.clone(),
                    expected_rid: Some(rid.clone()),
                    expected_generation: Some(descriptor.generation),
                    server_key,
                };
                let current = state.dialers.get(rid).map(|(t, _)| t);
                if current != Some(&target) {
                    if let Some((_, cancel)) = state.dialers.remove(rid) {
                        cancel.cancel();
                    }
                    let cancel = discovery.links.cancel().child_token();
                    state
                        .dialers
                        .insert(rid.clone(), (target.clone(), cancel.clone()));
                    to_dial.push((target, cancel));
                }
            }
        }
        members_changed = state.members != live;
        state.members = live.clone();
        state.prune_departed(discovery.settings.lease.ttl * 2);
    }
    if discovery.node_settings.security.trust_members && discovery.policy.trusts_members() {
        // Seed 000 §2.3: a member's security identity is the key in its descriptor.
        let keys = live.values().filter_map(MeshDescriptor::curve_public_key);
        discovery.node_settings.security.trust.set_published(keys);
    }
    if members_changed {
        discovery.members_changed.send_modify(|n| *n += 1);
    }
    for (conn_id, reason) in to_close {
        discovery.links.lost(conn_id, reason);
    }
    for (target, cancel) in to_dial {
        tracing::info!(rid = %me, peer = ?target.expected_rid, endpoint = %target.endpoint, "dialing discovered member");
        discovery.links.dial(target, cancel);
    }
    apply_descriptor_weights(discovery, &live);
}

/// A weight change also travels in the descriptor revision: apply it to connected
/// members of the same generation whose connection has not delivered it yet.
fn apply_descriptor_weights(discovery: &Discovery, live: &BTreeMap<String, MeshDescriptor>) {
    for (rid, descriptor) in live {
        let applied = discovery.links.peers().apply_weights(
            rid,
            descriptor.generation,
            descriptor.revision,
            descriptor.channels.clone(),
        );
        if applied {
            tracing::info!(peer = %rid, revision = descriptor.revision, "member weights updated from the store");
        }
    }
}

/// The member list could not be read. Within StoreFailureGrace of the last complete
/// read, everything stays as it is (existing connections keep their liveness, known
/// members keep their dial intents, nobody new is connected). After it, the old list no
/// longer keeps intents: dialers stop; established connections live on their liveness.
pub(super) fn store_outage(discovery: &Discovery, error: StoreError) {
    let rid = discovery.identity.rid();
    let grace = discovery.settings.grace;
    let mut state = discovery.state();
    if state.reachable {
        tracing::warn!(rid = %rid, error = %error, "Location Store unreachable; keeping the last member list");
    }
    state.reachable = false;
    let expired = state.complete_at.is_none_or(|at| at.elapsed() > grace);
    if expired && !state.grace_expired && state.complete_at.is_some() {
        tracing::warn!(rid = %rid, ?grace, "StoreFailureGrace ran out; no reconnects until the member list is read again");
        state.grace_expired = true;
        for (_, (_, cancel)) in state.dialers.drain() {
            cancel.cancel();
        }
    }
}
