//! Starting a Spot or Actor on its owner: the running object is made reachable and its
//! turn loop spawned, as its [`Go`] says.

use std::sync::Arc;

use tokio::sync::oneshot;

use super::authority_store::Versioned;
use super::instance::Instance;
use super::live_object::LiveObject;
use super::object_job::{Arrived, ObjectJob};
use super::object_type::TypeDef;
use super::stop_list::Halt;
use super::turn_host::ObjectHost;
use super::turn_loop::TurnLoop;
use super::turn_start::{Begin, InitializeFirst};
use crate::address::ObjectKey;
use crate::Error;

/// When a new object's turn loop may run (see [`start`]).
// One per object start, moved into its loop once: boxing the large variant would only add
// an allocation.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Go {
    /// Once the owner change (or the Entry Spot's claim) commits: `true`, or `false` (or
    /// dropped) when it did not, and then nothing ever runs.
    AfterCommit(oneshot::Receiver<bool>),
    /// A created object (reference §2.5–2.6): `on_initialize` runs before the Ready commit,
    /// and reports on `initialized` (an error when the activating message did not fit
    /// its queue); then the loop waits for `commit`.
    InitializeFirst {
        /// An Instance Spot's activating message, queued first.
        first: Option<(ObjectJob, usize)>,
        initialized: oneshot::Sender<Result<(), Error>>,
        commit: oneshot::Receiver<bool>,
    },
}

impl From<oneshot::Receiver<bool>> for Go {
    fn from(commit: oneshot::Receiver<bool>) -> Self {
        Go::AfterCommit(commit)
    }
}

/// Makes the object reachable and starts its turn loop, as `go` says: an object that
/// arrived by a move (or the Entry Spot) waits for its commit, then runs; a new one
/// runs `on_initialize` first, says so, and then waits for its commit (see [`Go`]).
/// Registering before the commit means the owner admits messages from the moment the
/// store says Ready; nothing queued runs before the commit is known.
pub(crate) fn start(
    key: ObjectKey,
    object_type: Arc<TypeDef>,
    authority: Versioned,
    instance: Box<dyn Instance>,
    host: ObjectHost,
    go: Go,
    arrived_with: Option<Arrived>,
) -> Arc<LiveObject> {
    let parts = (host.handle.clone(), host.cancel.clone(), host.lost.clone());
    let live = LiveObject::new(key, object_type, authority, parts, arrived_with);
    let halting: Arc<dyn Halt> = live.clone();
    let listed = host.running.add(Arc::downgrade(&halting));
    if listed.is_none() {
        live.halt();
    }
    let begin = match go {
        Go::AfterCommit(commit) => Begin::AfterCommit(commit),
        Go::InitializeFirst {
            first,
            initialized,
            commit,
        } => match live.queue_first(first) {
            Ok(()) => Begin::InitializeFirst(InitializeFirst {
                initialized,
                commit,
            }),
            Err(e) => {
                let _ = initialized.send(Err(e));
                return live;
            }
        },
    };
    // The loop leaves the node's stop list when it ends, however it ends.
    let tracker = host.tracker.clone();
    let turn_loop = TurnLoop::new(live.clone(), instance, host, listed);
    tracker.spawn(turn_loop.run(begin));
    live
}
