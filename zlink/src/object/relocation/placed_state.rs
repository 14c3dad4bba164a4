//! Where a moving object's captured state travels: inside the restore when it is small,
//! through the Relocation Store when it is not (put by the source, read by the target),
//! and removed from there once the move is over on the source.

use std::sync::Arc;

use bytes::Bytes;

use super::record::MovedState;
use crate::object::hosting::Hosting;
use crate::store::{PayloadRead, PayloadRef, PutOutcome};
use crate::{Error, ErrorKind, Result};

/// A captured state placed for the target: inline, or (above `inline_up_to` bytes) put
/// in the Relocation Store under `reference`.
pub(super) async fn place_state(
    hosting: &Hosting,
    reference: String,
    state: Option<Vec<u8>>,
    inline_up_to: usize,
) -> Result<Option<MovedState>> {
    let Some(state) = state else {
        return Ok(None);
    };
    let Some(store) = hosting
        .relocation_store()
        .filter(|_| state.len() > inline_up_to)
    else {
        return Ok(Some(MovedState::Inline(state)));
    };
    let payload_ref = PayloadRef::new(reference.clone()).map_err(Error::from)?;
    let len = state.len() as u64;
    match store
        .put(&payload_ref, &Bytes::from(state), STATE_RETENTION)
        .await
        .map_err(|e| {
            Error::new(
                ErrorKind::Unavailable,
                format!("the Relocation Store did not take the state: {e}"),
            )
        })? {
        PutOutcome::Stored { .. } | PutOutcome::AlreadyStored { .. } => {
            Ok(Some(MovedState::Stored { reference, len }))
        }
        PutOutcome::Conflict => Err(Error::new(
            ErrorKind::InternalFailure,
            "another state is stored under this move's reference",
        )),
    }
}

/// The captured state's bytes: inline, or read from the Relocation Store (a state that
/// is not there, or not whole, is lost data: nothing is built).
pub(super) async fn fetch_state(hosting: &Hosting, state: &MovedState) -> Result<Bytes> {
    let (reference, len) = match state {
        MovedState::Inline(bytes) => return Ok(Bytes::copy_from_slice(bytes)),
        MovedState::Stored { reference, len } => (reference, *len),
    };
    let store = hosting.required_relocation_store("read the moved state from")?;
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

/// How long a state put in the Relocation Store for a move is kept at most.
const STATE_RETENTION: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// Removes a state the move put in the Relocation Store when the move is over here.
pub(super) struct StoredState {
    store: Arc<dyn crate::store::RelocationStore>,
    reference: PayloadRef,
    tracker: tokio_util::task::TaskTracker,
}

impl StoredState {
    pub(super) fn of(
        hosting: &Hosting,
        tracker: &tokio_util::task::TaskTracker,
        state: &Option<MovedState>,
    ) -> Option<Self> {
        let Some(MovedState::Stored { reference, .. }) = state else {
            return None;
        };
        Some(StoredState {
            store: hosting.relocation_store().cloned()?,
            reference: PayloadRef::new(reference.clone()).ok()?,
            tracker: tracker.clone(),
        })
    }
}

impl Drop for StoredState {
    fn drop(&mut self) {
        let (store, reference) = (self.store.clone(), self.reference.clone());
        self.tracker.spawn(async move {
            if let Err(e) = store.delete(&reference).await {
                tracing::debug!(reference = %reference, error = %e, "a moved state stays until its retention ends");
            }
        });
    }
}
