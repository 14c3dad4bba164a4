//! Live relocation: a planned move of a running object to another node, losing nothing
//! (seed 000 §2.5, §3.3; seed 002 §5).
//!
//! The flow of one unit (an Entry-Spot Actor here), source S to target T, over the one
//! ordered connection between them:
//!
//! 1. **Seal** at a turn boundary: what arrives from now on waits in S's ingress hold.
//! 2. **Capture** the queued work, the timers and (`preserve`) the state.
//! 3. **Restore** (command 31): T checks it serves the type, takes a capacity slot,
//!    builds the instance (factory, then the adapter's restore) and registers it under
//!    the fence it will own it with, not dispatching yet: its mailbox is the temporary
//!    queue. T answers **relay-ready**. A failure before that answer cancels the move:
//!    S puts its queue back and runs on.
//! 4. From relay-ready on there is no way back. S relays the saved queue, then the hold,
//!    then whatever still arrives, in order; then the **cutover** (command 32).
//! 5. T commits on the cutover, or 1000 ms after relay-ready: one CAS at S's exact
//!    StoreVersion, NewOwner with AOG + 1, the ObjectGeneration kept. Only then does its
//!    turn loop start, with the queue already in order and the timers re-armed.
//! 6. S keeps the committed source → target route for MessageFollowDuration and relays
//!    what still arrives on the old route ([`departure`]); a notice (command 50) tells
//!    each sender once, so its next call resolves the new owner.
//!
//! A relay-ready that S never heard may still be T's: S re-fences the authority before
//! it runs on ([`ownership`]). A SpotWide Spot moves with its members as one unit
//! ([`aggregate`], [`aggregate_arrival`]): one restore for all, one hand-over each, and
//! dispatch on T for none before all of them committed.

mod aggregate;
mod aggregate_arrival;
mod arrival;
mod drain;
mod inbound;
mod join;
mod moving;
mod ownership;
mod permits;
mod placed_state;
mod record;
mod relocations;
pub(crate) mod seal;
mod source;

use std::time::Duration;

pub use super::bound_routes::{BoundFuture, BoundMove};
pub use super::bound_routes::{BoundRoutes, MAX_BOUND_ROUTES_BYTES};
pub(crate) use super::follow::{Departure, Departures};
pub(crate) use super::relocation_faults::RelocationFaults;
pub(crate) use super::relocation_state::MAX_CAPTURED_STATE_BYTES;
pub(crate) use arrival::Arrivals;
pub(crate) use drain::relocate_all;
pub use drain::{BlockedObject, BlockedReason, RelocationReport};
pub(crate) use inbound::register_routes;
pub(crate) use join::join_across;
pub(crate) use moving::{Moving, WeakMoving};
pub(crate) use permits::RelocationPermits;
pub(crate) use relocations::Relocations;
pub(crate) use source::relocate;

pub(crate) use super::follow::job_to_held;
/// A captured state up to this size travels inside the restore; a larger one through the
/// Relocation Store.
pub(crate) const INLINE_STATE_BYTES: usize = 1024 * 1024;
/// The target commits this long after relay-ready if no cutover came.
pub(crate) const CUTOVER_FALLBACK: Duration = Duration::from_millis(1000);
/// The longest one move may take, seal to commit.
pub(crate) const RELOCATION_DEADLINE: Duration = Duration::from_secs(30);
