//! Channels: handler groups that serve a ChannelName, and the per-process channel registry
//! (one ChannelName, one send path).

pub mod client_server;
mod context;
pub mod fanout;
mod handler;
mod handlers;
mod registry;

pub use context::HandlerContext;
pub use handler::{BoxFuture, DefaultChannel, HandlerGroup, PacketKind};
pub use handlers::Handlers;
pub use registry::{ChannelRegistry, ChannelRole};
