//! Location Store wrappers for tests.

mod faulty;

pub use faulty::FaultyLocationStore;
