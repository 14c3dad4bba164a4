//! Creating on another node: the candidates that serve a type, and one attempt sent to the
//! placed one.

use bytes::Bytes;
use tokio::time::Instant;

use crate::address::Location;
use crate::address::Outcome;
use crate::address::{ObjectKey, ObjectKind};
use crate::object::core::ObjectCore;
use crate::object::env::ObjectEnv;
use crate::object::owner_link::ObjectCommand;
use crate::object::placement;
use crate::object::remote::{CreateReply, CreateRequest};
use crate::Result;

/// The nodes a new object of `stable_type` may be placed on, with their weights: those
/// serving the type (an Actor also needs the node's Entry Spot claimed).
pub(crate) fn candidates(
    server: &ObjectCore,
    kind: ObjectKind,
    stable_type: &str,
) -> Vec<placement::Candidate> {
    let mut candidates = Vec::new();
    let entry_ready = match kind {
        ObjectKind::Spot => true,
        ObjectKind::Actor => server.entry.as_ref().is_some_and(|e| e.ready().is_ok()),
    };
    if server.registry.serves(kind, stable_type)
        && entry_ready
        && !server.hosting.is_draining()
        && server.env.lease().admitting_token().is_some()
    {
        candidates.push(placement::Candidate {
            rid: server.env.route().rid.clone(),
            weight: server.placement_weight,
            local: true,
        });
    }
    let Some(node) = server.env.node() else {
        return candidates;
    };
    let members = node.discovery().map(|d| d.status().members);
    for member in members.unwrap_or_default() {
        if member.rid == server.env.route().rid
            || member.draining
            || !match kind {
                ObjectKind::Spot => &member.spot_types,
                ObjectKind::Actor => &member.actor_types,
            }
            .iter()
            .any(|t| t == stable_type)
            || node.peers().link(&member.rid).is_none()
        {
            continue;
        }
        candidates.push(placement::Candidate {
            rid: member.rid,
            weight: member.placement_weight,
            local: false,
        });
    }
    candidates
}

/// Asks node `rid` (chosen by placement) to create the object. `None` when another
/// attempt holds the ID: the caller reads the authority again.
pub(super) async fn create_remote(
    env: &ObjectEnv,
    rid: &str,
    key: &ObjectKey,
    stable_type: &str,
    request: &Bytes,
    must_be_new: bool,
    deadline: Instant,
) -> Result<Option<Outcome>> {
    let out = &env.owner_link();
    let admit_by = deadline.min(Instant::now() + out.node()?.settings().send_timeout);
    let link = out.peer(rid, admit_by).await?;
    let payload = CreateRequest {
        request: request.to_vec(),
        must_be_new,
    }
    .encode()?;
    let create = ObjectCommand::create(key, stable_type, payload);
    let reply = out.request(&link, &create, deadline, admit_by).await?;
    Ok(match CreateReply::decode(&reply)? {
        CreateReply::Created { generation, reply } => Some(Outcome::Created(
            Location {
                generation,
                mesh_name: env.route().mesh_name.clone(),
                rid: rid.to_string(),
            },
            Bytes::from(reply),
        )),
        CreateReply::Rejected { reply } => Some(Outcome::Rejected(Bytes::from(reply))),
        CreateReply::Lost => None,
    })
}
