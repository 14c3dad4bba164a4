//! Configuration: the runtime builder, its validation (every violation reported at once,
//! before any socket is bound), and the composed settings it hands each subsystem.

mod builder;
mod settings;
mod validate;

pub use builder::{
    RuntimeBuilder, RuntimeConfig, DEFAULT_DISCOVERY_INTERVAL, DEFAULT_STORE_FAILURE_GRACE,
};
pub(crate) use settings::Settings;
