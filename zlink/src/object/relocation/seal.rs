//! The seal of a move at a turn boundary, as an object's turn loop runs it: from the seal
//! on, what arrives waits in the move's hold; the queue, the timers and (`preserve`) the
//! state go to the move; then the loop waits for the move's outcome.

use crate::object::instance::Instance;
use crate::object::lifecycle::Relocation;
use crate::object::live_object::LiveObject;
use crate::object::object_job::Captured;
use crate::object::relocation::Departures;
use crate::object::server::ObjectServer;
use crate::object::timer::Timers;

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
