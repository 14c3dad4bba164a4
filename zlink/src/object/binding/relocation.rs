//! A bound Actor's move, as its binding sees it (seed 000 §3.3): the `BoundRoutes` seam
//! of the relocation made real. Before the capture the source seals the binding at the
//! session owner (command 42, answered); on a cancel before relay-ready it releases it
//! (44 abort, one-way); as the target opens its dispatch, it sends the new route
//! (44 commit, one-way, never resent). The binding itself travels with the Actor.

use std::sync::{Arc, Weak};

use tokio::time::Instant;

use super::record::{CarriedBinding, RelocationRecord, TargetRoute};
use super::Bindings;
use crate::address::{ActorId, ActorRef, ObjectKey};
use crate::object::actor_binding::CurrentBinding;
use crate::object::bound_routes::{BoundFuture, BoundMove, BoundRoutes};
use crate::object::owner_link::ObjectCommand;
use crate::wire::{cbor_decode_bounded, cbor_encode, Command};
use crate::{Error, ErrorKind, Result};

/// The object layer's own bound routes: the sessions bound to its Actors.
pub(crate) struct SessionBoundRoutes(pub(crate) Weak<Bindings>);

impl BoundRoutes for SessionBoundRoutes {
    fn seal(&self, moving: &BoundMove) -> BoundFuture {
        let bindings = self.0.upgrade();
        let moving = moving.clone();
        Box::pin(async move {
            match bindings {
                Some(bindings) => seal_binding(&bindings, &moving).await,
                None => Ok(Vec::new()),
            }
        })
    }

    fn release(&self, moving: &BoundMove) {
        if let Some(bindings) = self.0.upgrade() {
            tell_route(&bindings, moving, None, None);
        }
    }

    fn switch(&self, moved: &BoundMove, sealed: &[u8], _at: &ActorRef) {
        if let Some(bindings) = self.0.upgrade() {
            switch_binding(&bindings, moved, sealed);
        }
    }
}

/// On the source: seals the moving Actor's binding at its session owner; what the
/// binding carries to the target (nothing without a binding).
async fn seal_binding(bindings: &Bindings, moving: &BoundMove) -> Result<Vec<u8>> {
    let Some(live) = ActorId::new(&moving.actor)
        .ok()
        .and_then(|id| bindings.core.registry.get(&ObjectKey::from(&id)))
    else {
        return Ok(Vec::new());
    };
    let Some((binding, issued)) = live.bindings().carry() else {
        return Ok(Vec::new());
    };
    let record = relocation_record(moving, &binding, None);
    if binding.session.rid == bindings.core.env.route().rid {
        let sessions = bindings
            .sessions()
            .ok_or_else(|| Error::new(ErrorKind::Unavailable, "this node runs no sessions"))?;
        sessions.seal(record)?;
    } else {
        let out = bindings.core.env.owner_link();
        let node = out.node()?;
        let timeout = node.settings().send_timeout;
        let deadline = Instant::now() + timeout;
        // The route change of this Actor's last move (or cancelled move) goes first.
        bindings.notices.settled(&moving.actor, deadline).await;
        let link = out.peer(&binding.session.rid, deadline).await?;
        let command = ObjectCommand::control(
            Command::SessionRelocationSeal,
            &moving.actor,
            cbor_encode(&record)?,
        );
        out.request(&link, &command, deadline, deadline).await?;
    }
    let carried = CarriedBinding {
        generation: binding.generation,
        session: binding.session,
        issued,
    };
    Ok(cbor_encode(&carried)?.to_vec())
}

/// On the target, just before the Actor dispatches: restores its binding and sends the
/// session owner the new route.
fn switch_binding(bindings: &Bindings, moved: &BoundMove, sealed: &[u8]) {
    if sealed.is_empty() {
        return;
    }
    let Ok(carried) = cbor_decode_bounded::<CarriedBinding>(sealed) else {
        tracing::warn!(actor = %moved.actor, "a moved Actor's binding could not be read: its session keeps the old route");
        return;
    };
    let Some(live) = ActorId::new(&moved.actor)
        .ok()
        .and_then(|id| bindings.core.registry.get(&ObjectKey::from(&id)))
    else {
        return;
    };
    let binding = CurrentBinding {
        generation: carried.generation,
        session: carried.session,
    };
    live.bindings().restore(binding.clone(), carried.issued);
    let authority = live.authority();
    let here = bindings.core.env.route();
    let target = TargetRoute {
        mesh_name: here.mesh_name.clone(),
        rid: here.rid.clone(),
        node_generation: here.node_generation,
        owner_generation: authority.record.fence.owner_generation,
        lease_generation: authority.record.fence.lease_generation,
    };
    tell_route(bindings, moved, Some(binding), Some(target));
}

/// Sends 44: the route of `moved`'s binding (`None`: this node's Actor's current
/// one) moves to `target`, or with `None` stays (abort). One-way, not resent.
fn tell_route(
    bindings: &Bindings,
    moved: &BoundMove,
    binding: Option<CurrentBinding>,
    target: Option<TargetRoute>,
) {
    let binding = binding.or_else(|| {
        ActorId::new(&moved.actor)
            .ok()
            .and_then(|id| bindings.core.registry.get(&ObjectKey::from(&id)))
            .and_then(|live| live.bindings().current())
    });
    let Some(binding) = binding else { return };
    if target.is_some() && bindings.core.faults.drops_session_routes() {
        tracing::debug!(actor = %moved.actor, "a moved Actor's route dropped (test fault)");
        return;
    }
    let record = relocation_record(moved, &binding, target);
    if binding.session.rid == bindings.core.env.route().rid {
        if let Some(sessions) = bindings.sessions() {
            sessions.route(record);
        }
        return;
    }
    let out = bindings.core.env.owner_link().clone();
    let actor = moved.actor.clone();
    let in_flight = bindings.notices.begin(&actor);
    bindings.core.env.tracker().spawn(async move {
        let _in_flight = in_flight;
        let Ok(node) = out.node() else { return };
        let admit_by = Instant::now() + node.settings().send_timeout;
        let sent = async {
            let link = out.peer(&record.session.rid, admit_by).await?;
            let command = ObjectCommand::control(
                Command::SessionRelocationRoute,
                &actor,
                cbor_encode(&record)?,
            );
            out.send(&link, &command, admit_by).await
        };
        if let Err(e) = sent.await {
            tracing::warn!(%actor, error = %e, "a moved Actor's session owner was not told its route");
        }
    });
}

fn relocation_record(
    moving: &BoundMove,
    binding: &CurrentBinding,
    target: Option<TargetRoute>,
) -> RelocationRecord {
    RelocationRecord {
        relocation_id: moving.relocation_id.clone(),
        session: binding.session.clone(),
        actor: moving.actor.clone(),
        object_generation: moving.generation,
        binding_generation: binding.generation,
        target,
    }
}

/// The bound routes the object layer installs unless a test installed its own.
pub(crate) fn session_bound_routes(bindings: Weak<Bindings>) -> Arc<dyn BoundRoutes> {
    Arc::new(SessionBoundRoutes(bindings))
}
