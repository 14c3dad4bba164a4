//! The lifecycle seam: every subsystem a runtime starts next to its node (ClientServer
//! roles, fanout roles, objects and sessions) drains and stops through this trait, in the
//! order `host` owns (the reverse of the start order), and says how its teardown went.

use std::time::Duration;

use async_trait::async_trait;

/// How one subsystem's stop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Teardown {
    /// Everything it held was given back.
    Clean,
    /// Something it held could not be given back (the reason, for the log).
    Failed(String),
}

/// How a subsystem's drain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drained {
    /// All the work it had accepted finished.
    Finished,
    /// The grace ended with accepted work still running (it is stopped with the node).
    GraceEnded,
}

/// One subsystem of a running node.
#[async_trait]
pub(crate) trait Subsystem: Send + Sync + 'static {
    /// What it is, for logs.
    fn name(&self) -> &'static str;

    /// Stops taking new work and lets accepted work finish, for at most `grace`.
    async fn drain(&self, grace: Duration) -> Drained;

    /// Ends everything it runs; returns once its tasks have ended. `crashed` ends it as a
    /// killed process would (nothing withdrawn from the store).
    async fn stop(&self, crashed: bool) -> Teardown;
}
