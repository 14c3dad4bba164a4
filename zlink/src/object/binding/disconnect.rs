//! A bound session's end (seed 000 §3.2, reference §6.5): the session owner sends it over
//! the stored route (command 38's disconnect form), the Actor's owner ends the binding
//! once, and the Actor's current Spot hears it (`on_disconnect_actor`) at most once per
//! binding: on this node, or with one one-way (command 52) on the node the Spot runs on
//! while the Actor is not with it (a PerActor Spot's member that did not follow its
//! shell).

use std::sync::Weak;

use tokio::time::Instant;

use super::record::{BindRecord, MemberDisconnectedRecord, MAX_MEMBER_DISCONNECTED_BYTES};
use super::relay::{check_binding_route, BindingRoute};
use super::Bindings;
use crate::address::{ActorId, ActorRef, ObjectKey, SpotId};
use crate::mesh::{InboundCall, InboundRoute};
use crate::object::actor_binding::SessionKey;
use crate::object::direct::route_of;
use crate::object::owner_link::{Awaiting, Destination, FarEnd, ObjectCommand};
use crate::wire::{cbor_decode_bounded, cbor_encode, Command};
use crate::{Error, ErrorKind, Result};

/// Ends `session`'s binding `generation` of the Actor `key`, if it is still the Actor's:
/// the Actor's Spot hears it once (`on_disconnect_actor`). A binding already replaced or
/// ended, or an Actor gone, is nothing to do.
pub(crate) fn disconnect_here(
    bindings: &Bindings,
    key: &ObjectKey,
    session: &SessionKey,
    generation: u64,
) {
    let Some(live) = bindings.core.registry.get(key) else {
        return;
    };
    if !live.bindings().disconnect(session, generation) {
        return;
    }
    let Some(spot) = live.membership() else {
        return;
    };
    let Ok(id) = ActorId::new(&key.id) else {
        return;
    };
    let actor = ActorRef::at(id, live.authority().location());
    match bindings.core.registry.get(&ObjectKey::from(&spot)) {
        Some(spot) => {
            crate::object::joining::notify_disconnected(&spot, actor);
        }
        None => tell_spot_elsewhere(bindings, spot, actor),
    }
}

/// Ends `session`'s binding `route` at the Actor's owner, which tells the Actor's Spot
/// once. Sent over the stored route, like a relay.
pub(crate) async fn disconnect_session(
    bindings: &Bindings,
    route: &BindingRoute,
    session: u64,
    deadline: Instant,
) -> Result<()> {
    let here = bindings.core.env.route();
    let key = SessionKey {
        rid: here.rid.clone(),
        node_generation: here.node_generation,
        session,
    };
    check_binding_route(bindings, route)?;
    if route.owner.rid == here.rid {
        disconnect_here(bindings, &route.key, &key, route.binding_generation);
        return Ok(());
    }
    let record = BindRecord {
        actor_generation: route.fence.object_generation,
        node_generation: route.owner.node_generation,
        session: key,
        disconnect: Some(route.binding_generation),
    };
    let out = bindings.core.env.owner_link();
    let admit_by = deadline.min(Instant::now() + out.node()?.settings().send_timeout);
    let command = ObjectCommand::control(
        Command::BoundSessionBind,
        &route.key.id,
        cbor_encode(&record)?,
    );
    let awaiting = Awaiting::Reply(deadline);
    out.deliver(route.owner(), &command, awaiting, admit_by)
        .await
        .map(|_| ())
}

/// Tells `spot`, which runs on another node, that `actor`'s session ended: one
/// one-way, in the background, to where the Spot's route says it runs. The binding
/// ended here already, so it is never sent twice; a Spot that moved on meanwhile, or
/// an unreachable node, loses the notice (logged), as any one-way.
fn tell_spot_elsewhere(bindings: &Bindings, spot: SpotId, actor: ActorRef) {
    let core = bindings.core.clone();
    bindings.core.env.tracker().spawn(async move {
        let id = actor.id.clone();
        let sent = async {
            let out = core.env.owner_link();
            let admit_by = Instant::now() + out.node()?.settings().send_timeout;
            let key = ObjectKey::from(&spot);
            let spot = spot.as_str();
            let route = route_of(&core, &key, admit_by).await?;
            if route.owner.rid == core.env.route().rid {
                // The Spot arrived here meanwhile.
                return match core.registry.get(&key) {
                    Some(live) => {
                        crate::object::joining::notify_disconnected(&live, actor);
                        Ok(())
                    }
                    None => Err(Error::new(
                        ErrorKind::Unavailable,
                        format!("Spot {spot} is not running here"),
                    )),
                };
            }
            let record = MemberDisconnectedRecord {
                actor: actor.id.to_string(),
                object_generation: actor.generation,
                mesh_name: actor.mesh_name.clone(),
                rid: actor.rid.clone(),
            };
            let command = ObjectCommand::control(
                Command::SpotMemberDisconnected,
                spot,
                cbor_encode(&record)?,
            );
            let to = Destination::new(
                &route.owner.rid,
                route.owner.node_generation,
                FarEnd::Owner(&key),
            );
            out.deliver(to, &command, Awaiting::Nothing, admit_by)
                .await
                .map(|_| ())
        };
        if let Err(e) = sent.await {
            tracing::debug!(actor = %id, error = %e, "the disconnected Actor's Spot on another node was not told");
        }
    });
}

/// The inbound route of command 52: the Spot named runs here and hears the disconnect.
pub(crate) struct MemberDisconnectedRoute(pub(crate) Weak<Bindings>);

impl InboundRoute for MemberDisconnectedRoute {
    fn deliver(&self, call: InboundCall) {
        let Some(bindings) = self.0.upgrade() else {
            return;
        };
        let message = call.message();
        let decoded = (|| {
            let spot = SpotId::new(message.head.target.as_str())
                .map_err(|e| Error::new(ErrorKind::ProtocolError, e.to_string()))?;
            if message.payload.len() > MAX_MEMBER_DISCONNECTED_BYTES {
                return Err(Error::new(
                    ErrorKind::ProtocolError,
                    "member-disconnected record too large",
                ));
            }
            let record: MemberDisconnectedRecord =
                cbor_decode_bounded(&message.payload).map_err(|e| {
                    Error::new(
                        ErrorKind::ProtocolError,
                        format!("member-disconnected record: {e}"),
                    )
                })?;
            let id = ActorId::new(&record.actor)
                .map_err(|e| Error::new(ErrorKind::ProtocolError, e.to_string()))?;
            let actor = ActorRef {
                id,
                generation: record.object_generation,
                mesh_name: record.mesh_name,
                rid: record.rid,
            };
            Ok((spot, actor))
        })();
        match decoded {
            Ok((spot, actor)) => match bindings.core.registry.get(&ObjectKey::from(&spot)) {
                Some(live) => {
                    crate::object::joining::notify_disconnected(&live, actor);
                }
                None => {
                    tracing::debug!(%spot, actor = %actor.id, "a member's disconnect for a Spot this node does not run: dropped");
                }
            },
            Err(e) => {
                tracing::warn!(from = %call.from().rid(), error = %e, "a malformed member-disconnected record: dropped");
            }
        }
    }
}
