//! The staging instance of a creation (or an arrival): the factory, then a Spot's
//! `on_create`.

use bytes::Bytes;
use futures::FutureExt;
use tokio::time::Instant;

use crate::address::{ActorId, ObjectKey, SpotId};
use crate::handle::Handle;
use crate::object::adapter::Adapted;
use crate::object::context::{ActorContext, SpotContext};
use crate::object::instance::Instance;
use crate::object::lifecycle::CreateDecision;
use crate::object::object_type::{Factory, TypeDef};
use crate::wire::Metadata;
use crate::{Error, ErrorKind, Result};

/// Makes the staging instance: the factory, then (for a Spot) `on_create` with the
/// creator's request. Nothing is addressable yet; a panic is this creation's
/// `InternalFailure`.
pub(crate) async fn stage(
    object_type: &TypeDef,
    key: &ObjectKey,
    handle: &Handle,
    generation: u64,
    membership: Option<SpotId>,
    deadline: Instant,
    request: Option<&Bytes>,
) -> Result<(Box<dyn Instance>, CreateDecision)> {
    let bad_id = |e: crate::address::IdError| Error::InvalidArgument(e.to_string());
    let made = std::panic::AssertUnwindSafe(async {
        Ok::<_, Error>(match &object_type.factory {
            Factory::Spot(factory) => {
                let ctx = SpotContext {
                    handle: handle.clone(),
                    id: SpotId::new(&key.id).map_err(bad_id)?,
                    generation,
                    packet: None,
                    deadline: Some(deadline),
                    metadata: Metadata::new(),
                    operation: 0,
                    timers: None,
                    membership: None,
                    joins: None,
                };
                let mut spot = factory(&ctx);
                // A Spot that arrives by a move was created where it began.
                let decision = match request {
                    Some(request) => match spot.on_create_typed(&ctx, request).await {
                        Some(decision) => decision,
                        None => spot.on_create(&ctx, request.clone()).await,
                    },
                    None => CreateDecision::Accept(Bytes::new()),
                };
                let instance = Adapted::new(ctx.id, spot);
                (Box::new(instance) as Box<dyn Instance>, decision)
            }
            Factory::Actor(factory) => {
                let ctx = ActorContext {
                    handle: handle.clone(),
                    id: ActorId::new(&key.id).map_err(bad_id)?,
                    generation,
                    packet: None,
                    deadline: Some(deadline),
                    metadata: Metadata::new(),
                    operation: 0,
                    timers: None,
                    membership,
                    joins: None,
                };
                let actor = factory(&ctx);
                let instance = Adapted::new(ctx.id, actor);
                (
                    Box::new(instance) as Box<dyn Instance>,
                    CreateDecision::Accept(Bytes::new()),
                )
            }
            Factory::Entry => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    "an Entry Spot is made by its node, never by a creation",
                ))
            }
        })
    })
    .catch_unwind()
    .await;
    made.map_err(|_| {
        Error::new(
            ErrorKind::InternalFailure,
            format!("the factory of {key} panicked"),
        )
    })?
}
