//! Channels: handler groups that serve a ChannelName, and the inbound route that hands
//! channel calls to their handlers; ClientServer and fanout roles. (Which role a node plays
//! for a ChannelName, and its weight, is the mesh core's channel registry.)

use std::collections::BTreeMap;
use std::sync::Arc;

pub mod client_server;
pub mod fanout;
mod route;

pub(crate) use route::ChannelRoute;

use crate::handler::HandlerGroup;

/// Registers the channel route on `node` for channel sends and requests, with the
/// handler group of every channel it serves.
pub(crate) fn register_routes(
    node: &crate::mesh::MeshNode,
    servers: &BTreeMap<String, Arc<dyn HandlerGroup>>,
    handle: crate::handle::WeakHandle,
) -> crate::Result<()> {
    let route = Arc::new(ChannelRoute::new(servers, handle));
    node.dispatcher()
        .register(crate::wire::Command::ChannelSend, route.clone())?;
    node.dispatcher()
        .register(crate::wire::Command::ChannelRequest, route)
}
