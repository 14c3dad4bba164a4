//! Outbound call support: per-call options and the pending-request table (the call paths
//! themselves live in `mesh::outbound`).

use std::future::Future;
use std::pin::Pin;

mod options;
mod packet_kind;
mod pending;

pub use options::CallOptions;
pub use packet_kind::PacketKind;
/// A boxed, sendable future: what [`HandlerGroup::handle`](crate::HandlerGroup::handle)
/// returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub(crate) use pending::{PendingGuard, PendingTable, CONNECTION_LOST};
