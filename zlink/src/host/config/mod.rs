//! Configuration: the runtime builder, its validation (every violation reported at once,
//! before any socket is bound), and the composed settings it hands each subsystem.

mod builder;
mod node_memory;
mod roles;
mod security;
mod settings;
#[cfg(feature = "test-faults")]
mod test_faults;
mod validate;

pub use builder::{RuntimeBuilder, DEFAULT_DISCOVERY_INTERVAL, DEFAULT_STORE_FAILURE_GRACE};
pub use settings::RuntimeConfig;
pub(crate) use settings::Settings;
#[cfg(feature = "test-faults")]
pub use test_faults::TestFaults;
