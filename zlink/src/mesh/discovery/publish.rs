//! Publishing this node's descriptor under its owner lease.

use super::Discovery;
use crate::store::resolve::publish_resolving;
use crate::store::PublishOutcome;

/// Publishes the descriptor when the lease admits it and it changed (new lease or new
/// revision) since the last publish. Past the admission deadline nothing is published.
pub(super) async fn publish_descriptor(discovery: &Discovery) {
    if !discovery.policy.publishes() {
        return;
    }
    let Some(token) = discovery.lease.admitting_token() else {
        return;
    };
    let rid = discovery.identity.rid();
    let descriptor = discovery.descriptor();
    let revision = descriptor.revision;
    if discovery.state().published == Some((token.clone(), revision)) {
        return;
    }
    let body = match descriptor.encode() {
        Ok(body) => body,
        Err(e) => {
            tracing::error!(rid = %rid, error = %e, "descriptor cannot be encoded");
            return;
        }
    };
    let store = discovery.settings.store.as_ref();
    let key = discovery.descriptor_key();
    let bound = discovery.settings.lease.renew_timeout;
    let outcome = tokio::time::timeout(bound, publish_resolving(store, &token, &key, &body)).await;
    let mut state = discovery.state();
    match outcome {
        Ok(Ok(PublishOutcome::Published)) => {
            tracing::info!(rid = %rid, revision, lease_generation = token.generation, "descriptor published");
            state.published = Some((token, revision));
            state.rid_taken_by = None;
        }
        Ok(Ok(PublishOutcome::Stale)) => {
            tracing::warn!(rid = %rid, "descriptor not published: the owner lease is no longer live");
        }
        Ok(Ok(PublishOutcome::Taken(owner))) => {
            tracing::error!(rid = %rid, other_owner = %owner, "descriptor not published: another live node holds this RID");
            state.rid_taken_by = Some(owner);
        }
        Ok(Err(e)) => {
            tracing::warn!(rid = %rid, error = %e, "descriptor publish failed");
            state.reachable = false;
        }
        Err(_) => {
            tracing::warn!(rid = %rid, "descriptor publish timed out");
            state.reachable = false;
        }
    }
}
