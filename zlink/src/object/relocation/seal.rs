//! The seal of a move at a turn boundary, as an object's turn loop runs it: from the seal
//! on, what arrives waits in the move's hold; the queue, the timers and (`preserve`) the
//! state go to the move; then the loop waits for the move's outcome.

use std::sync::{Arc, Weak};

use tokio::sync::oneshot;

use crate::object::authority_store::Versioned;
use crate::object::instance::Instance;
use crate::object::lifecycle::Relocation;
use crate::object::live_object::LiveObject;
use crate::object::object_job::Resume;
use crate::object::object_job::{ObjectJob, SealOrder};
use crate::object::relocation::{Departure, Departures};
use crate::object::timer::TimerRecord;
use crate::object::timer::Timers;
use crate::Result;

/// What an object's seal handed to its move.
pub(crate) struct Captured {
    /// The authority it was sealed under.
    pub(crate) authority: Versioned,
    /// Its queued application work, oldest first, with each job's bytes.
    pub(crate) backlog: Vec<(ObjectJob, usize)>,
    pub(crate) timers: Vec<TimerRecord>,
    /// The application's state (`preserve`), or `None`.
    pub(crate) state: Option<Result<Vec<u8>>>,
    /// Where what arrives after the seal waits.
    pub(crate) departure: Arc<Departure>,
}

/// The order a move sends its object: seal at the next turn boundary and hand what the
/// seal took over `captured`.
pub(crate) struct MoveSeal {
    live: Weak<LiveObject>,
    departures: Arc<Departures>,
    captured: oneshot::Sender<Captured>,
}

impl MoveSeal {
    /// The job that seals `live` for a move, and where its seal comes.
    pub(crate) fn job(
        live: &Arc<LiveObject>,
        departures: &Arc<Departures>,
        resume: oneshot::Receiver<Resume>,
    ) -> (ObjectJob, oneshot::Receiver<Captured>) {
        let (captured, sealed) = oneshot::channel();
        let order = MoveSeal {
            live: Arc::downgrade(live),
            departures: departures.clone(),
            captured,
        };
        let job = ObjectJob::Relocate {
            order: Box::new(order),
            resume,
        };
        (job, sealed)
    }
}

impl SealOrder for MoveSeal {
    fn seal(
        self: Box<Self>,
        timers: &Timers,
        instance: &mut Box<dyn Instance>,
    ) -> Option<Vec<TimerRecord>> {
        let live = self.live.upgrade()?;
        let sealed = seal(&live, &self.departures, timers, instance);
        let records = sealed.timers.clone();
        if let Err(sealed) = self.captured.send(sealed) {
            // The move gave up before the seal: nothing changed.
            unseal(&live, &self.departures, sealed);
            let _ = timers.resume(&records);
            return None;
        }
        Some(records)
    }
}

/// Seals `live` for a move: what arrives from now on waits in its departure's hold; its
/// queued application work, timers and (`preserve`) state are taken out.
pub(crate) fn seal(
    live: &LiveObject,
    departures: &Departures,
    timers: &Timers,
    instance: &mut Box<dyn Instance>,
) -> Captured {
    let authority = live.authority();
    let departure = departures.hold(
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
