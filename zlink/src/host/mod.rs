//! The host runtime: start, calls, status and shutdown.

mod channels;
mod lifecycle;
mod runtime;

pub use channels::Channels;
pub use runtime::Runtime;
