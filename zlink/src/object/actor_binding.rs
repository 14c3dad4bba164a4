//! An Actor's current session binding, on the Actor's owner.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::address::ObjectKey;
use crate::object::owner_link::{Destination, FarEnd};
use crate::sync::LockUnpoisoned;
use crate::wire::SessionTail;
use crate::{Error, ErrorKind};

/// One physical session, named so no other session in the mesh has its name: the session
/// owner's RID and lifecycle generation, and the session's number there.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct SessionKey {
    pub(crate) rid: String,
    pub(crate) node_generation: u64,
    pub(crate) session: u64,
}

impl SessionKey {
    /// This session's owner, in the lifecycle the session lives in.
    pub(crate) fn owner(&self) -> Destination<'_> {
        Destination::new(
            &self.rid,
            self.node_generation,
            FarEnd::SessionOwner(&self.rid),
        )
    }
}

/// The binding an Actor has now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CurrentBinding {
    pub(crate) generation: u64,
    pub(crate) session: SessionKey,
}

/// An Actor's binding to at most one session, and the generations it issued.
#[derive(Debug, Default)]
pub(crate) struct ActorBindings {
    current: Mutex<Option<CurrentBinding>>,
    issued: AtomicU64,
}

impl ActorBindings {
    /// Binds the Actor to `session`: the binding's generation, and the binding of another
    /// session it retired. The same session binding again keeps its generation (a
    /// repeated bind is not a new binding, and retires nothing).
    pub(crate) fn bind(&self, session: SessionKey) -> (u64, Option<CurrentBinding>) {
        let mut current = self.current.lock_unpoisoned();
        if let Some(existing) = current.as_ref().filter(|c| c.session == session) {
            return (existing.generation, None);
        }
        let generation = self.issued.fetch_add(1, Ordering::Relaxed) + 1;
        let retired = current.replace(CurrentBinding {
            generation,
            session,
        });
        (generation, retired)
    }

    /// Ends the binding `generation` of `session`, if it is the current one: `true` once,
    /// so its disconnect is told at most once.
    pub(crate) fn disconnect(&self, session: &SessionKey, generation: u64) -> bool {
        let mut current = self.current.lock_unpoisoned();
        let exact = current
            .as_ref()
            .is_some_and(|c| c.generation == generation && &c.session == session);
        if exact {
            *current = None;
        }
        exact
    }

    /// Whether a message relayed under `tail` comes from the current binding.
    pub(crate) fn admits(&self, tail: &SessionTail) -> bool {
        self.current
            .lock_unpoisoned()
            .as_ref()
            .is_some_and(|c| c.generation == tail.binding_generation)
    }

    /// What a move carries: the current binding and the generations issued.
    pub(crate) fn carry(&self) -> Option<(CurrentBinding, u64)> {
        let current = self.current.lock_unpoisoned().clone()?;
        Some((current, self.issued.load(Ordering::Relaxed)))
    }

    /// On the target of a move: the binding the Actor had on its source.
    pub(crate) fn restore(&self, binding: CurrentBinding, issued: u64) {
        self.issued.fetch_max(issued, Ordering::Relaxed);
        *self.current.lock_unpoisoned() = Some(binding);
    }

    /// The current binding, if any.
    pub(crate) fn current(&self) -> Option<CurrentBinding> {
        self.current.lock_unpoisoned().clone()
    }
}

/// What a relay under a binding that is no longer the Actor's current one gets.
pub(crate) fn retired(key: &ObjectKey) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("the session's binding to {key} is not current (rebound, or the Actor was re-created): bind again"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(n: u64) -> SessionKey {
        SessionKey {
            rid: "gw".into(),
            node_generation: 1,
            session: n,
        }
    }

    #[test]
    fn a_new_session_gets_a_new_generation_and_retires_the_old_one() {
        let bindings = ActorBindings::default();
        let (first, retired) = bindings.bind(session(1));
        assert!(retired.is_none());
        assert_eq!(
            bindings.bind(session(1)),
            (first, None),
            "the same session again: same binding"
        );
        let (second, retired) = bindings.bind(session(2));
        assert!(second > first);
        assert_eq!(
            retired.map(|r| (r.generation, r.session)),
            Some((first, session(1)))
        );
        let tail = |generation| SessionTail {
            binding_generation: generation,
            session_seq: 1,
        };
        assert!(bindings.admits(&tail(second)));
        assert!(
            !bindings.admits(&tail(first)),
            "the retired binding's relays are refused"
        );
        assert_eq!(bindings.current().map(|c| c.session), Some(session(2)));
    }
}
