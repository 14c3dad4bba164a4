//! The host runtime: the builder that composes every subsystem's settings, start, calls,
//! status and shutdown.

mod actors;
mod channels;
pub(crate) mod config;
mod discovery;
mod fanout;
mod lifecycle;
mod objects;
mod runtime;
mod spots;
mod status;

pub use actors::Actors;
pub use channels::Channels;
pub use discovery::DiscoveryHandle;
pub use fanout::FanoutHandle;
pub use runtime::Runtime;
pub use spots::Spots;
pub use status::{ClientServerStatus, FanoutStatus, RuntimeStatus, StoreStatus};
