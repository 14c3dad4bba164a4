//! Handlers: what application code implements to receive messages, and what it sees of
//! each one ([`HandlerContext`]). Channel servers, node-direct handlers and fanout
//! subscribers all take a [`HandlerGroup`]. A handler calls further through its context's
//! [`Handle`](crate::Handle).

mod closures;
mod context;
mod group;
mod node_direct;
mod table;

pub use closures::Handlers;
pub(crate) use context::CallFacts;
pub use context::HandlerContext;
pub use group::{BoxFuture, DefaultChannel, HandlerGroup, PacketKind};
pub(crate) use node_direct::NodeDirectRoute;
pub(crate) use table::HandlerTable;
