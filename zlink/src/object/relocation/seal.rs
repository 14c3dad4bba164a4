//! The seal of a move at a turn boundary, as an object's turn loop runs it: from the seal
//! on, what arrives waits in the move's hold; the queue, the timers and (`preserve`) the
//! state go to the move; then the loop waits for the move's outcome.

use std::sync::{Arc, Weak};

use tokio::sync::{oneshot, OwnedMutexGuard};
use tokio_util::sync::CancellationToken;

use crate::object::instance::Instance;
use crate::object::lifecycle::Relocation;
use crate::object::live_object::LiveObject;
use crate::object::object_job::{Captured, Resume};
use crate::object::relocation::Departures;
use crate::object::server::ObjectServer;
use crate::object::timer::Timers;

/// How a seal ended for the turn loop.
pub(crate) enum SealOutcome {
    /// The move gave up or was cancelled: the object runs on here, in order.
    Resumed,
    /// The object lives on elsewhere: the loop ends.
    Moved,
    /// The object (or its node) stopped while sealed.
    Stopped,
}

/// Seals `live` for a move: what arrives from now on waits in its departure's hold; its
/// queued application work, timers and (`preserve`) state are taken out.
pub(crate) fn seal(
    live: &LiveObject,
    layer: &ObjectServer,
    timers: &Timers,
    instance: &mut Box<dyn Instance>,
) -> Captured {
    let authority = live.authority();
    let departure = layer.relocations.departures().hold(
        &live.key,
        authority.record.fence.clone(),
        authority.record.route.clone(),
    );
    live.mailbox().seal();
    let backlog = live.mailbox().take_application_backlog();
    let timers = timers.capture();
    let state = match live.object_type.relocation {
        Relocation::Preserve => instance.capture_state(),
        _ => None,
    };
    Captured {
        authority,
        backlog,
        timers,
        state,
        departure,
    }
}

/// Undoes a seal whose move ends before relay-ready (or went away before taking it): the
/// captured queue goes back ahead of what the hold kept, the hold is gone, and the object
/// admits again.
pub(crate) fn unseal(live: &LiveObject, departures: &Departures, sealed: Captured) {
    sealed.departure.cancel(live, sealed.backlog);
    departures.remove(&sealed.departure);
}

/// The turn loop's step for a move's seal job: seals, hands the capture to the move, lets
/// the other objects behind the gate go on (`held` is released), and waits for the
/// outcome. The timers resume when the object stays.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn at_turn_boundary(
    live: &Arc<LiveObject>,
    server: &Weak<ObjectServer>,
    timers: &Timers,
    instance: &mut Box<dyn Instance>,
    held: Option<OwnedMutexGuard<()>>,
    captured: oneshot::Sender<Captured>,
    resume: oneshot::Receiver<Resume>,
    stop: &CancellationToken,
) -> SealOutcome {
    let Some(layer) = server.upgrade() else {
        return SealOutcome::Resumed;
    };
    let sealed = seal(live, &layer, timers, instance);
    let records = sealed.timers.clone();
    if let Err(sealed) = captured.send(sealed) {
        // The move gave up before the seal: nothing changed.
        unseal(live, layer.relocations.departures(), sealed);
        let _ = timers.resume(&records);
        return SealOutcome::Resumed;
    }
    drop(layer);
    // A sealed object runs nothing: the others behind its gate (a SpotWide Spot and its
    // members) go on, and may be sealed for the same move.
    drop(held);
    let resumed = tokio::select! {
        biased;
        _ = stop.cancelled() => None,
        resumed = resume => Some(resumed),
    };
    match resumed {
        None => SealOutcome::Stopped,
        Some(Ok(Resume::Cancelled)) => {
            if let Err(e) = timers.resume(&records) {
                tracing::warn!(object = %live.key, error = %e, "timers did not resume after a cancelled move");
            }
            SealOutcome::Resumed
        }
        // A move that vanished without an outcome handed nothing over.
        Some(Ok(Resume::Moved)) | Some(Err(_)) => SealOutcome::Moved,
    }
}
