//! The host runtime: start, calls, status and shutdown.

mod channels;
mod discovery;
mod fanout;
mod lifecycle;
mod runtime;
mod spots;
mod status;

pub use channels::Channels;
pub use discovery::DiscoveryHandle;
pub use fanout::FanoutHandle;
pub use runtime::Runtime;
pub use spots::Spots;
pub use status::{ClientServerStatus, FanoutStatus, RuntimeStatus, StoreStatus};
