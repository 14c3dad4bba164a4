//! Placement readiness: which nodes can take a new object of a type now, waiting until
//! enough can, and why none can when a creation finds nobody.
//!
//! A node can take one when placement would pick it: it serves the type, it is not
//! draining, its owner lease admits work (and for Actors its Entry Spot is claimed), and
//! for another node also its descriptor has been read and its connection is ready. The
//! wait is woken by what changes those: peer events, a new member list, the lease and the
//! Entry Spot claim.

use std::collections::BTreeSet;

use serde::Serialize;
use tokio::sync::watch;
use tokio::time::Instant;

use super::placed::candidates;
use crate::address::{ObjectKind, StableType};
use crate::mesh::peer_table::next_event;
use crate::object::core::ObjectCore;
use crate::object::entry::ENTRY_STABLE_TYPE;
use crate::{Error, ErrorKind, Result};

/// The nodes that can take a new object of one type now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TypePlacement {
    /// The stable type.
    pub stable_type: String,
    /// The RIDs of the nodes placement would pick from, sorted (this node included when
    /// it is one of them).
    pub ready_nodes: Vec<String>,
}

/// The RIDs placement would pick from for a new `stable_type` of `kind`, sorted.
pub(crate) fn ready_nodes(server: &ObjectCore, kind: ObjectKind, stable_type: &str) -> Vec<String> {
    let mut nodes: Vec<String> = candidates(server, kind, stable_type)
        .into_iter()
        .filter(|c| c.weight > 0)
        .map(|c| c.rid)
        .collect();
    nodes.sort();
    nodes.dedup();
    nodes
}

/// Every type of `kind` this node or a known member serves, with its ready nodes.
pub(crate) fn placement(server: &ObjectCore, kind: ObjectKind) -> Vec<TypePlacement> {
    let mut types: BTreeSet<String> = server
        .registry
        .type_names(kind)
        .filter(|t| *t != ENTRY_STABLE_TYPE)
        .map(str::to_string)
        .collect();
    if let Some(discovery) = server.env.node().and_then(|n| n.discovery().cloned()) {
        for member in discovery.status().members {
            types.extend(match kind {
                ObjectKind::Spot => member.spot_types,
                ObjectKind::Actor => member.actor_types,
            });
        }
    }
    types
        .into_iter()
        .map(|stable_type| TypePlacement {
            ready_nodes: ready_nodes(server, kind, &stable_type),
            stable_type,
        })
        .collect()
}

/// Waits until at least `nodes` nodes can take a new `stable_type` of `kind`, or fails
/// `DeadlineExceeded` at `until` saying what is missing.
pub(crate) async fn wait_ready(
    server: &ObjectCore,
    kind: ObjectKind,
    stable_type: &str,
    nodes: usize,
    until: Instant,
) -> Result<()> {
    StableType::new(stable_type).map_err(|e| Error::InvalidArgument(e.to_string()))?;
    let node = server.env.node();
    // Subscribed before the first look, so no change between the look and the wait is
    // missed.
    let mut peers = node.as_ref().map(|n| n.peers().subscribe());
    let mut members = node
        .as_ref()
        .and_then(|n| n.discovery().map(|d| d.watch_members()));
    let mut lease = Some(server.env.lease().subscribe());
    let mut entry = server.entry.as_ref().map(|e| e.watch_claim());
    loop {
        if server.env.is_stopping() {
            return Err(Error::new(
                ErrorKind::ShuttingDown,
                "the node is shutting down",
            ));
        }
        let ready = ready_nodes(server, kind, stable_type);
        if ready.len() >= nodes {
            return Ok(());
        }
        tokio::select! {
            _ = tokio::time::sleep_until(until) => {
                return Err(Error::new(
                    ErrorKind::DeadlineExceeded,
                    format!(
                        "{kind:?} type {stable_type:?} did not reach {nodes} ready node(s) in time: {}",
                        explain(server, kind, stable_type, &ready)
                    ),
                ));
            }
            _ = async {
                match peers.as_mut() {
                    Some(events) => next_event(events).await,
                    None => std::future::pending().await,
                }
            } => {}
            _ = changed(&mut members) => {}
            _ = changed(&mut lease) => {}
            _ = changed(&mut entry) => {}
            _ = server.env.cancel().cancelled() => {}
        }
    }
}

/// Resolves when the watched value changes; never when there is none or its sender is
/// gone (the receiver is dropped then, so it is not polled again).
async fn changed<T>(receiver: &mut Option<watch::Receiver<T>>) {
    let Some(rx) = receiver.as_mut() else {
        return std::future::pending().await;
    };
    if rx.changed().await.is_err() {
        *receiver = None;
        std::future::pending::<()>().await;
    }
}

/// Why placement has only `ready` for `stable_type` of `kind`: what this node lacks, which
/// members serve it without a ready connection, and whether the store can be read.
pub(crate) fn explain(
    server: &ObjectCore,
    kind: ObjectKind,
    stable_type: &str,
    ready: &[String],
) -> String {
    let mut reasons = Vec::new();
    if ready.is_empty() {
        reasons.push("no node is ready".to_string());
    } else {
        reasons.push(format!("ready: {}", ready.join(", ")));
    }
    if server.registry.serves(kind, stable_type) {
        let me = &server.env.route().rid;
        if server.hosting.is_draining() {
            reasons.push(format!("this node ({me}) is draining"));
        } else if server.env.lease().admitting_token().is_none() {
            reasons.push(format!(
                "this node ({me}) has no owner lease admitting work (is the Location Store reachable?)"
            ));
        } else if kind == ObjectKind::Actor
            && server.entry.as_ref().is_none_or(|e| e.ready().is_err())
        {
            reasons.push(format!("this node's ({me}) Entry Spot is not claimed yet"));
        }
    }
    let Some(node) = server.env.node() else {
        return reasons.join("; ");
    };
    let Some(discovery) = node.discovery() else {
        reasons.push("this node has no discovery to learn other members from".to_string());
        return reasons.join("; ");
    };
    let status = discovery.status();
    if !status.store_reachable {
        reasons.push("the Location Store is unreachable, so no member list is read".to_string());
    }
    let unconnected: Vec<&str> = status
        .members
        .iter()
        .filter(|m| {
            match kind {
                ObjectKind::Spot => &m.spot_types,
                ObjectKind::Actor => &m.actor_types,
            }
            .iter()
            .any(|t| t == stable_type)
                && node.peers().link(&m.rid).is_none()
        })
        .map(|m| m.rid.as_str())
        .collect();
    if !unconnected.is_empty() {
        reasons.push(format!(
            "serving it but not connected yet: {}",
            unconnected.join(", ")
        ));
        reasons.extend(node.links().dial_failures());
    }
    let serving = status.members.iter().any(|m| {
        match kind {
            ObjectKind::Spot => &m.spot_types,
            ObjectKind::Actor => &m.actor_types,
        }
        .iter()
        .any(|t| t == stable_type)
    });
    if !serving && !server.registry.serves(kind, stable_type) {
        reasons.push(format!(
            "no member in the last read ({} member(s)) serves it",
            status.members.len()
        ));
    }
    reasons.join("; ")
}
