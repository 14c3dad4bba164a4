//! Actor membership (digest §4.2–4.5), as values: how a Spot runs its members
//! ([`Execution`]), what its `on_actor_join` decides ([`JoinDecision`]), how a Join ends
//! for the Actor ([`JoinOutcome`]), the Join a handler registers and the membership
//! callbacks a Spot hears. The `joining` module runs the Joins.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;

use crate::address::{ActorRef, SpotId};
use crate::sync::LockUnpoisoned;
use crate::{Error, ErrorKind};

/// How long a Join may take, from the end of the handler that registered it.
pub(crate) const JOIN_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest Join request.
pub(crate) const MAX_JOIN_REQUEST: usize = 1024 * 1024;

/// How a User Spot runs its own turns and its member Actors' (fixed per Spot type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Execution {
    /// One gate for the Spot, its member Actors and all their timers: one turn at a time
    /// among them all (the default).
    #[default]
    SpotWide,
    /// One lane per member Actor plus the Spot's own: different lanes run concurrently,
    /// each one turn at a time. The Spot is a stateless shell, recreated on relocation.
    PerActor,
}

/// What a Spot's `on_actor_join` decides about an Actor joining it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinDecision {
    /// The Actor joins; it gets this reply in its [`JoinOutcome::Accepted`].
    Accept(Bytes),
    /// The Actor stays where it is; it gets this reply in its [`JoinOutcome::Rejected`].
    Reject(Bytes),
}

/// How a Join ended, as the Actor hears it in
/// [`Actor::on_join_completed`](super::Actor::on_join_completed).
#[derive(Debug, Clone)]
pub enum JoinOutcome {
    /// The Actor is now a member of `spot`; `reply` is the Spot's (empty for an Entry
    /// Spot, or when the Actor was a member already).
    Accepted {
        /// The Spot the Actor belongs to now.
        spot: SpotId,
        /// What `on_actor_join` replied.
        reply: Bytes,
    },
    /// The Spot declined; the Actor stays where it was.
    Rejected {
        /// What `on_actor_join` replied.
        reply: Bytes,
    },
    /// The Join did not happen, for this reason (`NotFound`: no such Spot; `Unavailable`:
    /// the Spot is on another node, closing, or the Actor's authority moved;
    /// `InvalidOperation`: the Spot does not take Actors of this type; `DeadlineExceeded`).
    /// The Actor stays where it was.
    Failed(Error),
}

/// A Join registered by a handler, run when the handler ends.
#[derive(Debug)]
pub(crate) struct JoinRequest {
    pub(crate) spot: SpotId,
    pub(crate) request: Bytes,
}

/// The Join a handler registered, if any: at most one per handler.
#[derive(Debug, Default)]
pub(crate) struct JoinSlot {
    join: Mutex<Option<JoinRequest>>,
    /// Whether `join` holds one: the end of every turn reads this, not the lock.
    registered: AtomicBool,
}

impl JoinSlot {
    pub(crate) fn register(&self, join: JoinRequest) -> crate::Result<()> {
        if join.request.len() > MAX_JOIN_REQUEST {
            return Err(Error::InvalidArgument(format!(
                "a Join request is at most {MAX_JOIN_REQUEST} bytes, got {}",
                join.request.len()
            )));
        }
        let mut slot = self.join.lock_unpoisoned();
        if slot.is_some() {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                "this handler registered a Join already",
            ));
        }
        *slot = Some(join);
        self.registered.store(true, Ordering::Release);
        Ok(())
    }

    /// Whether the turn's handler registered a Join (without taking it).
    pub(crate) fn is_registered(&self) -> bool {
        self.registered.load(Ordering::Acquire)
    }

    /// The Join the turn's handler registered, if any.
    pub(crate) fn take(&self) -> Option<JoinRequest> {
        if !self.registered.swap(false, Ordering::AcqRel) {
            return None;
        }
        self.join.lock_unpoisoned().take()
    }
}

/// Where a Join goes from here.
pub(crate) enum JoinStep {
    /// Ended on this node.
    Done(JoinOutcome),
    /// The Spot runs on node `rid`: the Join moves the Actor there.
    Across {
        spot: SpotId,
        request: Bytes,
        rid: String,
    },
}

/// A membership callback for a Spot, run on its lifecycle lane.
pub(crate) enum MemberEvent {
    /// A new Actor's initial membership (Entry Spots only).
    Created {
        actor: ActorRef,
    },
    Join {
        actor: ActorRef,
        request: Bytes,
    },
    Joined {
        actor: ActorRef,
    },
    Left {
        actor: ActorRef,
    },
    /// The session bound to the Actor disconnected (once per binding).
    Disconnected {
        actor: ActorRef,
    },
}
