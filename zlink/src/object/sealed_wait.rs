//! A turn loop sealed for a move: the seal is taken at a turn boundary, then the loop waits
//! for the move's outcome with its gate given up.

use tokio::sync::{oneshot, OwnedMutexGuard};
use tokio_util::sync::CancellationToken;

use super::instance::Instance;
use super::object_job::{Resume, SealOrder};
use super::timer::Timers;
use crate::address::ObjectKey;

/// How a move's seal ended for the loop.
pub(super) enum SealOutcome {
    /// The move gave up or was cancelled: the object runs on here, in order.
    Resumed,
    /// The object lives on elsewhere: the loop ends.
    Moved,
    /// The object (or its node) stopped while sealed.
    Stopped,
}

/// What a seal takes from the loop: its timers and its instance, for the move to capture.
pub(super) struct Sealed<'a> {
    pub(super) key: &'a ObjectKey,
    pub(super) timers: &'a Timers,
    pub(super) instance: &'a mut Box<dyn Instance>,
    /// The object's stop.
    pub(super) cancel: &'a CancellationToken,
}

impl Sealed<'_> {
    /// Seals the object by the move's order (which hands what the seal took to the move),
    /// and waits for the move's outcome. The gate is released before the wait: a
    /// sealed object runs nothing, while the others behind its gate (a SpotWide Spot and
    /// its members) go on, and may be sealed for the same move.
    pub(super) async fn wait(
        self,
        held: Option<OwnedMutexGuard<()>>,
        order: Box<dyn SealOrder>,
        resume: oneshot::Receiver<Resume>,
    ) -> SealOutcome {
        let Some(records) = order.seal(self.timers, self.instance) else {
            return SealOutcome::Resumed;
        };
        drop(held);
        let resumed = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => None,
            resumed = resume => Some(resumed),
        };
        match resumed {
            None => SealOutcome::Stopped,
            Some(Ok(Resume::Cancelled)) => {
                if let Err(e) = self.timers.resume(&records) {
                    tracing::warn!(object = %self.key, error = %e, "timers did not resume after a cancelled move");
                }
                SealOutcome::Resumed
            }
            // A move that vanished without an outcome handed nothing over.
            Some(Ok(Resume::Moved)) | Some(Err(_)) => SealOutcome::Moved,
        }
    }
}
