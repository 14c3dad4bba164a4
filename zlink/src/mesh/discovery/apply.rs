//! Turning a complete member list into connection intents, and what a store outage does
//! to them.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Discovery, DiscoveryState};
use crate::link::ConnId;
use crate::mesh::links::DialTarget;
use crate::store::{DescriptorEntry, LeaseToken, MeshDescriptor, StoreError};

/// What one member list asks of the links: connections to close and dialers to start.
#[derive(Default)]
struct LinkChanges {
    to_close: Vec<(ConnId, &'static str)>,
    to_dial: Vec<(DialTarget, CancellationToken)>,
}

/// Applies a complete, consistent member list: only the changes it calls for.
pub(super) fn apply_members(discovery: &Arc<Discovery>, entries: Vec<DescriptorEntry>) {
    let me = discovery.identity.rid();
    // A ClientServer client dials every server, its own process's included; a RouteMesh
    // member leaves itself out and dials only larger RIDs.
    let client_server = discovery.policy.lists_itself();
    let (live, own_entry) = live_members(discovery, entries, client_server);
    let mut changes = LinkChanges::default();
    let members_changed;
    {
        let mut state = discovery.state();
        state.complete_at = Some(Instant::now());
        state.reachable = true;
        check_own_listing(discovery, &mut state, own_entry, client_server);
        if state.grace_expired {
            tracing::info!(rid = %me, members = live.len(), "member list read again after the store outage");
            state.grace_expired = false;
        }
        drop_departed(discovery, &mut state, &live, &mut changes);
        for (rid, descriptor) in &live {
            state.departed.remove(rid);
            if !discovery.is_manual(rid) {
                follow_member(discovery, &mut state, rid, descriptor, &mut changes);
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
    for (conn_id, reason) in changes.to_close {
        discovery.links.lost(conn_id, reason);
    }
    for (target, cancel) in changes.to_dial {
        tracing::info!(rid = %me, peer = ?target.expected_rid, endpoint = %target.endpoint, "dialing discovered member");
        discovery.links.dial(target, cancel);
    }
    apply_descriptor_weights(discovery, &live);
}

/// The live members of a list by RID (their descriptors decoded and matching their keys;
/// this node among them only for a ClientServer client), and this node's own entry.
fn live_members(
    discovery: &Discovery,
    entries: Vec<DescriptorEntry>,
    client_server: bool,
) -> (BTreeMap<String, MeshDescriptor>, Option<(LeaseToken, bool)>) {
    let me = discovery.identity.rid();
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
    (live, own_entry)
}

/// The store is the truth: if this node's descriptor is not there under its lease (the
/// store lost its data, say), it publishes again on the next round.
fn check_own_listing(
    discovery: &Discovery,
    state: &mut DiscoveryState,
    own_entry: Option<(LeaseToken, bool)>,
    client_server: bool,
) {
    let listed = state
        .published
        .as_ref()
        .is_some_and(|(token, _)| own_entry.as_ref() == Some(&(token.clone(), true)));
    if !client_server && state.published.is_some() && !listed {
        tracing::warn!(rid = %discovery.identity.rid(), "own descriptor missing from the store; publishing again");
        state.published = None;
        discovery.wake.notify_one();
    }
}

/// Members no longer listed (other than configured peers) are forgotten: their dialers
/// stop and their connections close.
fn drop_departed(
    discovery: &Discovery,
    state: &mut DiscoveryState,
    live: &BTreeMap<String, MeshDescriptor>,
    changes: &mut LinkChanges,
) {
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
        tracing::info!(rid = %discovery.identity.rid(), peer = %rid, "member's owner lease is gone; dropping it");
        state.departed.insert(rid.clone(), Instant::now());
        if let Some((_, cancel)) = state.dialers.remove(&rid) {
            cancel.cancel();
        }
        if let Some((conn, _)) = discovery.links.peers().identity(&rid) {
            changes.to_close.push((conn, "member lease gone"));
        }
    }
}

/// One listed member: a restarted one's old connection closes, and this node dials it
/// (again, when its endpoint, generation or key changed) if the policy says this side
/// dials.
fn follow_member(
    discovery: &Discovery,
    state: &mut DiscoveryState,
    rid: &String,
    descriptor: &MeshDescriptor,
    changes: &mut LinkChanges,
) {
    if let Some((conn, generation)) = discovery.links.peers().identity(rid) {
        if generation != descriptor.generation {
            tracing::info!(peer = %rid, old = generation, new = descriptor.generation, "member restarted; closing the old lifecycle's connection");
            changes.to_close.push((conn, "member restarted"));
        }
    }
    if !discovery.policy.dials(discovery.identity.rid(), rid) {
        return;
    }
    let server_key = descriptor.curve_public_key();
    if discovery.node_settings.security.keypair.is_some() && server_key.is_none() {
        tracing::warn!(peer = %rid, "member publishes no valid CURVE key; not dialing it");
        return;
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
        changes.to_dial.push((target, cancel));
    }
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
