//! The host runtime: the builder that composes every subsystem's settings, the start and
//! shutdown order, and [`Runtime`], the owner of a started node.

pub(crate) mod config;
mod controls;
mod health;
mod lifecycle;
mod operator;
mod runtime;
mod shutdown;
mod signal;
mod status;

pub use crate::object::creation::TypePlacement;
pub use controls::Controls;
pub use health::{Health, HealthCheck};
pub use operator::Operator;
pub use runtime::Runtime;
pub use shutdown::{ShutdownOptions, ShutdownOutcome, ShutdownReason};
pub use signal::{stop_signal, StopSignal};
pub use status::{ClientServerStatus, FanoutStatus, PlacementStatus, RuntimeStatus, StoreStatus};
