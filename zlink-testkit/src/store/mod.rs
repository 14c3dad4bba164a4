//! Location Store providers for tests and embedded use.

mod faulty;
mod memory;

pub use faulty::FaultyLocationStore;
pub use memory::MemoryLocationStore;
