//! The host runtime: start, calls, status and shutdown.

mod channels;
mod runtime;
mod shutdown;

pub use channels::Channels;
pub use runtime::Runtime;
