//! Starting a Spot or Actor on its owner: the running object is made reachable and its
//! turn loop spawned, as its [`Go`] says.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::oneshot;

use super::authority_store::Versioned;
use super::instance::Instance;
use super::live_object::LiveObject;
use super::object_job::{Arrived, ObjectJob};
use super::object_type::TypeDef;
use super::stop_list::Halt;
use super::turn_host::ObjectHost;
use super::turn_loop::{InitializeFirst, TurnLoop};
use crate::address::ObjectKey;
use crate::{Error, ErrorKind};

/// Closes an object's mailbox when its turn loop ends for any reason (a panic included), so
/// no queued job is left without its answer.
struct CloseOnExit {
    object: Arc<LiveObject>,
    /// Set once the creation (or the arrival) committed.
    committed: Arc<AtomicBool>,
}

impl Drop for CloseOnExit {
    fn drop(&mut self) {
        if self.committed.load(Ordering::Acquire) {
            self.object.refuse_queued(
                ErrorKind::ShuttingDown,
                "the object stopped before the message ran",
            );
        } else {
            self.object.refuse_queued(
                ErrorKind::Unavailable,
                "the object's creation did not commit",
            );
        }
    }
}

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
    let first = match go {
        Go::AfterCommit(commit) => Err(commit),
        Go::InitializeFirst {
            first,
            initialized,
            commit,
        } => match live.queue_first(first) {
            Ok(()) => Ok((initialized, commit)),
            Err(e) => {
                let _ = initialized.send(Err(e));
                return live;
            }
        },
    };
    let object = live.clone();
    let tracker = host.tracker.clone();
    tracker.spawn(async move {
        // The loop leaves the node's stop list when it ends, however it ends.
        let _listed = listed;
        // Whatever way the loop ends, the mailbox closes and every queued job gets its
        // one answer.
        let committed = Arc::new(AtomicBool::new(false));
        let _closer = CloseOnExit {
            object: object.clone(),
            committed: committed.clone(),
        };
        let commit = match first {
            Err(commit) => {
                let cancel = host.cancel.clone();
                let go = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => false,
                    go = commit => go.unwrap_or(false),
                };
                if !go {
                    return;
                }
                committed.store(true, Ordering::Release);
                None
            }
            Ok((initialized, commit)) => Some(InitializeFirst {
                initialized,
                commit,
                committed,
            }),
        };
        TurnLoop::new(object.clone(), instance, host)
            .run(commit)
            .await;
    });
    live
}
