//! Bind (command 38): the session owner sends it to the node its ActorRef names, with no
//! lookup first; the Actor's owner validates the incarnation, its own lifecycle, the
//! authority and its lease once, registers the binding, and replies once.

use std::sync::Weak;

use tokio::time::Instant;

use super::disconnect::disconnect_here;
use super::record::{BindRecord, BindReply, ReplacedRecord, MAX_BIND_RECORD_BYTES};
use super::relay::BindingRoute;
use super::Bindings;
use crate::address::{ActorId, ActorRef, ObjectKey};
use crate::mesh::{InboundCall, InboundRoute};
use crate::object::actor_binding::SessionKey;
use crate::object::authority::OwnerRoute;
use crate::object::owner_link::{route_fence, Awaiting, ObjectCommand};
use crate::wire::{cbor_decode_bounded, cbor_encode, Command, RouteFence};
use crate::{Error, ErrorKind, Result};

/// The inbound route of command 38.
pub(crate) struct BindRoute(pub(crate) Weak<Bindings>);

impl InboundRoute for BindRoute {
    fn deliver(&self, call: InboundCall) {
        let Some(bindings) = self.0.upgrade() else {
            return call.answer(Err(Error::new(
                ErrorKind::ShuttingDown,
                "the node is stopping",
            )));
        };
        let message = call.message();
        let parsed = ActorId::new(message.head.target.as_str())
            .map_err(|e| Error::new(ErrorKind::ProtocolError, e.to_string()))
            .and_then(|id| {
                if message.payload.len() > MAX_BIND_RECORD_BYTES {
                    return Err(Error::new(
                        ErrorKind::ProtocolError,
                        "bind record too large",
                    ));
                }
                let record: BindRecord = cbor_decode_bounded(&message.payload).map_err(|e| {
                    Error::new(ErrorKind::ProtocolError, format!("bind record: {e}"))
                })?;
                Ok((ObjectKey::from(&id), record))
            });
        let result = parsed.and_then(|(key, record)| {
            // The binding belongs to the session on the node that sent it, nobody else.
            if *record.session.rid != **call.from().rid() {
                return Err(Error::new(
                    ErrorKind::ProtocolError,
                    "a bind names a session of another node",
                ));
            }
            match record.disconnect {
                Some(generation) => {
                    disconnect_here(&bindings, &key, &record.session, generation);
                    Ok(bytes::Bytes::new())
                }
                None => bind_here(&bindings, &key, &record).and_then(|reply| cbor_encode(&reply)),
            }
        });
        call.answer(result);
    }
}

/// Binds the Actor `key` this node owns to `record`'s session, after checking it is the
/// incarnation, lifecycle and authority the session's ActorRef names.
pub(crate) fn bind_here(
    bindings: &Bindings,
    key: &ObjectKey,
    record: &BindRecord,
) -> Result<BindReply> {
    let route = bindings.core.env.route();
    if record.node_generation != 0 && record.node_generation != route.node_generation {
        return Err(Error::new(
            ErrorKind::Unavailable,
            format!("{key}'s owner restarted since the ActorRef was taken: take a current one"),
        ));
    }
    let live = bindings
        .core
        .registry
        .get(key)
        .ok_or_else(|| Error::new(ErrorKind::NotFound, format!("this node runs no {key}")))?;
    if live.generation() != record.actor_generation {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "{key} is incarnation {}, the ActorRef names {}: bind the current ActorRef",
                live.generation(),
                record.actor_generation
            ),
        ));
    }
    let authority = live.authority();
    let fence = route_fence(&authority.record.fence);
    let admitted = bindings
        .core
        .env
        .lease()
        .admitting_token()
        .is_some_and(|token| live.admits(&fence, &token));
    if !admitted {
        return Err(Error::new(
            ErrorKind::Unavailable,
            format!("this node does not own {key} now"),
        ));
    }
    if bindings.core.departures.get(key, &fence).is_some() {
        return Err(Error::new(
            ErrorKind::Unavailable,
            format!("{key} is moving: bind again once it arrived"),
        ));
    }
    let (binding_generation, retired) = live.bindings().bind(record.session.clone());
    if let Some(retired) = retired {
        tell_replaced(
            bindings,
            ReplacedRecord {
                session: retired.session,
                actor: key.id.to_string(),
                object_generation: fence.object_generation,
                binding_generation: retired.generation,
                owner_stopped: false,
            },
        );
    }
    Ok(BindReply {
        binding_generation,
        object_generation: fence.object_generation,
        owner_generation: fence.owner_generation,
        lease_generation: fence.lease_generation,
        mesh_name: route.mesh_name.clone(),
        rid: route.rid.clone(),
        node_generation: route.node_generation,
    })
}

/// Tells the session a bind retired that its binding moved (command 51, one-way, not
/// resent): from here, in the background, so the new bind does not wait for the old
/// session.
fn tell_replaced(bindings: &Bindings, replaced: ReplacedRecord) {
    if bindings.core.faults.drops_binding_replaced() {
        tracing::debug!(actor = %replaced.actor, "a retired binding's notice dropped (test fault)");
        return;
    }
    if replaced.session.rid == bindings.core.env.route().rid {
        if let Some(sessions) = bindings.sessions() {
            sessions.replaced(replaced);
        }
        return;
    }
    let out = bindings.core.env.owner_link().clone();
    bindings.core.env.tracker().spawn(async move {
        let Ok(node) = out.node() else { return };
        let admit_by = Instant::now() + node.settings().send_timeout;
        let sent = async {
            let command = ObjectCommand::control(
                Command::BoundSessionReplaced,
                &replaced.actor,
                cbor_encode(&replaced)?,
            );
            let to = replaced.session.owner();
            out.deliver(to, &command, Awaiting::Nothing, admit_by)
                .await
                .map(|_| ())
        };
        if let Err(e) = sent.await {
            tracing::debug!(actor = %replaced.actor, session_owner = %replaced.session.rid, error = %e, "the replaced binding's session was not told");
        }
    });
}

/// Binds `session` (of this node) to the Actor `actor` names, at the node it names:
/// the route every relay then takes.
pub(crate) async fn bind_session(
    bindings: &Bindings,
    actor: &ActorRef,
    session: u64,
    deadline: Instant,
) -> Result<BindingRoute> {
    let session_lease = bindings.core.env.admitting_token()?.generation;
    let key = ObjectKey::from(&actor.id);
    let here = bindings.core.env.route();
    let mut record = BindRecord {
        actor_generation: actor.generation,
        node_generation: 0,
        session: SessionKey {
            rid: here.rid.clone(),
            node_generation: here.node_generation,
            session,
        },
        disconnect: None,
    };
    let reply = if actor.rid == here.rid {
        bind_here(bindings, &key, &record)?
    } else {
        let out = bindings.core.env.owner_link();
        let node = out.node()?;
        let admit_by = deadline.min(Instant::now() + node.settings().send_timeout);
        let link = out.peer(&actor.rid, admit_by).await.map_err(|e| {
            Error::new(
                ErrorKind::Unavailable,
                format!("{}'s owner {} is not reachable: {e}", actor.id, actor.rid),
            )
        })?;
        record.node_generation = node
            .peers()
            .identity(&actor.rid)
            .map_or(0, |(_, generation)| generation);
        let command =
            ObjectCommand::control(Command::BoundSessionBind, &key.id, cbor_encode(&record)?);
        let bytes = out.request(&link, &command, deadline, admit_by).await?;
        cbor_decode_bounded::<BindReply>(&bytes)
            .map_err(|e| Error::new(ErrorKind::ProtocolError, format!("bind reply: {e}")))?
    };
    Ok(BindingRoute {
        actor: ActorRef {
            id: actor.id.clone(),
            generation: reply.object_generation,
            mesh_name: reply.mesh_name.clone(),
            rid: reply.rid.clone(),
        },
        key,
        owner: OwnerRoute {
            mesh_name: reply.mesh_name,
            rid: reply.rid,
            node_generation: reply.node_generation,
        },
        fence: RouteFence {
            object_generation: reply.object_generation,
            owner_generation: reply.owner_generation,
            lease_generation: reply.lease_generation,
        },
        binding_generation: reply.binding_generation,
        session_lease,
    })
}
