//! Channels: handler groups that serve a ChannelName, the per-process channel registry
//! (one ChannelName, one send path), and the inbound route that hands channel calls to
//! their handlers.

pub mod client_server;
pub mod fanout;
mod registry;
mod route;

pub use registry::{ChannelRegistry, ChannelRole};
pub(crate) use route::ChannelRoute;

/// Registers the channel route on `node` for channel sends and requests.
pub(crate) fn register_routes(node: &crate::mesh::MeshNode) -> crate::Result<()> {
    let route = std::sync::Arc::new(ChannelRoute::new(node.registry().clone()));
    node.dispatcher()
        .register(crate::wire::Command::ChannelSend, route.clone())?;
    node.dispatcher()
        .register(crate::wire::Command::ChannelRequest, route)
}
