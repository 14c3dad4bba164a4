//! The seam for routes bound to an Actor that live outside it: STREAM sessions bound to
//! an Actor keep their route on the session owner's node, and a move switches that route
//! without the owner ever reading the Location Store (seed 000 §3.3). The object layer
//! tells whoever holds such routes, in order: the Actor is about to move (seal them:
//! commands 42/43), the move was cancelled before relay-ready (release them: command 44
//! abort), or the Actor runs on its new node and dispatches (switch them: command 44
//! commit). What the seal returns travels with the Actor to the target, opaque, and is
//! handed to the switch there.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::address::ActorRef;
use crate::Result;

/// What a sealed Actor's bound routes carry to its target, at most.
pub const MAX_BOUND_ROUTES_BYTES: usize = 64 * 1024;

/// One move of one Actor, as the bound routes see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundMove {
    /// The Actor's ID.
    pub actor: String,
    /// Its ObjectGeneration: a switch applies only to bindings of this incarnation.
    pub generation: u64,
    /// Names the move on both nodes.
    pub relocation_id: String,
}

/// A future the object layer awaits.
pub type BoundFuture = Pin<Box<dyn Future<Output = Result<Vec<u8>>> + Send>>;

/// Whoever holds routes bound to Actors (the STREAM sessions subsystem).
pub trait BoundRoutes: Send + Sync + 'static {
    /// On the source, once the Actor is sealed and its queue captured, before the restore
    /// is sent: hold what the bound routes send to it from now on. The bytes returned
    /// (at most [`MAX_BOUND_ROUTES_BYTES`]) travel to the target with the Actor; an error
    /// cancels the move, and the Actor runs on where it is.
    fn seal(&self, moving: &BoundMove) -> BoundFuture;

    /// On the source: the sealed move was cancelled before relay-ready. The held
    /// messages go to the Actor where it still runs.
    fn release(&self, moving: &BoundMove);

    /// On the target, once the Actor dispatches there: the bound routes switch to
    /// `at`, with what the seal returned on the source.
    fn switch(&self, moved: &BoundMove, sealed: &[u8], at: &ActorRef);
}

/// The switch of an arrived Actor's bound routes, announced once it dispatches.
pub(crate) struct SwitchOnOpen {
    hooks: Arc<dyn BoundRoutes>,
    moved: BoundMove,
    carried: Vec<u8>,
    at: ActorRef,
}

impl SwitchOnOpen {
    /// For the Actor `at` that arrived by move `relocation_id` with `carried`, if
    /// anything holds routes bound to Actors here.
    pub(crate) fn of(
        hooks: Option<&Arc<dyn BoundRoutes>>,
        at: ActorRef,
        relocation_id: &str,
        carried: &[u8],
    ) -> Option<Self> {
        Some(SwitchOnOpen {
            hooks: hooks?.clone(),
            moved: BoundMove {
                actor: at.id.to_string(),
                generation: at.generation,
                relocation_id: relocation_id.to_string(),
            },
            carried: carried.to_vec(),
            at,
        })
    }

    pub(crate) fn announce(self) {
        self.hooks.switch(&self.moved, &self.carried, &self.at);
    }
}

/// A seal of bound routes taken for one move: released when dropped before the move
/// handed the Actor over.
pub(crate) struct BoundSeal {
    hooks: Arc<dyn BoundRoutes>,
    moving: BoundMove,
    handed_over: bool,
}

impl BoundSeal {
    /// Seals `moving`'s bound routes, if anything holds any: what they carry to the target.
    pub(crate) async fn take(
        hooks: Option<&Arc<dyn BoundRoutes>>,
        moving: BoundMove,
    ) -> Result<(Option<BoundSeal>, Vec<u8>)> {
        let Some(hooks) = hooks else {
            return Ok((None, Vec::new()));
        };
        let sealed = hooks.seal(&moving).await?;
        if sealed.len() > MAX_BOUND_ROUTES_BYTES {
            hooks.release(&moving);
            return Err(crate::Error::new(
                crate::ErrorKind::CapacityExceeded,
                format!(
                    "the routes bound to Actor {} carry {} bytes (at most {MAX_BOUND_ROUTES_BYTES})",
                    moving.actor,
                    sealed.len()
                ),
            ));
        }
        let seal = BoundSeal {
            hooks: hooks.clone(),
            moving,
            handed_over: false,
        };
        Ok((Some(seal), sealed))
    }

    /// FollowRelay-ready: the routes stay sealed until the target switches them.
    pub(crate) fn handed_over(mut self) {
        self.handed_over = true;
    }
}

impl Drop for BoundSeal {
    fn drop(&mut self) {
        if !self.handed_over {
            self.hooks.release(&self.moving);
        }
    }
}
