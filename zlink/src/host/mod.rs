//! The host runtime: start, calls, status and shutdown.

mod runtime;
mod shutdown;

pub use runtime::Runtime;
