//! How a Spot's or Actor's turn loop begins: after its owner change commits, or (a new
//! object) with `on_initialize` before its Ready commit.

use tokio::sync::oneshot;

use crate::Error;

/// How a loop begins (see `launch::Go`).
pub(super) enum Begin {
    /// An object that arrived by a move (or the Entry Spot) runs once its owner change
    /// commits: `true`, or `false` (or dropped) when it did not, and then nothing runs.
    AfterCommit(oneshot::Receiver<bool>),
    /// A created object (reference §2.5–2.6): `on_initialize` runs before its Ready
    /// commit, which the loop then waits for.
    InitializeFirst(InitializeFirst),
}

/// A created object's start: `on_initialize`, then the wait for its commit.
pub(super) struct InitializeFirst {
    /// Told once `on_initialize` ended (whatever it returned).
    pub(super) initialized: oneshot::Sender<Result<(), Error>>,
    /// `true` once the creation committed; `false` (or dropped) when it did not.
    pub(super) commit: oneshot::Receiver<bool>,
}
