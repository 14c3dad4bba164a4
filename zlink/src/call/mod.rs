//! Outbound call support: per-call options and the pending-request table (the call paths
//! themselves live in `mesh::outbound`).

mod options;
mod pending;

pub use options::CallOptions;
pub(crate) use pending::{PendingGuard, PendingTable, CONNECTION_LOST};
