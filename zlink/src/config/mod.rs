//! Configuration: the runtime builder, its validation (every violation reported at once,
//! before any socket is bound) and the validated settings.

mod builder;
mod security;
mod settings;
mod validate;

pub use builder::{
    RuntimeBuilder, RuntimeConfig, DEFAULT_DISCOVERY_INTERVAL, DEFAULT_STORE_FAILURE_GRACE,
};
pub(crate) use security::SecuritySettings;
pub use settings::PeerSpec;
pub(crate) use settings::{ClientServerRole, DiscoverySettings, Settings, Topology};

/// Largest channel weight.
pub const MAX_WEIGHT: u32 = 10_000;
/// Weight of a server channel registered without one.
pub const DEFAULT_WEIGHT: u32 = 100;
