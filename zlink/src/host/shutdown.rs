//! How a runtime stops: the options a caller picks and the outcome it hears (reference
//! §7.5: `Stopped`, or `ForceStopped` with `DeadlineExceeded` or `TeardownFailed`).

use std::time::Duration;

/// How [`Runtime::shutdown_with`](crate::Runtime::shutdown_with) stops the node.
///
/// The default releases what the node owns: its Spots and Actors run
/// `on_closing(HostShutdown)` and their IDs read Missing, so the next `get_or_create` or
/// Instance intent call makes a new incarnation wherever placement puts it. With
/// [`relocate_first`](Self::relocate_first) the node first moves its objects live to the
/// other serving nodes (the rolling-restart path) and releases only what could not move.
#[derive(Debug, Clone, Default)]
pub struct ShutdownOptions {
    pub(crate) grace: Option<Duration>,
    pub(crate) relocate_first: bool,
}

impl ShutdownOptions {
    /// The defaults: release, with the builder's `shutdown_grace`.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long accepted work may finish (and, with `relocate_first`, how long the moves
    /// may take before the rest is released). Replaces the builder's `shutdown_grace`.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = Some(grace);
        self
    }

    /// Moves every movable object to other serving nodes first, live, with its state
    /// and bound sessions, as [`Runtime::relocate_all`](crate::Runtime::relocate_all)
    /// does; then stops, releasing what stayed.
    pub fn relocate_first(mut self) -> Self {
        self.relocate_first = true;
        self
    }
}

/// How a shutdown ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShutdownOutcome {
    /// Everything finished in time and everything the node owned was given back.
    Stopped,
    /// The node stopped, but not cleanly, for this reason.
    ForceStopped(ShutdownReason),
}

impl ShutdownOutcome {
    /// Whether the node stopped cleanly.
    pub fn is_clean(&self) -> bool {
        matches!(self, ShutdownOutcome::Stopped)
    }
}

/// Why a shutdown was forced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShutdownReason {
    /// Accepted work was still running when the grace ended; it was cut off.
    DeadlineExceeded,
    /// Something the node held could not be given back: the Location Store did not take
    /// an authority's release in time (the log names each one), or the node had crashed
    /// (a test's `crash`). Those IDs stay `Unavailable` until reclaimed (see
    /// `objects().reclaim`).
    TeardownFailed,
}

impl std::fmt::Display for ShutdownOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShutdownOutcome::Stopped => f.write_str("stopped"),
            ShutdownOutcome::ForceStopped(ShutdownReason::DeadlineExceeded) => {
                f.write_str("force-stopped: the grace ended with work still running")
            }
            ShutdownOutcome::ForceStopped(ShutdownReason::TeardownFailed) => {
                f.write_str("force-stopped: something the node held was not given back")
            }
        }
    }
}
