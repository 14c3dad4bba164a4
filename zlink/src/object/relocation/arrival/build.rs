//! Building an arriving object's hidden instance: the factory's, with the captured state
//! restored.

use futures::FutureExt;
use tokio::time::Instant;

use crate::address::{ObjectKey, SpotId};
use crate::object::hosting::Hosting;
use crate::object::instance::Instance;
use crate::object::object_type::TypeDef;
use crate::object::relocation::placed_state::fetch_state;
use crate::object::relocation::record::MovedObject;
use crate::{Error, ErrorKind, Result};

/// What an arriving instance is built from.
pub(crate) struct Staged<'a> {
    pub(crate) object: &'a MovedObject,
    pub(crate) membership: Option<SpotId>,
    pub(crate) deadline: Instant,
}

/// The hidden instance: the factory's, with the captured state restored (`preserve`).
pub(crate) async fn build(
    hosting: &Hosting,
    object_type: &TypeDef,
    key: &ObjectKey,
    handle: &crate::handle::Handle,
    staged: Staged<'_>,
) -> Result<Box<dyn Instance>> {
    let (mut instance, _) = crate::object::creation::stage(
        object_type,
        key,
        handle,
        staged.object.source_fence.object_generation,
        staged.membership,
        staged.deadline,
        None,
    )
    .await?;
    if let Some(state) = &staged.object.state {
        let state = fetch_state(hosting, state).await?;
        let restored = std::panic::AssertUnwindSafe(async { instance.restore_state(&state) })
            .catch_unwind()
            .await
            .map_err(|_| {
                Error::new(
                    ErrorKind::InternalFailure,
                    "the state adapter's restore panicked",
                )
            })?;
        restored.map_err(|e| {
            Error::new(
                ErrorKind::InternalFailure,
                format!("restoring {key}'s state failed: {e}"),
            )
        })?;
    }
    Ok(instance)
}
