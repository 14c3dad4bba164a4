//! Test support for zlink.
//!
//! - [`MemNetwork`]: an in-memory [`Transport`](zlink::link::Transport) whose links can drop,
//!   delay or blackhole traffic in one direction, or lose a host entirely, for faults real
//!   sockets cannot produce on demand.
//! - [`wait_until`]: waits for a condition with a deadline instead of sleeping and hoping.
//! - [`init_tracing`]: test logging controlled by `RUST_LOG`.
#![warn(missing_docs)]

mod mem_network;
mod wait;

pub use mem_network::{LinkFault, MemNetwork, MemTransport};
pub use wait::{init_tracing, wait_until};
