//! The child process of `scale` that measures what one cached route costs: a node holding
//! `objects` Actors, and a second node in the same process (same embedded store) that
//! sends one message to each. The owner sends to each first, so its objects have had
//! their first message before the second node's pass: the heap the pass adds is the
//! sender's routes.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zlink::Runtime;

use crate::heap::in_use;
use crate::scale_fill::{object_id, Bump, IdleActor};
use crate::BoxError;

async fn node(
    rid: &str,
    store: &Arc<dyn zlink::store::LocationStore>,
    routes: usize,
) -> Result<Runtime, BoxError> {
    Ok(Runtime::builder()
        .mesh_name("bench-scale-routes")
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .discovery_interval(Duration::from_millis(100))
        .route_cache_capacity(routes)
        .actor_type(IdleActor::actor_type(|_| IdleActor::default())?)
        .build()?
        .start()
        .await?)
}

/// One message to each of `objects` Actors from `from`, 64 at a time; the sends per second.
async fn send_to_each(from: &Runtime, objects: usize) -> Result<f64, BoxError> {
    use futures::StreamExt;
    let started = Instant::now();
    let handle = from.handle().clone();
    let mut sends = futures::stream::iter(0..objects)
        .map(|i| {
            let handle = handle.clone();
            async move { handle.actors().send(&object_id(i), &Bump).await }
        })
        .buffer_unordered(64);
    while let Some(sent) = sends.next().await {
        sent?;
    }
    Ok(objects as f64 / started.elapsed().as_secs_f64())
}

/// The heap bytes one cached route to an Actor on another node holds, at `objects` routes.
pub async fn route_bytes(objects: usize) -> Result<serde_json::Value, BoxError> {
    let store = <dyn zlink::store::LocationStore>::in_memory();
    let owner = node("scale-owner", &store, objects).await?;
    let sender = node("scale-sender", &store, objects).await?;
    sender
        .nodes()
        .wait_for(Duration::from_secs(10), |peers| {
            peers.iter().any(|p| p.rid == "scale-owner")
        })
        .await?;
    let handle = owner.handle().clone();
    crate::scale_fill::for_each_index(objects, move |i| {
        let handle = handle.clone();
        async move {
            handle
                .actors()
                .create(&object_id(i), IdleActor::STABLE_TYPE)
                .await?;
            Ok(())
        }
    })
    .await?;
    let owner_pass = send_to_each(&owner, objects).await?;
    let before = in_use();
    let first_pass = send_to_each(&sender, objects).await?;
    let grown = in_use() - before;
    let warm_pass = send_to_each(&sender, objects).await?;
    Ok(serde_json::json!({
        "kind": "route_cache",
        "objects": objects,
        "route_heap_bytes": (grown as f64 / objects as f64 * 10.0).round() / 10.0,
        "owner_first_sends_per_s": owner_pass.round(),
        "remote_cold_sends_per_s": first_pass.round(),
        "remote_warm_sends_per_s": warm_pass.round(),
    }))
}
