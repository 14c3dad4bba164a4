//! Where a moving object's captured state travels: inside the restore when it is small,
//! through the Relocation Store when it is not, and removed from there once the move is
//! over on the source.

use std::sync::Arc;

use bytes::Bytes;

use super::record::MovedState;
use crate::object::server::ObjectServer;
use crate::store::{PayloadRef, PutOutcome};
use crate::{Error, ErrorKind, Result};

/// A captured state placed for the target: inline, or (above `inline_up_to` bytes) put
/// in the Relocation Store under `reference`.
pub(super) async fn place_state(
    server: &ObjectServer,
    reference: String,
    state: Option<Vec<u8>>,
    inline_up_to: usize,
) -> Result<Option<MovedState>> {
    let Some(state) = state else {
        return Ok(None);
    };
    let Some(store) = server
        .relocations
        .store()
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

/// How long a state put in the Relocation Store for a move is kept at most.
const STATE_RETENTION: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// Removes a state the move put in the Relocation Store when the move is over here.
pub(super) struct StoredState {
    store: Arc<dyn crate::store::RelocationStore>,
    reference: PayloadRef,
    tracker: tokio_util::task::TaskTracker,
}

impl StoredState {
    pub(super) fn of(server: &ObjectServer, state: &Option<MovedState>) -> Option<Self> {
        let Some(MovedState::Stored { reference, .. }) = state else {
            return None;
        };
        Some(StoredState {
            store: server.relocations.store().cloned()?,
            reference: PayloadRef::new(reference.clone()).ok()?,
            tracker: server.env.tracker().clone(),
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
