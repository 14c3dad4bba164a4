//! Building an arriving object's hidden instance: the factory's, with the captured state
//! restored.

use bytes::Bytes;
use futures::FutureExt;
use tokio::time::Instant;

use crate::address::{ObjectKey, SpotId};
use crate::object::instance::Instance;
use crate::object::object_type::TypeDef;
use crate::object::relocation::record::{MovedObject, MovedState};
use crate::object::server::ObjectServer;
use crate::store::{PayloadRead, PayloadRef};
use crate::{Error, ErrorKind, Result};

/// The captured state's bytes: inline, or read from the Relocation Store (a state that
/// is not there, or not whole, is lost data: nothing is built).
async fn fetch_state(server: &ObjectServer, state: &MovedState) -> Result<Bytes> {
    let (reference, len) = match state {
        MovedState::Inline(bytes) => return Ok(Bytes::copy_from_slice(bytes)),
        MovedState::Stored { reference, len } => (reference, *len),
    };
    let store = server
        .relocations
        .required_store("read the moved state from")?;
    let reference = PayloadRef::new(reference.clone()).map_err(Error::from)?;
    match store.read(&reference).await {
        Ok(PayloadRead::Found { bytes, .. }) if bytes.len() as u64 == len => Ok(bytes),
        Ok(PayloadRead::Found { bytes, .. }) => Err(Error::new(
            ErrorKind::DataLost,
            format!("the moved state has {} bytes, not {len}", bytes.len()),
        )),
        Ok(PayloadRead::Missing) => Err(Error::new(
            ErrorKind::DataLost,
            "the moved state is not in the Relocation Store",
        )),
        Err(e) => Err(Error::new(
            ErrorKind::Unavailable,
            format!("the Relocation Store did not give the moved state: {e}"),
        )),
    }
}

/// What an arriving instance is built from.
pub(crate) struct Staged<'a> {
    pub(crate) object: &'a MovedObject,
    pub(crate) membership: Option<SpotId>,
    pub(crate) deadline: Instant,
}

/// The hidden instance: the factory's, with the captured state restored (`preserve`).
pub(crate) async fn build(
    server: &ObjectServer,
    object_type: &TypeDef,
    key: &ObjectKey,
    handle: &crate::handler::Handle,
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
        let state = fetch_state(server, state).await?;
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
