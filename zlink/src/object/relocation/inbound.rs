//! The relocation commands a node receives: restore (31) and cutover (32) of an object
//! arriving here, the barrier (33) of a relay, and the follow notice (50) for a route this
//! node's cache may hold.

use std::sync::Arc;

use bytes::Bytes;

use super::arrival;
use super::record::{CutoverRecord, RestoreRecord};
use crate::address::{ActorId, ObjectKey, SpotId};
use crate::mesh::{InboundCall, InboundRoute, MeshNode};
use crate::object::follow::followed;
use crate::object::relocation::{Moving, WeakMoving};
use crate::wire::Command;
use crate::{Error, ErrorKind, Result};

struct RelocationRoute(WeakMoving);

/// Registers the relocation commands of `server` on `node`.
pub(crate) fn register_routes(node: &MeshNode, server: &Moving) -> Result<()> {
    let route: Arc<dyn InboundRoute> = Arc::new(RelocationRoute(server.downgrade()));
    for command in [
        Command::RelocationRestore,
        Command::RelocationCutover,
        Command::RelocationBarrier,
        Command::MessageFollow,
    ] {
        node.dispatcher().register(command, route.clone())?;
    }
    Ok(())
}

impl InboundRoute for RelocationRoute {
    fn deliver(&self, call: InboundCall) {
        let Some(server) = self.0.upgrade() else {
            return call.answer(Err(Error::new(
                ErrorKind::ShuttingDown,
                "the node is stopping",
            )));
        };
        match call.message().command {
            // Everything sent before it on this connection was admitted already: the
            // reader admits in order, and this answer leaves after it.
            Command::RelocationBarrier => call.answer(Ok(Bytes::new())),
            Command::MessageFollow => followed(&server.resolver, server.faults, call),
            Command::RelocationRestore => restore(server, call),
            _ => cutover(server, call),
        }
    }
}

fn protocol(detail: &str) -> Error {
    Error::new(ErrorKind::ProtocolError, detail.to_string())
}

/// The object a relocation command names: its ID, in the namespace the record says.
fn object_key(call: &InboundCall, kind: char) -> Result<ObjectKey> {
    let target = call.message().head.target.as_str();
    let key = match kind {
        's' => SpotId::new(target).map(|id| ObjectKey::from(&id)),
        _ => ActorId::new(target).map(|id| ObjectKey::from(&id)),
    };
    key.map_err(|e| protocol(&format!("a relocation command for a bad ID: {e}")))
}

fn restore(server: Moving, call: InboundCall) {
    let parsed = RestoreRecord::decode(&call.message().payload)
        .and_then(|record| Ok((object_key(&call, record.kind)?, record)));
    let (key, record) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return call.answer(Err(e)),
    };
    call.run(move |_message| {
        Box::pin(async move { arrival::arrive(&server, key, record).await?.encode() })
    });
}

fn cutover(server: Moving, call: InboundCall) {
    let parsed = CutoverRecord::decode(&call.message().payload)
        .and_then(|record| Ok((object_key(&call, record.kind)?, record)));
    let (key, record) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return call.answer(Err(e)),
    };
    call.run(move |_message| {
        Box::pin(async move {
            arrival::commit(&server, &key, &record.relocation_id).await?;
            Ok(Bytes::new())
        })
    });
}
