//! Switching one ID's route to a later owner without reordering this node's messages.
//!
//! When a store read names a later owner than the route this node last sent on (see the
//! lane in [`route_cache`](crate::object::route_cache)), a **follow barrier** goes down the old
//! route first: an object request with no handler, sent the way the earlier messages
//! went (on the same connection, or into this node's own departure), so it is admitted
//! behind them. A node where the object is moving holds or relays it in order, like any
//! message; the node where the object runs (or where nothing of it is left) answers it at
//! once, because everything ahead of it is in the object's queue by then. Only then do
//! calls use the later route.
//!
//! This costs one round trip per sender and move, and nothing while nothing moves. The
//! barrier is driven on the object layer's tracker, so a caller that gives up does not
//! leave the others waiting.

use std::sync::Arc;

use tokio::time::Instant;

use std::borrow::Cow;

use crate::call::PacketKind;
use crate::handle::ObjectMessage;
use crate::object::core::ObjectCore;
use crate::object::owner_link::{node_stopping, route_fence};
use crate::object::route_cache::FOLLOW_BARRIER;
use crate::object::route_cache::{ReadyRoute, Switch, SwitchStart};
use crate::wire::{Metadata, Payload};
use crate::Result;

/// Starts the barrier of `start` and returns what calls wait on.
pub(super) fn begin(server: &Arc<ObjectCore>, start: SwitchStart) -> Switch {
    let waiter = start.waiter();
    let layer = Arc::downgrade(server);
    server.env.tracker().spawn(async move {
        let Some(server) = layer.upgrade() else {
            return;
        };
        let outcome = tokio::select! {
            outcome = barrier(&server, &start.from) => outcome,
            _ = server.env.cancel().cancelled() => Err(node_stopping()),
        };
        tracing::debug!(
            object = %start.to.key,
            from = %start.from.owner.rid,
            to = %start.to.owner.rid,
            answered = outcome.is_ok(),
            "route switched after a follow barrier"
        );
        server.resolver.switched(start);
    });
    waiter
}

/// Sends the barrier down `from`. `Ok` once everything this node sent on it before is
/// queued on the object (or nothing of it can still be on its way).
async fn barrier(server: &Arc<ObjectCore>, from: &ReadyRoute) -> Result<Payload> {
    let node = server.env.owner_link().node()?;
    let settings = node.settings();
    let call = ObjectMessage {
        key: Cow::Borrowed(&from.key),
        packet: FOLLOW_BARRIER,
        payload: Payload::default(),
        metadata: Metadata::new(),
        kind: PacketKind::Request,
        timeout: settings.request_timeout,
        send_timeout: settings.send_timeout,
        intent: None,
    };
    let fence = route_fence(&from.fence);
    let now = Instant::now();
    let deadline = now + settings.request_timeout;
    if from.owner.rid == server.env.route().rid {
        if from.owner.node_generation != server.env.route().node_generation {
            return Ok(Payload::default());
        }
        return super::call_local(server, call, &from.local, fence, now, deadline).await;
    }
    // Only the connection the earlier messages left on keeps them in order. With none
    // now (or a restarted peer), nothing sent from here on that route is still on its way.
    let peers = node.peers();
    match peers.identity(&from.owner.rid) {
        Some((_, generation)) if generation == from.owner.node_generation => {}
        _ => return Ok(Payload::default()),
    }
    if peers.link(&from.owner.rid).is_none() {
        return Ok(Payload::default());
    }
    super::call_remote(&server.env, from, call, fence, deadline)
        .await
        .map(Payload::encoded)
}
